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
            wire::read_msg::<Hello, _>(&mut rd, wire::MAX_FROM_CLIENT),
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
