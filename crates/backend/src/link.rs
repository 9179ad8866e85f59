//! What every live backend task shares: the channel to the UI and the opening of its recording.

use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::process::{SharedRecorder, describe_exit, record};
use switchboard_core::msg::Stamped;
use switchboard_core::msg::{BackendEvent, Command};
use switchboard_core::transcript::{ItemKind, ItemOp, Level};
use switchboard_record::Dir;
use switchboard_record::{Recorder, now_ms};

/// The backend's side of the UI channel; every event is stamped with the time it was sent.
pub struct Link {
    pub events: mpsc::Sender<Stamped>,
}

impl Link {
    pub async fn send(&self, event: BackendEvent) {
        let _ = self
            .events
            .send(Stamped {
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
        backend: switchboard_core::BackendKind,
        argv: &[String],
        cwd: &Path,
    ) -> SharedRecorder {
        let rec: SharedRecorder = Arc::new(Mutex::new(None));
        if let Some(path) = path {
            match Recorder::create(path, backend, argv, &cwd.display().to_string()) {
                Ok(mut r) => {
                    // A later write failure (disk full, EIO) reaches the UI from any task.
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    r.notify_failure(tx);
                    *rec.lock().expect("fresh mutex") = Some(r);
                    self.send(BackendEvent::Recording(path.display().to_string()))
                        .await;
                    let events = self.events.clone();
                    tokio::spawn(async move {
                        if let Ok(why) = rx.await {
                            let _ = events
                                .send(Stamped {
                                    at_ms: now_ms(),
                                    event: BackendEvent::RecordingFailed(why),
                                })
                                .await;
                        }
                    });
                }
                Err(e) => {
                    let why = format!("cannot write the recording {}: {e}", path.display());
                    self.protocol(Level::Error, why.clone()).await;
                    self.send(BackendEvent::RecordingFailed(why)).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failed_write_stops_the_recording_and_tells_the_ui() {
        let dir = std::env::temp_dir().join(format!("sb-link-rec-{}", std::process::id()));
        let path = dir.join("r.jsonl");
        let (tx, mut rx) = mpsc::channel(16);
        let link = Link { events: tx };
        let rec = link
            .open_recording(
                Some(&path),
                switchboard_core::BackendKind::Claude,
                &["claude".into()],
                &dir,
            )
            .await;
        assert!(matches!(
            rx.recv().await,
            Some(Stamped {
                event: BackendEvent::Recording(_),
                ..
            })
        ));
        record(&rec, Dir::In, "before");
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        rec.lock().unwrap().as_mut().unwrap().redirect(full);
        record(&rec, Dir::In, "lost");
        record(&rec, Dir::In, "also lost");
        assert!(rec.lock().unwrap().is_none(), "the recording stopped");
        let msg = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
            .await
            .expect("no failure event");
        match msg {
            Some(Stamped {
                event: BackendEvent::RecordingFailed(why),
                ..
            }) => assert!(why.contains("No space left"), "{why}"),
            other => panic!("expected RecordingFailed, got {other:?}"),
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("before") && !text.contains("lost"));
        std::fs::remove_dir_all(dir).ok();
    }

    #[tokio::test]
    async fn a_recording_that_cannot_be_created_is_reported_as_failed() {
        let (tx, mut rx) = mpsc::channel(16);
        let link = Link { events: tx };
        let rec = link
            .open_recording(
                Some(Path::new("/dev/full")),
                switchboard_core::BackendKind::Claude,
                &[],
                Path::new("/"),
            )
            .await;
        assert!(rec.lock().unwrap().is_none());
        let mut failed = false;
        while let Ok(Stamped { event, .. }) = rx.try_recv() {
            failed |= matches!(event, BackendEvent::RecordingFailed(_));
        }
        assert!(failed, "no RecordingFailed event");
    }
}
