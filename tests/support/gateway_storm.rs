//! A hostile host's storm against the gateway engine, driven by a byte string (the fuzz
//! target's input, or a seeded generator's in the suite): new calls, re-sends, ids reused
//! for other arguments and tools, refusals, the owner's allows, denials and edits, restarts,
//! and journal appends that fail half-way. Every frame both ways is kept as a recording and
//! checked by `validate`: an id never gets two different final answers, and no command
//! runs twice.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use switchboard::backend::gateway::engine::{Decision, Engine, Out, Pinned};
use switchboard::backend::gateway::journal::Journal;
use switchboard::backend::gateway::journal_file::{Sink, Wrap};
use switchboard::backend::gateway::validate::Mode;
use switchboard::contain::Root;

const WS: &str = "ws-storm";
const INTENT: &str = "storm";

/// Fails the next append (half of it lands) when the flag is up.
struct Flaky {
    file: File,
    fail: Arc<AtomicBool>,
}

impl Sink for Flaky {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.fail.swap(false, Ordering::SeqCst) {
            self.file.write_all(&bytes[..bytes.len() / 2])?;
            return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
        }
        self.file.write_all(bytes)
    }
    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }
}

pub struct Storm {
    base: PathBuf,
    fail: Arc<AtomicBool>,
    engine: Option<Engine>,
    /// Every call frame sent so far (re-sent by the storm).
    calls: Vec<String>,
    /// Cards waiting for the owner.
    gates: Vec<u64>,
    /// (dir, frame) in order.
    pub wire: Vec<(&'static str, String)>,
    next: u64,
}

fn call(id: &str, session: &str, ws: &str, tool: &str, args: Value) -> String {
    json!({"type": "call", "protocol": 1, "id": id, "workspaceId": ws, "sessionId": session,
           "intention": INTENT, "tool": tool, "args": args})
    .to_string()
}

impl Storm {
    pub fn new(base: &Path) -> Storm {
        let _ = std::fs::remove_dir_all(base);
        std::fs::create_dir_all(base.join("proj")).unwrap();
        std::fs::write(base.join("proj/a.txt"), "a\n").unwrap();
        let mut s = Storm {
            base: base.to_path_buf(),
            fail: Arc::new(AtomicBool::new(false)),
            engine: None,
            calls: Vec::new(),
            gates: Vec::new(),
            wire: Vec::new(),
            next: 0,
        };
        s.restart();
        s
    }

    fn restart(&mut self) {
        self.engine = None;
        self.gates.clear();
        let fail = self.fail.clone();
        let wrap: Wrap = Box::new(move |file| {
            Box::new(Flaky {
                file,
                fail: fail.clone(),
            })
        });
        let j = Journal::open_with(
            &self.base.join("data/j.jsonl"),
            switchboard::record::now_ms(),
            Some(wrap),
        )
        .unwrap();
        let pin = Pinned {
            workspace_id: WS.into(),
            intention: INTENT.into(),
            mode: Mode::Edits,
            extra_tools: Vec::new(),
        };
        let root = Root::open(&self.base.join("proj")).unwrap();
        self.engine = Some(Engine::new(pin, root, j));
    }

    fn take(&mut self, out: Vec<Out>) {
        for o in out {
            match o {
                Out::Send(f) => self.wire.push(("out", f)),
                Out::Gate(g) if !self.gates.contains(&g.gate) => self.gates.push(g.gate),
                _ => {}
            }
        }
    }

    fn send(&mut self, frame: String) {
        self.wire.push(("in", frame.clone()));
        let out = self.engine.as_mut().unwrap().on_frame(&frame);
        self.calls.push(frame);
        self.take(out);
    }

    /// A new call of kind `k` under a new id (or the id of an earlier call, `reuse`).
    fn new_call(&mut self, k: u8, reuse: Option<String>) {
        self.next += 1;
        let n = self.next;
        let id = reuse.unwrap_or_else(|| format!("c{n}"));
        let frame = match k % 6 {
            0 => call(&id, "s1", WS, "workspace_read", json!({"path": "a.txt"})),
            1 => call(
                &id,
                "s1",
                WS,
                "workspace_write",
                json!({"path": format!("f{n}.txt"), "content": "x\n", "expectedSha256": null}),
            ),
            2 => call(
                &id,
                "s1",
                WS,
                "workspace_exec",
                json!({"command": format!("echo {id}-{n} >> count.txt")}),
            ),
            3 => call(
                &id,
                "s1",
                "other",
                "workspace_read",
                json!({"path": "a.txt"}),
            ),
            4 => call(&id, "s1", WS, "workspace_write", json!({"path": 7})),
            _ => call(
                &id,
                "s1",
                WS,
                "workspace_read",
                json!({"path": "../../etc/passwd"}),
            ),
        };
        self.send(frame);
    }

    fn id_of(frame: &str) -> String {
        serde_json::from_str::<Value>(frame).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// One step of the storm.
    pub fn step(&mut self, b: u8, c: u8) {
        match b % 8 {
            0..=2 => self.new_call(c, None),
            3 if !self.calls.is_empty() => {
                let f = self.calls[c as usize % self.calls.len()].clone();
                self.send(f);
            }
            4 if !self.calls.is_empty() => {
                let id = Self::id_of(&self.calls[c as usize % self.calls.len()]);
                self.new_call(c / 7, Some(id));
            }
            5 if !self.gates.is_empty() => {
                let gate = self.gates.remove(c as usize % self.gates.len());
                let d = match c % 3 {
                    0 => Decision::Allow,
                    1 => Decision::Deny(Some("no".into())),
                    _ => Decision::AllowEdited(
                        json!({"command": format!("echo edited-{gate}-{} >> count.txt", self.next)})
                            .as_object()
                            .unwrap()
                            .clone(),
                    ),
                };
                let out = self.engine.as_mut().unwrap().decide(gate, d);
                self.take(out);
            }
            6 if c.is_multiple_of(4) => self.restart(),
            7 => self.fail.store(true, Ordering::SeqCst),
            _ => self.new_call(c, None),
        }
    }

    /// The storm as a gateway recording.
    pub fn recording(&self) -> String {
        let mut t =
            String::from(r#"{"switchboard_recording":1,"backend":"gateway","argv":[],"cwd":""}"#);
        for (dir, line) in &self.wire {
            t.push('\n');
            t.push_str(&json!({"ts": 1, "dir": dir, "line": line}).to_string());
        }
        t
    }

    /// Lines of count.txt, once every command has ended.
    pub fn ran(&mut self) -> Vec<String> {
        self.engine = None;
        std::fs::read_to_string(self.base.join("proj/count.txt"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}
