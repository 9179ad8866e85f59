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
    /// A CLI's hook event, for the adopted-sessions source; its connection waits on `replies`.
    Hook(switchboard_backend::hooks::HookCall),
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
            Ok(h) if version.is_some_and(|v| wire::takes(v, &h.want)) => h,
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
        if let wire::Want::Hook { agent, waits, size } = &hello.want {
            hook(rd, out, agent, *waits, *size, &events).await;
            return;
        }
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

/// How long a hook's event may take to arrive after its hello.
const HOOK_EVENT_TIMEOUT: Duration = Duration::from_secs(2);

/// Serve a hook's connection: read its event, hand it to the host loop, and write back what
/// the adopted-sessions source answers, until the final reply or the hook hanging up. A hook
/// that hears nothing (its event refused, the source gone, the host stopping) prints nothing:
/// the CLI's own prompt decides.
async fn hook(
    mut rd: tokio::net::unix::OwnedReadHalf,
    mut out: Outbox,
    agent: &str,
    waits: bool,
    size: u64,
    events: &mpsc::Sender<ConnEvent>,
) {
    use switchboard_backend::hooks::{HookAgent, HookCall, HookReplies, HookReply, MAX_EVENT};
    use tokio::io::AsyncReadExt;
    let Some(agent) = HookAgent::from_name(agent) else {
        tracing::warn!("host: a hook of an unknown agent refused");
        return;
    };
    let oversize = (size > MAX_EVENT as u64).then_some(size);
    let event = if oversize.is_some() {
        Vec::new()
    } else {
        match tokio::time::timeout(HOOK_EVENT_TIMEOUT, wire::read_frame(&mut rd, MAX_EVENT + 1))
            .await
        {
            Ok(Ok(Some(wire::Frame::Event(bytes)))) => bytes,
            _ => {
                tracing::warn!("host: a {} hook sent no event", agent.name());
                return;
            }
        }
    };
    let (replies, line) = HookReplies::channel();
    // Dropped when this task ends, however: the source then knows the hook is gone.
    let (mut rx, _alive) = (line.replies, line.alive);
    let call = HookCall {
        agent,
        event,
        waits,
        oversize,
        at_ms: switchboard_record::now_ms(),
        replies,
    };
    if events.send(ConnEvent::Hook(call)).await.is_err() || !waits {
        return;
    }
    let mut probe = [0u8; 1];
    loop {
        tokio::select! {
            r = rx.recv() => {
                let msg = match r {
                    Some(HookReply::Accepted) => {
                        if out.send(wire::json_frame(&wire::HostMsg::HookAccepted)) {
                            continue;
                        }
                        return;
                    }
                    Some(HookReply::Decision(stdout)) => wire::HostMsg::HookDecision { stdout },
                    Some(HookReply::Pass(why)) => wire::HostMsg::HookPass { why },
                    None => return,
                };
                out.close_with(wire::json_frame(&msg));
                out.flushed(HOOK_EVENT_TIMEOUT).await;
                return;
            }
            // The hook said all it had to say: a read ending means it went away (the CLI's
            // timeout, or the CLI stopped waiting); dropping `rx` tells the source.
            n = rd.read(&mut probe) => if !matches!(n, Ok(n) if n > 0) { return },
        }
    }
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
        let v2 = serde_json::json!({"version": wire::VERSION + 1, "want": "teleport"});
        wire::write_msg(&mut theirs, &v2).await.unwrap();
        let answer: wire::HostMsg = wire::read_msg(&mut theirs, wire::MAX_FROM_HOST)
            .await
            .unwrap()
            .unwrap();
        let wire::HostMsg::Refused { reason } = answer else {
            panic!("{answer:?}")
        };
        let named = format!(
            "version {}, the client {}",
            wire::VERSION,
            wire::VERSION + 1
        );
        assert!(reason.contains(&named), "{reason}");
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

    /// Only `attach` changed in version 2: a version-1 `status` (an `ls` from before an
    /// upgrade) is let in, a version-1 `attach` is refused with both numbers named, and the
    /// hellos this build sends are let in.
    #[tokio::test]
    async fn the_first_version_is_taken_for_all_but_attach() {
        let (events, mut rx) = mpsc::channel(4);
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        spawn(5, ours, events.clone());
        let v1 = serde_json::json!({"version": 1, "want": "status"});
        wire::write_msg(&mut theirs, &v1).await.unwrap();
        assert!(matches!(
            rx.recv().await,
            Some(ConnEvent::Hello { id: 5, .. })
        ));
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        spawn(6, ours, events.clone());
        let v1 = serde_json::json!({"version": 1, "want": "attach", "cols": 80, "rows": 24});
        wire::write_msg(&mut theirs, &v1).await.unwrap();
        let answer: wire::HostMsg = wire::read_msg(&mut theirs, wire::MAX_FROM_HOST)
            .await
            .unwrap()
            .unwrap();
        let wire::HostMsg::Refused { reason } = answer else {
            panic!("{answer:?}")
        };
        assert!(reason.contains("version 2, the client 1"), "{reason}");
        for want in [
            wire::Want::Attach { cols: 80, rows: 24 },
            wire::Want::Status,
            wire::Want::Stop,
            wire::Want::Hook {
                agent: "claude".into(),
                waits: false,
                size: 0,
            },
        ] {
            assert!(wire::takes(u64::from(wire::version_for(&want)), &want));
        }
    }

    /// What `switchboard hook claude` writes: its hello (at `version`), then the event `{}`.
    fn claude_hook(version: u32, waits: bool) -> Vec<u8> {
        let hello = Hello {
            version,
            want: wire::Want::Hook {
                agent: "claude".into(),
                waits,
                size: 2,
            },
        };
        let mut bytes = wire::json_frame(&hello);
        bytes.extend(wire::event_frame(b"{}"));
        bytes
    }

    /// A hook's connection: its event reaches the host as a `HookCall`; what the source
    /// answers is written back; a hook that hangs up first is told to the source as gone.
    #[tokio::test]
    async fn a_hook_is_handed_over_answered_and_its_going_seen() {
        use switchboard_backend::hooks::HookReply;
        let (events, mut rx) = mpsc::channel(4);
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        spawn(3, ours, events.clone());
        let bytes = claude_hook(wire::VERSION, true);
        theirs.write_all(&bytes).await.unwrap();
        let Some(ConnEvent::Hook(mut call)) = rx.recv().await else {
            panic!("no hook call")
        };
        assert_eq!(call.event, b"{}");
        assert!(call.waits && call.oversize.is_none());
        call.replies.accepted();
        call.replies.finish(HookReply::Decision("{\"x\":1}".into()));
        let m: wire::HostMsg = wire::read_msg(&mut theirs, wire::MAX_FROM_HOST)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(m, wire::HostMsg::HookAccepted);
        let m: wire::HostMsg = wire::read_msg(&mut theirs, wire::MAX_FROM_HOST)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            m,
            wire::HostMsg::HookDecision {
                stdout: "{\"x\":1}".into()
            }
        );

        // A hook that goes away (its CLI's timeout) before an answer.
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        spawn(4, ours, events.clone());
        theirs.write_all(&bytes).await.unwrap();
        let Some(ConnEvent::Hook(mut call)) = rx.recv().await else {
            panic!("no hook call")
        };
        let gone = call.replies.on_gone();
        drop(theirs);
        tokio::time::timeout(Duration::from_secs(5), gone)
            .await
            .expect("the source hears the hook is gone");

        // An event larger than a hook may send is not read: only its size reaches the host.
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        spawn(5, ours, events);
        let big = Hello {
            version: wire::VERSION,
            want: wire::Want::Hook {
                agent: "codex".into(),
                waits: false,
                size: u64::MAX,
            },
        };
        theirs.write_all(&wire::json_frame(&big)).await.unwrap();
        let Some(ConnEvent::Hook(call)) = rx.recv().await else {
            panic!("no hook call")
        };
        assert_eq!(call.oversize, Some(u64::MAX));
        assert!(call.event.is_empty());
    }

    /// A hook that waits for no answer is hung up on only once its event is in the host's
    /// queue: the hook waits for that (`switchboard hook`), so events reach the host in the
    /// order the CLI ran its hooks, each process and connection of its own notwithstanding.
    #[tokio::test]
    async fn a_hook_is_hung_up_on_once_its_event_is_queued() {
        use tokio::io::AsyncReadExt;
        let (events, mut rx) = mpsc::channel(1);
        // The queue is full: the event cannot go in yet.
        events.send(ConnEvent::Gone(0, None)).await.unwrap();
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        spawn(6, ours, events);
        let bytes = claude_hook(wire::FIRST, false);
        theirs.write_all(&bytes).await.unwrap();
        let mut b = [0u8; 1];
        let early = tokio::time::timeout(Duration::from_millis(200), theirs.read(&mut b)).await;
        assert!(
            early.is_err(),
            "hung up before the event was queued: {early:?}"
        );
        assert!(matches!(rx.recv().await, Some(ConnEvent::Gone(0, None))));
        let Some(ConnEvent::Hook(call)) = rx.recv().await else {
            panic!("no hook call")
        };
        assert_eq!(call.event, b"{}");
        let n = tokio::time::timeout(Duration::from_secs(5), theirs.read(&mut b))
            .await
            .expect("hung up once queued");
        assert_eq!(n.unwrap(), 0);
    }
}
