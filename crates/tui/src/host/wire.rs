//! The wire between a host and its clients (docs/host.md): length-prefixed frames on a Unix
//! socket, versioned by the first message, bounded both ways.
//!
//! A frame is a 4-byte big-endian length, then that many bytes: a tag byte and the payload.
//! Tag `J`: one JSON message (`Hello`, `ClientMsg`, `HostMsg`). Tag `O` (host to client only):
//! bytes for the client's terminal, exactly as the host rendered them. Tag `E` (a hook client
//! only, once, after its hello): a hook event's bytes exactly as the CLI wrote them.

use serde::{Deserialize, Serialize};
use switchboard_core::input::{KeyEvent, MouseEvent};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The wire's version. A peer speaking another one is refused with both numbers named.
pub const VERSION: u32 = 2;
/// The version before: only `attach` changed since (`ClientMsg::Shown`), so `status`, `stop`
/// and `hook` are still spoken as it, and a host and a client of either version answer them
/// (`ls` and `stop` of a host started before an upgrade; every hook event).
pub const FIRST: u32 = 1;

/// The version a hello wanting `want` is sent as.
pub fn version_for(want: &Want) -> u32 {
    match want {
        Want::Attach { .. } => VERSION,
        _ => FIRST,
    }
}

/// Whether a host of this version takes a hello of `version` wanting `want`.
pub fn takes(version: u64, want: &Want) -> bool {
    version == u64::from(VERSION)
        || (version == u64::from(FIRST) && !matches!(want, Want::Attach { .. }))
}
/// The largest frame a client may send (a paste is the largest thing it has).
pub const MAX_FROM_CLIENT: usize = 1 << 20;
/// The largest frame a host sends (a full repaint of a large terminal, a page of text).
pub const MAX_FROM_HOST: usize = 16 << 20;

const TAG_JSON: u8 = b'J';
const TAG_OUTPUT: u8 = b'O';
const TAG_EVENT: u8 = b'E';

/// What a client wants, said once as it connects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "want", rename_all = "snake_case")]
pub enum Want {
    /// A TUI of `cols` × `rows` cells.
    Attach { cols: u16, rows: u16 },
    /// One `Status` line, for `switchboard ls`.
    Status,
    /// Stop the host as quitting does; the answer comes when it has stopped.
    Stop,
    /// One hook event from a CLI's hook (`switchboard hook AGENT`): an `E` frame of `size`
    /// bytes follows, unless `size` is over `hooks::MAX_EVENT` (then nothing follows and the
    /// host shows the refusal). `waits`: a PermissionRequest, whose hook waits for
    /// `HookAccepted` and then one `HookDecision` or `HookPass`; other hooks hear nothing.
    Hook {
        agent: String,
        waits: bool,
        size: u64,
    },
}

/// Why a client speaking wire version `theirs` is refused.
pub fn refusal(theirs: u64) -> String {
    format!(
        "this host speaks wire version {VERSION}, the client {theirs}: use the same switchboard \
         for both"
    )
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub version: u32,
    #[serde(flatten)]
    pub want: Want,
}

/// An attached client's input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum ClientMsg {
    /// `seen`: the last frame this terminal showed (`HostMsg::Drawn`) when the key was typed:
    /// the host judges a card key against that frame, not against the state it has now.
    Key {
        key: KeyEvent,
        #[serde(default)]
        seen: u64,
    },
    Mouse {
        mouse: MouseEvent,
        #[serde(default)]
        seen: u64,
    },
    Paste {
        text: String,
        #[serde(default)]
        seen: u64,
        /// The client cut it to fit a frame (`attach::PASTE_MAX`): the host says so.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cut: bool,
    },
    Resize {
        cols: u16,
        rows: u16,
    },
    /// The client's pager closed: repaint the whole screen.
    Repaint,
    /// Frame `seq` (`HostMsg::Drawn`) is on the terminal: written and flushed. A card's
    /// settle time runs from here, not from when the host drew the frame (a client far
    /// behind, a slow link, shows it later).
    Shown {
        seq: u64,
    },
}

/// What a host says besides terminal output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum HostMsg {
    Welcome {
        version: u32,
        name: String,
    },
    Refused {
        reason: String,
    },
    Status(Status),
    /// The output before it completes frame `seq` of this client's screen.
    Drawn {
        seq: u64,
    },
    /// Show `text` in the client's pager (the TUI suspended there, not on the host).
    Page {
        text: String,
    },
    /// The host lets this client go: why, and lines to print once the terminal is restored.
    Bye {
        reason: String,
        lines: Vec<String>,
    },
    /// To a hook: its card is up, keep waiting.
    HookAccepted,
    /// To a hook: print `stdout` exactly and exit 0.
    HookDecision {
        stdout: String,
    },
    /// To a hook: print nothing (the CLI's own prompt decides).
    HookPass {
        why: String,
    },
}

/// One host, as `switchboard ls` prints it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub name: String,
    pub pid: u32,
    pub sessions: usize,
    pub waiting: usize,
    /// Waiting gates the notification command was run for (nobody was attached).
    pub notified: usize,
    pub clients: usize,
}

impl Status {
    /// `demo  3 sessions, 2 waiting (2 notified), 1 client attached (pid 4242)`.
    pub fn line(&self) -> String {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut line = format!(
            "{}  {}, {} waiting",
            switchboard_core::text::neutralize(&self.name),
            plural(self.sessions, "session", "sessions"),
            self.waiting
        );
        if self.notified > 0 {
            line.push_str(&format!(" ({} notified)", self.notified));
        }
        line.push_str(&match self.clients {
            0 => ", nobody attached".to_string(),
            n => format!(", {} attached", plural(n, "client", "clients")),
        });
        line.push_str(&format!(" (pid {})", self.pid));
        line
    }
}

/// A frame read off the wire.
#[derive(Debug)]
pub enum Frame {
    Json(serde_json::Value),
    Output(Vec<u8>),
    Event(Vec<u8>),
}

/// A JSON message as one frame.
pub fn json_frame<T: Serialize>(msg: &T) -> Vec<u8> {
    let body = serde_json::to_vec(msg).expect("wire messages serialize");
    frame(TAG_JSON, &body)
}

/// Terminal output as one frame.
pub fn output_frame(bytes: &[u8]) -> Vec<u8> {
    frame(TAG_OUTPUT, bytes)
}

/// A hook event as one frame.
pub fn event_frame(bytes: &[u8]) -> Vec<u8> {
    frame(TAG_EVENT, bytes)
}

fn frame(tag: u8, body: &[u8]) -> Vec<u8> {
    let len = u32::try_from(body.len() + 1).expect("frames are bounded");
    let mut out = Vec::with_capacity(body.len() + 5);
    out.extend_from_slice(&len.to_be_bytes());
    out.push(tag);
    out.extend_from_slice(body);
    out
}

/// Read one frame of at most `max` bytes. `Ok(None)`: the peer closed between frames.
pub async fn read_frame<R: AsyncReadExt + Unpin>(
    r: &mut R,
    max: usize,
) -> std::io::Result<Option<Frame>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len == 0 || len > max {
        return Err(invalid(format!("a frame of {len} bytes (at most {max})")));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).await?;
    let payload = body.split_off(1);
    match body[0] {
        TAG_JSON => serde_json::from_slice(&payload)
            .map(|v| Some(Frame::Json(v)))
            .map_err(|e| invalid(format!("a JSON frame that does not parse: {e}"))),
        TAG_OUTPUT => Ok(Some(Frame::Output(payload))),
        TAG_EVENT => Ok(Some(Frame::Event(payload))),
        t => Err(invalid(format!("a frame of unknown type {t:#04x}"))),
    }
}

/// Read one JSON message of type `T` (an output frame or another shape is an error).
pub async fn read_msg<T: serde::de::DeserializeOwned, R: AsyncReadExt + Unpin>(
    r: &mut R,
    max: usize,
) -> std::io::Result<Option<T>> {
    match read_frame(r, max).await? {
        None => Ok(None),
        Some(Frame::Json(v)) => serde_json::from_value(v)
            .map(Some)
            .map_err(|e| invalid(format!("an unexpected message: {e}"))),
        Some(Frame::Output(_) | Frame::Event(_)) => {
            Err(invalid("raw bytes where a message belongs".into()))
        }
    }
}

pub async fn write_msg<T: Serialize, W: AsyncWriteExt + Unpin>(
    w: &mut W,
    msg: &T,
) -> std::io::Result<()> {
    w.write_all(&json_frame(msg)).await?;
    w.flush().await
}

fn invalid(what: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_core::input::{KeyCode, KeyModifiers};

    #[tokio::test]
    async fn frames_round_trip_and_hostile_ones_are_refused() {
        let hello = Hello {
            version: VERSION,
            want: Want::Attach { cols: 80, rows: 24 },
        };
        let key = ClientMsg::Key {
            key: KeyEvent::new(KeyCode::Char('y'), KeyModifiers::CONTROL),
            seen: 7,
        };
        let mut bytes = json_frame(&hello);
        bytes.extend(json_frame(&key));
        bytes.extend(output_frame(b"\x1b[2J"));
        let mut r = &bytes[..];
        let h: Hello = read_msg(&mut r, MAX_FROM_CLIENT).await.unwrap().unwrap();
        assert_eq!(h, hello);
        let k: ClientMsg = read_msg(&mut r, MAX_FROM_CLIENT).await.unwrap().unwrap();
        assert_eq!(k, key);
        assert!(matches!(
            read_frame(&mut r, MAX_FROM_CLIENT).await.unwrap(),
            Some(Frame::Output(o)) if o == b"\x1b[2J"
        ));
        assert!(read_frame(&mut r, MAX_FROM_CLIENT).await.unwrap().is_none());
        // Too long, empty, an unknown tag, broken JSON, a cut-off body.
        let mut big = ((MAX_FROM_CLIENT + 1) as u32).to_be_bytes().to_vec();
        big.push(TAG_JSON);
        for bad in [
            big,
            vec![0, 0, 0, 0],
            vec![0, 0, 0, 2, b'X', b'{'],
            vec![0, 0, 0, 2, TAG_JSON, b'{'],
            vec![0, 0, 0, 9, TAG_JSON, b'{'],
        ] {
            let mut r = &bad[..];
            assert!(
                read_frame(&mut r, MAX_FROM_CLIENT).await.is_err(),
                "{bad:?}"
            );
        }
        // A version the other side does not speak still parses: the host names both.
        let v2 = br#"{"version":3,"want":"status"}"#;
        let mut f = vec![0, 0, 0, (v2.len() + 1) as u8, TAG_JSON];
        f.extend_from_slice(v2);
        let h: Hello = read_msg(&mut &f[..], MAX_FROM_CLIENT)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(h.version, 3);
    }

    #[test]
    fn a_status_line_reads_as_a_sentence() {
        let s = Status {
            name: "demo\u{1b}]0;x".into(),
            pid: 1,
            sessions: 3,
            waiting: 2,
            notified: 2,
            clients: 0,
        };
        assert_eq!(
            s.line(),
            "demo^[]0;x  3 sessions, 2 waiting (2 notified), nobody attached (pid 1)"
        );
    }
}
