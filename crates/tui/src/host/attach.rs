//! `switchboard attach NAME`: this terminal becomes a client of a host. Keys, clicks, pastes
//! and sizes go to the host; the screen the host draws for this terminal comes back and is
//! written as it is. The pager runs here, on this terminal. Leaving (the detach key, a hangup,
//! SIGTERM) leaves the host and its gates as they were.

use std::io::{self, Write, stdout};
use std::path::Path;

use crossterm::event::EventStream;
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;

use super::wire::{self, ClientMsg, Frame, Hello, HostMsg, Want};
use crate::app::term::TerminalGuard;
use switchboard_core::Msg;

/// How this client's session ended: why, and the host's lines to print.
pub struct Ended {
    pub reason: String,
    pub lines: Vec<String>,
    /// The host died under this client (killed, crashed): nothing goes on.
    pub lost: bool,
}

/// Connect to host `name` in `dir` and say `want`; the host's first answer.
pub async fn connect(dir: &Path, name: &str, want: Want) -> Result<(UnixStream, HostMsg), String> {
    super::place::check_name(name)?;
    let path = super::place::socket_path(dir, name);
    let mut stream = match UnixStream::connect(&path).await {
        Ok(s) => s,
        Err(_) if !super::place::running(dir, name) => {
            return Err(format!(
                "no host named {name} is running (`switchboard ls` lists them)"
            ));
        }
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    // A host answers a status or an attach at once; one that does not (stopped, wedged) must
    // not hang `ls` or `attach`. A stop is answered when the host has stopped.
    let limit = match want {
        Want::Stop => None,
        _ => Some(ANSWER_TIMEOUT),
    };
    let hello = Hello {
        version: wire::version_for(&want),
        want,
    };
    let answer = async {
        wire::write_msg(&mut stream, &hello).await?;
        wire::read_msg::<HostMsg, _>(&mut stream, wire::MAX_FROM_HOST).await
    };
    let answer = match limit {
        Some(t) => match tokio::time::timeout(t, answer).await {
            Ok(a) => a,
            Err(_) => {
                return Err(format!(
                    "host {name} did not answer within {} s (stopped or wedged?)",
                    t.as_secs()
                ));
            }
        },
        None => answer.await,
    };
    match answer {
        Ok(Some(HostMsg::Refused { reason })) => Err(format!("host {name} refused: {reason}")),
        Ok(Some(m)) => Ok((stream, m)),
        Ok(None) => Err(format!("host {name} closed the connection")),
        Err(e) => Err(format!("host {name}: {e}")),
    }
}

/// How long a host may take to answer a status or an attach.
const ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The longest paste sent to the host (its frames from a client are bounded): a longer one is
/// cut, and the host tells the user, rather than letting this client go. (JSON escapes a
/// control character in six bytes.)
pub const PASTE_MAX: usize = wire::MAX_FROM_CLIENT / 8;

/// Attach this terminal to host `name` until detached or the host lets it go.
pub async fn attach(dir: &Path, name: &str) -> Result<Ended, String> {
    crate::app::term::need_terminal()?;
    let (cols, rows) = crossterm::terminal::size().map_err(|e| e.to_string())?;
    let (stream, first) = connect(dir, name, Want::Attach { cols, rows }).await?;
    if !matches!(first, HostMsg::Welcome { .. }) {
        return Err(format!("host {name} answered {first:?} to an attach"));
    }
    let guard = TerminalGuard::enter().map_err(|e| e.to_string())?;
    let ended = client_loop(stream).await;
    drop(guard);
    match ended {
        Ok(Some(e)) => Ok(e),
        // The connection ended without a goodbye. A host lets a client go with one (detach,
        // stop), or drops one that fell behind and lives on; a host that is gone (SIGKILL, a
        // crash) took its agents with it (their watchdogs), and saying "they go on" would
        // be a lie. Its lock says which.
        Ok(None) | Err(_) if died(dir, name).await => Ok(host_died(name)),
        Ok(None) => Ok(gone(
            "the host closed the connection (a client that falls behind is let go; attach again)",
        )),
        Err(e) => Err(format!("host {name}: {e}")),
    }
}

/// Whether host `name` is gone: its lock is free. The kernel closes a dead process's socket
/// and its lock in the same exit, but not at the same instant: allow it a moment.
pub async fn died(dir: &Path, name: &str) -> bool {
    for _ in 0..20 {
        if !super::place::running(dir, name) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

/// What a client whose host died is told: it is gone, so are its agents, and how to get the
/// sessions back.
pub fn host_died(name: &str) -> Ended {
    Ended {
        reason: format!("the host {name} stopped unexpectedly"),
        lines: vec![format!(
            "the host {name} stopped unexpectedly; its agents stopped with it; \
             `switchboard resume {name}` brings its sessions back"
        )],
        lost: true,
    }
}

/// Serve this terminal until the host lets it go (`Some`: detached, stopped, or this terminal
/// left) or the connection ends without a word (`None`).
async fn client_loop(stream: UnixStream) -> io::Result<Option<Ended>> {
    let (mut rd, mut wr) = stream.into_split();
    let (tx, mut frames) = mpsc::channel::<io::Result<Option<Frame>>>(64);
    let reader = tokio::spawn(async move {
        loop {
            let f = wire::read_frame(&mut rd, wire::MAX_FROM_HOST).await;
            let end = !matches!(f, Ok(Some(_)));
            if tx.send(f).await.is_err() || end {
                return;
            }
        }
    });
    let mut input = EventStream::new();
    // The last frame written to this terminal: sent with every key, so the host judges it
    // against what was on this screen when it was typed.
    let mut seen = 0u64;
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let ended = loop {
        // Biased, keys first: a key already typed is stamped with the frame that was on the
        // screen, never with one that arrived after it.
        tokio::select! {
            biased;
            ev = input.next() => {
                let msg = match ev {
                    Some(Ok(e)) => crate::app::input::msg(e),
                    Some(Err(e)) => break Err(e),
                    // The terminal is gone: leave the host as it is.
                    None => break Ok(Some(gone("this terminal closed"))),
                };
                let m = match msg {
                    Some(Msg::Key(key)) => ClientMsg::Key { key, seen },
                    Some(Msg::Mouse(mouse)) => ClientMsg::Mouse { mouse, seen },
                    Some(Msg::Paste(mut text)) => {
                        let cut = switchboard_core::text::cut_bytes(&mut text, PASTE_MAX);
                        ClientMsg::Paste { text, seen, cut }
                    }
                    Some(Msg::Resize(cols, rows)) => ClientMsg::Resize { cols, rows },
                    _ => continue,
                };
                send(&mut wr, &m).await?;
            }
            _ = sigterm.recv() => break Ok(Some(gone("terminated"))),
            _ = sighup.recv() => break Ok(Some(gone("this terminal hung up"))),
            f = frames.recv() => match f {
                Some(Ok(Some(Frame::Output(bytes)))) => {
                    let mut out = stdout();
                    out.write_all(&bytes)?;
                    out.flush()?;
                }
                Some(Ok(Some(Frame::Json(v)))) => match serde_json::from_value::<HostMsg>(v) {
                    Ok(HostMsg::Page { text }) => {
                        // The pager owns this terminal meanwhile: no event reader may steal
                        // its keys.
                        drop(input);
                        let paged = crate::app::term::page(&text);
                        TerminalGuard::resume()?;
                        input = EventStream::new();
                        paged?;
                        send(&mut wr, &ClientMsg::Repaint).await?;
                    }
                    Ok(HostMsg::Drawn { seq }) => {
                        // Its output is written and flushed above: the frame is on this
                        // terminal now, and its cards' settle time starts (issue 38).
                        seen = seq;
                        send(&mut wr, &ClientMsg::Shown { seq }).await?;
                    }
                    Ok(HostMsg::Bye { reason, lines }) => {
                        break Ok(Some(Ended { reason, lines, lost: false }));
                    }
                    Ok(other) => tracing::warn!("attach: unexpected {other:?}"),
                    Err(e) => break Err(io::Error::new(io::ErrorKind::InvalidData, e)),
                },
                Some(Ok(Some(Frame::Event(_)))) => tracing::warn!("attach: a hook event from the host"),
                Some(Err(e)) => break Err(e),
                Some(Ok(None)) | None => break Ok(None),
            },
        }
    };
    reader.abort();
    ended
}

fn gone(reason: &str) -> Ended {
    Ended {
        reason: reason.to_string(),
        lines: Vec::new(),
        lost: false,
    }
}

async fn send(wr: &mut OwnedWriteHalf, m: &ClientMsg) -> io::Result<()> {
    wire::write_msg(wr, m).await
}
