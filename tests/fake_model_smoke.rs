//! Smoke tests of the fake Anthropic API against the real `claude` CLI (no switchboard code).
//! Skipped (with a note) when the pinned CLI is not installed and CI is not set (`common::require_or_skip`).

#[path = "support/common.rs"]
mod common;
#[path = "support/fake_model.rs"]
mod fake_model;

use common::{CLAUDE_CLI, require_or_skip};
use fake_model::{FakeModel, Scenario, claude_bin, claude_command, temp_dir};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

const STEP: Duration = Duration::from_secs(15);

/// A minimal stream-json driver: stdout lines arrive on a channel, stdin stays open.
struct Cli {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::UnboundedReceiver<Value>,
    seen: Vec<Value>,
    dirs: Vec<std::path::PathBuf>,
}

impl Cli {
    async fn spawn(model: &FakeModel, tag: &str) -> (Cli, std::path::PathBuf) {
        let bin = claude_bin().expect("checked by caller");
        let home = temp_dir(&format!("{tag}-home"));
        let cwd = temp_dir(&format!("{tag}-cwd"));
        let mut child = claude_command(&bin, &cwd, &home, &model.base_url())
            .spawn()
            .expect("spawn claude");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut rd = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = rd.next_line().await {
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send(v).is_err()
                {
                    break;
                }
            }
        });
        (
            Cli {
                child,
                stdin,
                lines: rx,
                seen: vec![],
                dirs: vec![home, cwd.clone()],
            },
            cwd,
        )
    }

    async fn send(&mut self, v: Value) {
        let mut s = v.to_string();
        s.push('\n');
        self.stdin
            .write_all(s.as_bytes())
            .await
            .expect("write stdin");
        self.stdin.flush().await.unwrap();
    }

    async fn initialize(&mut self) {
        self.send(
            json!({"type":"control_request","request_id":"sb-init-1","request":{
            "subtype":"initialize","supportedDialogKinds":[],"forwardSubagentText":true}}),
        )
        .await;
        self.next_where(|m| {
            m["type"] == "control_response" && m["response"]["request_id"] == "sb-init-1"
        })
        .await;
    }

    async fn user(&mut self, text: &str) {
        self.send(
            json!({"type":"user","message":{"role":"user","content":[{"type":"text","text":text}]},
            "parent_tool_use_id":null,"session_id":"default"}),
        )
        .await;
    }

    async fn reply(&mut self, req: &Value, body: Value) {
        self.send(
            json!({"type":"control_response","response":{"subtype":"success",
            "request_id":req["request_id"],"response":body}}),
        )
        .await;
    }

    /// Next stdout line satisfying `pred` (within STEP).
    async fn next_where(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + STEP;
        loop {
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some(v)) => {
                    self.seen.push(v.clone());
                    if pred(&v) {
                        return v;
                    }
                }
                Ok(None) => panic!("claude stdout closed; lines seen:\n{}", self.tail()),
                Err(_) => panic!(
                    "timed out waiting for a stdout line; lines seen:\n{}",
                    self.tail()
                ),
            }
        }
    }

    fn tail(&self) -> String {
        self.seen
            .iter()
            .rev()
            .take(30)
            .rev()
            .map(|v| v.to_string().chars().take(300).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    async fn close(mut self) {
        drop(self.stdin);
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
        // Only reached when the test passed so far: keep the dirs of failing runs for inspection.
        for d in &self.dirs {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

fn is_ctl(m: &Value) -> bool {
    m["type"] == "control_request"
}

fn is_result(m: &Value) -> bool {
    m["type"] == "result"
}

#[tokio::test]
async fn bash_permission_allow_reaches_model() {
    if require_or_skip(
        "bash_permission_allow_reaches_model",
        CLAUDE_CLI,
        claude_bin(),
    )
    .is_none()
    {
        return;
    }
    let model = FakeModel::start(Scenario::load("bash_write")).await;
    let (mut cli, cwd) = Cli::spawn(&model, "smoke-bash").await;
    cli.initialize().await;
    cli.user("BASH_WRITE please").await;

    let req = cli.next_where(is_ctl).await;
    assert_eq!(req["request"]["subtype"], "can_use_tool", "{req}");
    assert_eq!(req["request"]["tool_name"], "Bash");
    assert_eq!(req["request"]["input"]["command"], "touch created.txt");
    let input = req["request"]["input"].clone();
    cli.reply(&req, json!({"behavior":"allow","updatedInput":input}))
        .await;

    let res = cli.next_where(is_result).await;
    assert_eq!(res["subtype"], "success", "{res}");
    assert_eq!(res["result"], "The file is in place.");
    assert!(
        cwd.join("created.txt").exists(),
        "created.txt missing in {}",
        cwd.display()
    );

    let trs = model.tool_results();
    let bash: Vec<_> = trs
        .iter()
        .filter(|t| t.tool_name.as_deref() == Some("Bash"))
        .collect();
    assert_eq!(bash.len(), 1, "{trs:?}");
    assert!(!bash[0].is_error, "{trs:?}");
    assert_eq!(bash[0].tool_use_id, "toolu_bash_1");
    assert_eq!(model.fired_rules(), vec!["touch", "after_bash"]);
    model.assert_no_unexpected();
    cli.close().await;
    model.shutdown().await;
}

#[tokio::test]
async fn ask_user_question_answers_reach_model() {
    if require_or_skip(
        "ask_user_question_answers_reach_model",
        CLAUDE_CLI,
        claude_bin(),
    )
    .is_none()
    {
        return;
    }
    let model = FakeModel::start(Scenario::load("ask_multiselect")).await;
    let (mut cli, _cwd) = Cli::spawn(&model, "smoke-ask").await;
    cli.initialize().await;
    cli.user("ASK_MULTI please").await;

    let req = cli.next_where(is_ctl).await;
    assert_eq!(req["request"]["subtype"], "can_use_tool", "{req}");
    assert_eq!(req["request"]["tool_name"], "AskUserQuestion");
    let questions = req["request"]["input"]["questions"].clone();
    assert_eq!(questions.as_array().map(Vec::len), Some(2));
    cli.reply(
        &req,
        json!({"behavior":"allow","updatedInput":{"questions":questions,"answers":{
            "Which modules should get audit logging?":"Auth, Audit",
            "Which log format should we use?":"JSON"}}}),
    )
    .await;
    let res = cli.next_where(is_result).await;
    assert_eq!(res["subtype"], "success", "{res}");

    model
        .wait_for(
            |reqs| {
                fake_model::collect_tool_results(reqs)
                    .iter()
                    .any(|t| t.tool_name.as_deref() == Some("AskUserQuestion"))
            },
            STEP,
        )
        .await;
    let trs = model.tool_results();
    let ask = trs
        .iter()
        .find(|t| t.tool_name.as_deref() == Some("AskUserQuestion"))
        .unwrap();
    assert!(!ask.is_error, "{ask:?}");
    assert_eq!(
        ask.text,
        "Your questions have been answered: \"Which modules should get audit logging?\"=\"Auth, Audit\", \
         \"Which log format should we use?\"=\"JSON\". You can now continue with these answers in mind."
    );
    model.assert_no_unexpected();
    cli.close().await;
    model.shutdown().await;
}

#[tokio::test]
async fn interrupt_mid_stream_aborts_the_model_call() {
    if require_or_skip(
        "interrupt_mid_stream_aborts_the_model_call",
        CLAUDE_CLI,
        claude_bin(),
    )
    .is_none()
    {
        return;
    }
    let model = FakeModel::start(Scenario::load("long_stream")).await;
    let (mut cli, _cwd) = Cli::spawn(&model, "smoke-interrupt").await;
    cli.initialize().await;
    cli.user("LONG_STREAM please").await;
    // A few deltas in, interrupt.
    for _ in 0..5 {
        cli.next_where(|m| {
            m["type"] == "stream_event" && m["event"]["type"] == "content_block_delta"
        })
        .await;
    }
    cli.send(
        json!({"type":"control_request","request_id":"sb-int-1","request":{"subtype":"interrupt"}}),
    )
    .await;
    let ack = cli
        .next_where(|m| {
            m["type"] == "control_response" && m["response"]["request_id"] == "sb-int-1"
        })
        .await;
    assert_eq!(ack["response"]["subtype"], "success", "{ack}");
    let res = cli.next_where(is_result).await;
    assert_eq!(res["subtype"], "error_during_execution", "{res}");
    assert_eq!(res["terminal_reason"], "aborted_streaming", "{res}");
    // The CLI hung up on the streaming response.
    model
        .wait_for(|reqs| reqs.iter().any(|r| r.aborted), STEP)
        .await;
    model.assert_no_unexpected();
    cli.close().await;
}

/// HTTP plumbing of the fake itself (no CLI needed): keep-alive, chunked request bodies,
/// non-streaming replies, count_tokens, and unexpected requests.
#[tokio::test]
async fn fake_model_http_basics() {
    use tokio::io::AsyncReadExt;
    let model = FakeModel::start(Scenario::load("bash_write")).await;
    let mut sock = tokio::net::TcpStream::connect(("127.0.0.1", model.port()))
        .await
        .unwrap();

    async fn read_response(sock: &mut tokio::net::TcpStream) -> (u16, String) {
        // Read head, then a content-length body.
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        while !buf.ends_with(b"\r\n\r\n") {
            sock.read_exact(&mut byte).await.unwrap();
            buf.push(byte[0]);
        }
        let head = String::from_utf8(buf).unwrap();
        let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        let len: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap())
            })
            .expect("content-length");
        let mut body = vec![0u8; len];
        sock.read_exact(&mut body).await.unwrap();
        (status, String::from_utf8(body).unwrap())
    }

    // 1. Non-streaming call with a chunked body.
    let body = json!({"model":"m","max_tokens":10,"tools":[{"name":"Bash","input_schema":{}}],
        "messages":[{"role":"user","content":[{"type":"text","text":"BASH_WRITE now"}]}]})
    .to_string();
    let (a, b) = body.split_at(body.len() / 2);
    let req = format!(
        "POST /v1/messages?beta=true HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    sock.write_all(req.as_bytes()).await.unwrap();
    let (status, text) = read_response(&mut sock).await;
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["stop_reason"], "tool_use");
    assert_eq!(v["content"][1]["name"], "Bash");
    assert_eq!(v["content"][1]["id"], "toolu_bash_1");

    // 2. Same connection (keep-alive): count_tokens with content-length.
    let ct = r#"{"model":"m","messages":[]}"#;
    let req = format!(
        "POST /v1/messages/count_tokens HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{ct}",
        ct.len()
    );
    sock.write_all(req.as_bytes()).await.unwrap();
    let (status, text) = read_response(&mut sock).await;
    assert_eq!(status, 200);
    assert!(
        serde_json::from_str::<Value>(&text).unwrap()["input_tokens"]
            .as_u64()
            .unwrap()
            >= 1
    );

    // 3. Unexpected route: 404 JSON error, recorded.
    sock.write_all(b"GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let (status, text) = read_response(&mut sock).await;
    assert_eq!(status, 404);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["type"],
        "error"
    );
    assert_eq!(model.unexpected().len(), 1);
    assert_eq!(model.unexpected()[0].path, "/v1/models");
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        model.assert_no_unexpected()
    }));
    assert!(caught.is_err(), "assert_no_unexpected must panic");
    assert_eq!(model.requests().len(), 3);
    assert_eq!(model.requests()[0].rule.as_deref(), Some("touch"));
    model.shutdown().await;
}
