//! What every live backend task shares: the channel to the UI and the opening of its recording.

use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::process::{SharedRecorder, describe_exit, record};
use crate::core::Msg;
use crate::core::msg::{BackendEvent, Command};
use crate::core::transcript::{ItemKind, ItemOp, Level};
use crate::record::Dir;
use crate::record::{Recorder, now_ms};

/// The backend's side of the UI channel; every event is stamped with the time it was sent.
pub struct Link {
    pub events: mpsc::Sender<Msg>,
}

impl Link {
    pub async fn send(&self, event: BackendEvent) {
        let _ = self
            .events
            .send(Msg::Backend {
                at_ms: now_ms(),
                event,
            })
            .await;
    }

    pub async fn protocol(&self, level: Level, text: String) {
        self.send(BackendEvent::Protocol { level, text }).await;
    }

    pub async fn system(&self, label: &str, text: String) {
        self.send(BackendEvent::Item {
            node: None,
            op: ItemOp::Push(ItemKind::System {
                label: label.into(),
                text,
            }),
        })
        .await;
    }

    /// Open the recording at `path` (if any) and tell the UI where it goes; a failure is
    /// shown, and the session goes on unrecorded.
    pub async fn open_recording(
        &self,
        path: Option<&Path>,
        backend: &str,
        argv: &[String],
        cwd: &Path,
    ) -> SharedRecorder {
        let rec: SharedRecorder = Arc::new(Mutex::new(None));
        if let Some(path) = path {
            match Recorder::create(path, backend, argv, &cwd.display().to_string()) {
                Ok(r) => {
                    *rec.lock().expect("fresh mutex") = Some(r);
                    self.send(BackendEvent::Recording(path.display().to_string()))
                        .await;
                }
                Err(e) => {
                    self.protocol(
                        Level::Error,
                        format!("cannot write the recording {}: {e}", path.display()),
                    )
                    .await
                }
            }
        }
        rec
    }
}

/// How long a shutting-down agent gets before it is killed.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// The last lines of the agent's stderr, for the exit report.
#[derive(Debug, Default)]
pub struct StderrTail(std::collections::VecDeque<String>);

impl StderrTail {
    const LINES: usize = 20;

    pub fn push(&mut self, line: &str) {
        if self.0.len() == Self::LINES {
            self.0.pop_front();
        }
        self.0.push_back(line.to_string());
    }

    pub fn lines(&self) -> Vec<String> {
        self.0.iter().cloned().collect()
    }
}

impl Link {
    /// Record and report how the agent ended.
    pub async fn exited(
        &self,
        status: &std::io::Result<std::process::ExitStatus>,
        rec: &SharedRecorder,
        tail: &StderrTail,
    ) {
        let (code, detail) = match status {
            Ok(s) => describe_exit(s),
            Err(e) => (None, format!("wait failed: {e}")),
        };
        record(rec, Dir::Note, &format!("agent exited: {detail}"));
        self.send(BackendEvent::Exited {
            code,
            detail,
            stderr_tail: tail.lines(),
        })
        .await;
    }

    /// The agent could not start: report it, then wait for the UI to shut the backend down.
    pub async fn failed_to_start(
        &self,
        detail: String,
        rec: &SharedRecorder,
        commands: &mut mpsc::UnboundedReceiver<Command>,
    ) {
        record(rec, Dir::Note, &detail);
        self.send(BackendEvent::Exited {
            code: None,
            detail,
            stderr_tail: Vec::new(),
        })
        .await;
        while let Some(c) = commands.recv().await {
            if c == Command::Shutdown {
                break;
            }
        }
    }
}
