//! One connection to the host: a reader task that turns the client's frames into events for
//! the host loop, and a writer task that sends what the host queued. The queue is bounded: a
//! client that does not read is dropped (it can attach again), the host never waits on it.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::wire::{self, ClientMsg, Hello};

/// Frames queued for one client before it counts as too slow and is dropped.
pub const OUT_QUEUE: usize = 256;
/// How long a new connection may take to say what it wants.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// What the connections tell the host loop.
pub enum ConnEvent {
    Hello {
        id: u64,
        hello: Hello,
        out: Outbox,
    },
    Msg(u64, ClientMsg),
    /// The client hung up, broke the wire, or sent more than a frame may hold.
    Gone(u64, Option<String>),
}

/// The sending end of a client's bounded queue, and its writer (aborted when the client is
/// dropped as too slow: its socket may be full for good).
pub struct Outbox {
    tx: Option<mpsc::Sender<Vec<u8>>>,
    writer: JoinHandle<()>,
}

impl Outbox {
    /// Queue one frame. False: the queue is full or the client is gone (drop it).
    pub fn send(&mut self, frame: Vec<u8>) -> bool {
        match &self.tx {
            Some(tx) => tx.try_send(frame).is_ok(),
            None => false,
        }
    }

    /// Queue a last frame and close: the writer sends what is queued, then hangs up.
    pub fn close_with(&mut self, frame: Vec<u8>) {
        if let Some(tx) = self.tx.take()
            && tx.try_send(frame).is_err()
        {
            self.writer.abort();
        }
    }

    /// Hang up now, whatever is queued.
    pub fn abort(&mut self) {
        self.tx = None;
        self.writer.abort();
    }

    /// Wait (at most `limit`) for the writer to send what is queued after `close_with`.
    pub async fn flushed(self, limit: Duration) {
        let mut w = self.writer;
        if tokio::time::timeout(limit, &mut w).await.is_err() {
            w.abort();
        }
    }
}

/// Serve one accepted connection (its peer already checked) until it ends.
pub fn spawn(id: u64, stream: UnixStream, events: mpsc::Sender<ConnEvent>) {
    tokio::spawn(async move {
        let (mut rd, mut wr) = stream.into_split();
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(OUT_QUEUE);
        let writer = tokio::spawn(async move {
            while let Some(frame) = rx.recv().await {
                if wr.write_all(&frame).await.is_err() {
                    return;
                }
            }
            let _ = wr.shutdown().await;
        });
        let out = Outbox {
            tx: Some(tx),
            writer,
        };
        let hello = tokio::time::timeout(
            HELLO_TIMEOUT,
            wire::read_msg::<serde_json::Value, _>(&mut rd, wire::MAX_FROM_CLIENT),
        )
        .await;
        let hello = match hello {
            Ok(Ok(Some(h))) => h,
            Ok(Ok(None)) => return,
            Ok(Err(e)) => {
                tracing::warn!("host: a connection sent no valid hello: {e}");
                return;
            }
            Err(_) => {
                tracing::warn!("host: a connection said nothing in time");
                return;
            }
        };
        // The version is read before the rest: a client of another version may want what
        // this one does not know, and is told why it is refused all the same.
        let version = hello.get("version").and_then(serde_json::Value::as_u64);
        let hello = match serde_json::from_value::<Hello>(hello) {
            Ok(h) if version == Some(u64::from(wire::VERSION)) => h,
            other => {
                let reason = match (version, other) {
                    (Some(v), _) if v != u64::from(wire::VERSION) => wire::refusal(v),
                    (_, Err(e)) => format!("not a hello of wire version {}: {e}", wire::VERSION),
                    _ => format!(
                        "a hello without a version (this host speaks {})",
                        wire::VERSION
                    ),
                };
                let mut out = out;
                out.close_with(wire::json_frame(&wire::HostMsg::Refused { reason }));
                out.flushed(HELLO_TIMEOUT).await;
                return;
            }
        };
        if events
            .send(ConnEvent::Hello { id, hello, out })
            .await
            .is_err()
        {
            return;
        }
        let why = loop {
            match wire::read_msg::<ClientMsg, _>(&mut rd, wire::MAX_FROM_CLIENT).await {
                Ok(Some(m)) => {
                    if events.send(ConnEvent::Msg(id, m)).await.is_err() {
                        return;
                    }
                }
                Ok(None) => break None,
                Err(e) => break Some(e.to_string()),
            }
        };
        let _ = events.send(ConnEvent::Gone(id, why)).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client of another version is refused with both versions named, even when it wants
    /// something this version does not know; a hello of ours reaches the host.
    #[tokio::test]
    async fn another_version_is_told_why_and_ours_is_let_in() {
        let (events, mut rx) = mpsc::channel(4);
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        spawn(1, ours, events.clone());
        let v2 = serde_json::json!({"version": 2, "want": "teleport"});
        wire::write_msg(&mut theirs, &v2).await.unwrap();
        let answer: wire::HostMsg = wire::read_msg(&mut theirs, wire::MAX_FROM_HOST)
            .await
            .unwrap()
            .unwrap();
        let wire::HostMsg::Refused { reason } = answer else {
            panic!("{answer:?}")
        };
        assert!(reason.contains("version 1, the client 2"), "{reason}");
        assert!(rx.try_recv().is_err(), "the host never heard of it");

        let (ours, mut theirs) = UnixStream::pair().unwrap();
        spawn(2, ours, events);
        let hello = Hello {
            version: wire::VERSION,
            want: wire::Want::Status,
        };
        wire::write_msg(&mut theirs, &hello).await.unwrap();
        match rx.recv().await {
            Some(ConnEvent::Hello {
                id: 2, hello: h, ..
            }) => assert_eq!(h, hello),
            _ => panic!("no hello"),
        }
    }
}
