//! What every live backend task shares: the channel to the UI and the opening of its recording.

use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::process::SharedRecorder;
use crate::core::Msg;
use crate::core::msg::BackendEvent;
use crate::core::transcript::{ItemKind, ItemOp, Level};
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
