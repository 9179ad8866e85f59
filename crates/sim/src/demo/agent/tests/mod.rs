//! Unit tests of the demo agent: a fake host drives `run_with` and checks what it writes.

mod full_script;
mod scripts;
mod stops;

use super::*;
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::Duration;

struct Host {
    tx: Option<Sender<String>>,
    rx: Receiver<String>,
    lines: Vec<Value>,
    handle: Option<JoinHandle<i32>>,
}

impl Host {
    fn start(args: &[&str], preload: &[Value]) -> Host {
        let (in_tx, in_rx) = mpsc::channel::<String>();
        let (out_tx, out_rx) = mpsc::channel::<String>();
        for l in preload {
            in_tx.send(l.to_string()).unwrap();
        }
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let handle = std::thread::spawn(move || {
            run_with(&args, true, in_rx, move |l| {
                let _ = out_tx.send(l);
            })
        });
        Host {
            tx: Some(in_tx),
            rx: out_rx,
            lines: Vec::new(),
            handle: Some(handle),
        }
    }

    fn send(&self, v: Value) {
        self.tx.as_ref().unwrap().send(v.to_string()).unwrap();
    }

    fn send_raw(&self, s: &str) {
        self.tx.as_ref().unwrap().send(s.to_string()).unwrap();
    }

    fn next(&mut self) -> Value {
        let line = self
            .rx
            .recv_timeout(Duration::from_secs(10))
            .expect("agent produced no line in time");
        assert!(!line.contains('\n'), "one line per message: {line}");
        let v: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("invalid JSON {e}: {line}"));
        self.lines.push(v.clone());
        v
    }

    fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let v = self.next();
            if pred(&v) {
                return v;
            }
        }
    }

    fn quiet(&mut self) -> bool {
        self.rx.recv_timeout(Duration::from_millis(200)).is_err()
    }

    fn close(mut self) -> (i32, Vec<Value>) {
        self.tx.take();
        let code = self.handle.take().unwrap().join().unwrap();
        while let Ok(l) = self.rx.try_recv() {
            self.lines.push(serde_json::from_str(&l).unwrap());
        }
        (code, self.lines)
    }
}

fn init_req(hooks: Value, kinds: Value) -> Value {
    json!({"type": "control_request", "request_id": "sb-init-1", "request": {
        "subtype": "initialize", "hooks": hooks, "supportedDialogKinds": kinds, "forwardSubagentText": true}})
}

fn user(text: &str) -> Value {
    json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}, "parent_tool_use_id": null, "session_id": "default"})
}

fn ok(id: &str, body: Value) -> Value {
    json!({"type": "control_response", "response": {"subtype": "success", "request_id": id, "response": body}})
}

fn is_result(v: &Value) -> bool {
    v["type"] == "result"
}

fn texts(lines: &[Value]) -> String {
    let mut s = String::new();
    for l in lines {
        if l["type"] == "assistant" {
            for b in l["message"]["content"].as_array().unwrap() {
                if let Some(t) = b["text"].as_str() {
                    s.push_str(t);
                    s.push('\n');
                }
            }
        }
    }
    s
}

fn tool_results(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "user")
        .flat_map(|l| {
            l["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|b| b["type"] == "tool_result")
        .collect()
}

const ARGS: &[&str] = &[
    "-p",
    "--verbose",
    "--output-format",
    "stream-json",
    "--input-format",
    "stream-json",
    "--include-partial-messages",
    "--permission-mode",
    "default",
    "--model",
    "claude-test",
];

fn common_checks(lines: &[Value]) {
    // Unique gate ids.
    let ids: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "control_request")
        .map(|l| l["request_id"].as_str().unwrap())
        .collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), unique.len(), "duplicate request ids");
    // Every tool_use gets exactly one tool_result.
    let mut uses = Vec::new();
    for l in lines.iter().filter(|l| l["type"] == "assistant") {
        for b in l["message"]["content"].as_array().unwrap() {
            if b["type"] == "tool_use" {
                uses.push(b["id"].as_str().unwrap().to_string());
            }
        }
    }
    let results: Vec<String> = tool_results(lines)
        .iter()
        .map(|b| b["tool_use_id"].as_str().unwrap().to_string())
        .collect();
    for u in &uses {
        assert_eq!(
            results.iter().filter(|r| *r == u).count(),
            1,
            "tool_use {u} needs one result"
        );
    }
    for l in lines {
        let t = l["type"].as_str().unwrap();
        if matches!(
            t,
            "assistant" | "user" | "stream_event" | "system" | "result"
        ) {
            assert!(l["session_id"].is_string(), "{l}");
            assert!(l["uuid"].is_string(), "{l}");
        }
    }
}
