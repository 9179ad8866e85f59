//! `switchboard hook claude|codex`: the command a CLI's hook runs (installed by `hooks
//! install`). It reads one event from stdin, hands it to the running host over the host's
//! private socket, and prints the decision the CLI expects: for a PermissionRequest it waits
//! for the answer; any other event is sent and the hook exits once the host has taken it.
//!
//! Fail-safe, always: no host, a host that does not take the event within `ACCEPT`, a host
//! that dies while the hook waits, a malformed event or anything unexpected, and the hook
//! prints nothing and exits 0, so the CLI shows its own prompt. It never prints on stderr (a
//! CLI may show it in the agent's screen), never exits with another code (Codex reads 2 as a
//! deny), and never panics aloud. It runs before anything else the binary does (no runtime,
//! no logging, no argument parser): a hook must not slow the agent.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use switchboard_adopt::HookAgent;
use switchboard_backend::hooks::MAX_EVENT;
use switchboard_tui::host::{place, wire};

/// How long the host may take to take the event (and, for a PermissionRequest, to put its
/// card up) before the hook falls through to the CLI's own prompt.
pub const ACCEPT: Duration = Duration::from_millis(200);

/// The largest reply read from the host (a decision holds an edited input at most).
const MAX_REPLY: usize = 8 << 20;

/// Run the hook: always exit 0; stdout holds a decision or nothing.
pub fn main() -> std::process::ExitCode {
    // Nothing may reach stderr, a panic's message included.
    std::panic::set_hook(Box::new(|_| {}));
    // `args()` would panic, outside the catch below, on an argument that is not UTF-8.
    let agent = std::env::args_os()
        .nth(2)
        .and_then(|a| a.into_string().ok());
    if let Ok(Some(out)) = std::panic::catch_unwind(|| run(agent.as_deref())) {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(out.as_bytes());
        let _ = stdout.flush();
    }
    std::process::ExitCode::SUCCESS
}

#[derive(Deserialize)]
struct Head {
    hook_event_name: Option<String>,
}

/// The decision to print, or `None` (fall through).
fn run(agent: Option<&str>) -> Option<String> {
    let agent = HookAgent::from_name(agent?)?;
    let mut event = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_EVENT as u64 + 1)
        .read_to_end(&mut event)
        .ok()?;
    // Too big to read: the rest stays unread, the host is told the size and shows the refusal.
    let oversize = event.len() > MAX_EVENT;
    let waits = !oversize
        && serde_json::from_slice::<Head>(&event)
            .ok()
            .and_then(|h| h.hook_event_name)
            .as_deref()
            == Some("PermissionRequest");
    let dir = place::existing_runtime_dir()?;
    let mut stream = pick_host(&dir)?;
    let hello = wire::Hello {
        // Unchanged since the first version: a host of either takes it.
        version: wire::FIRST,
        want: wire::Want::Hook {
            agent: agent.name().to_string(),
            waits,
            size: if oversize {
                // (At least this many: the rest was not read.)
                MAX_EVENT as u64 + 1
            } else {
                event.len() as u64
            },
        },
    };
    let mut out = wire::json_frame(&hello);
    if !oversize {
        out.extend(wire::event_frame(&event));
    }
    deliver(&mut stream, &out, waits)
}

/// Hand `out` (the hello and the event) to the host on `stream`; then, for an event that
/// waits, the decision to print. The host has `ACCEPT` from here to take the event (and to
/// put a card up): one deadline for the write and the wait after it.
fn deliver(stream: &mut UnixStream, out: &[u8], waits: bool) -> Option<String> {
    let deadline = std::time::Instant::now() + ACCEPT;
    let left = || {
        deadline
            .checked_duration_since(std::time::Instant::now())
            .filter(|d| !d.is_zero())
    };
    stream.set_write_timeout(Some(ACCEPT)).ok()?;
    stream.write_all(out).ok()?;
    if !waits {
        if let Some(d) = left() {
            until_taken(stream, d);
        }
        return None;
    }
    // The card must be up by the deadline; then the answer may take as long as the person
    // does (the CLI's own timeout bounds it). A host that dies closes the socket: nothing
    // printed.
    stream.set_read_timeout(Some(left()?)).ok()?;
    match read_msg(stream)? {
        wire::HostMsg::HookAccepted => {}
        _ => return None,
    }
    stream.set_read_timeout(None).ok()?;
    match read_msg(stream)? {
        wire::HostMsg::HookDecision { stdout } => Some(stdout),
        _ => None,
    }
}

/// Wait (at most `limit`, what is left of `ACCEPT`) for the host to hang up, which it does
/// once the event is in its queue. Each hook event comes from its own process over its own connection, and the host
/// takes connections as they come: a turn's `Stop`, sent and forgotten, could reach it after
/// the next turn's permission request and be read as the agent moving past that card. The CLI
/// starts its next hook only when this one exits, so waiting here keeps the host's order the
/// CLI's own. A host that says anything instead, or nothing in time, ends the wait too (a
/// host whose queue stays full, one quitting say, costs each such hook `ACCEPT`).
fn until_taken(stream: &mut UnixStream, limit: Duration) {
    if stream.set_read_timeout(Some(limit)).is_ok() {
        let _ = stream.read(&mut [0u8; 1]);
    }
}

/// One JSON message from the host, or `None` (closed, timed out, anything else).
fn read_msg(s: &mut UnixStream) -> Option<wire::HostMsg> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let len = u32::from_be_bytes(len) as usize;
    if len == 0 || len > MAX_REPLY {
        return None;
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).ok()?;
    (body[0] == b'J')
        .then(|| serde_json::from_slice(&body[1..]).ok())
        .flatten()
}

/// The host hook events go to, as `switchboard hooks status` says it: the one `[hooks] host`
/// in config.toml names when it is running, else the only one running. With several running
/// and none of them named, nobody (the CLI's prompt decides; `hooks status` says why).
pub fn pick_host(dir: &Path) -> Option<UnixStream> {
    let names = place::names(dir);
    if names.is_empty() {
        return None;
    }
    // Read only when there is a choice to make: most hook calls find one host.
    let configured = if names.len() > 1 {
        configured_host()
    } else {
        None
    };
    route(&names, configured.as_deref(), |n| {
        connect(&place::socket_path(dir, n))
    })
}

/// `pick_host`'s choice among `names`, `connect` saying which hosts take a connection: the
/// named host when it does; else the only other one that does (a named host that is gone
/// leaves the events to the one that runs); else none.
fn route<C>(
    names: &[String],
    configured: Option<&str>,
    mut connect: impl FnMut(&str) -> Option<C>,
) -> Option<C> {
    if let Some(n) = configured.filter(|n| names.iter().any(|x| x == n))
        && let Some(c) = connect(n)
    {
        return Some(c);
    }
    let mut live = names
        .iter()
        .filter(|n| Some(n.as_str()) != configured)
        .filter_map(|n| connect(n));
    let first = live.next()?;
    live.next().is_none().then_some(first)
}

/// `[hooks] host` of config.toml, if set to a host name.
pub fn configured_host() -> Option<String> {
    let path = crate::config::config_file();
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(1 << 20)
        .read_to_string(&mut text)
        .ok()?;
    let t: toml::Table = toml::from_str(&text).ok()?;
    let name = t.get("hooks")?.get("host")?.as_str()?.to_string();
    place::check_name(&name).ok().map(|()| name)
}

/// Connect to a host's socket, giving up at once when it cannot take a connection (a host
/// that stopped accepting fills its backlog: a blocking connect would wait on it), and only to
/// a listener of our own uid.
pub fn connect(path: &Path) -> Option<UnixStream> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: a zeroed sockaddr_un is valid; the path is copied in bounds below.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.len() >= addr.sun_path.len() {
        return None;
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    // SAFETY: plain socket calls on a descriptor we own.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: fd is a fresh descriptor we own.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: addr is a valid sockaddr_un of `len` bytes.
    let r = unsafe { libc::connect(fd, (&raw const addr).cast(), len) };
    if r != 0 {
        // EAGAIN: its backlog is full; ECONNREFUSED: nobody listens (a crashed host's socket).
        return None;
    }
    let stream = UnixStream::from(owned);
    stream.set_nonblocking(false).ok()?;
    // SAFETY: getuid cannot fail.
    let ours = unsafe { libc::getuid() };
    let cred = peer_uid(&stream)?;
    (cred == ours).then_some(stream)
}

fn peer_uid(s: &UnixStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
    // SAFETY: a zeroed ucred is valid; getsockopt writes at most `len` bytes into it.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: as above, on a descriptor we own.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(cred.uid)
}

#[cfg(test)]
mod route_tests {
    use super::route;

    /// Where an event goes, with `live` the hosts that take a connection.
    fn to(names: &[&str], configured: Option<&str>, live: &[&str]) -> Option<String> {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        route(&names, configured, |n| {
            live.contains(&n).then(|| n.to_string())
        })
    }

    #[test]
    fn events_go_where_hooks_status_says() {
        // One running: it, whatever is named.
        assert_eq!(to(&["a"], None, &["a"]).as_deref(), Some("a"));
        assert_eq!(to(&["a", "b"], Some("b"), &["a"]).as_deref(), Some("a"));
        assert_eq!(to(&["a", "b"], Some("zz"), &["a"]).as_deref(), Some("a"));
        // Several running: the named one, else nobody.
        assert_eq!(
            to(&["a", "b"], Some("b"), &["a", "b"]).as_deref(),
            Some("b")
        );
        assert_eq!(to(&["a", "b"], None, &["a", "b"]), None);
        assert_eq!(to(&["a", "b", "c"], Some("c"), &["a", "b"]), None);
        // None running.
        assert_eq!(to(&["a", "b"], Some("a"), &[]), None);
        assert_eq!(to(&[], Some("a"), &["a"]), None);
    }
}

#[cfg(test)]
mod order_tests {
    use super::*;
    use std::time::Instant;

    /// An event that waits for no answer is written whole, then `deliver` stays until the
    /// host hangs up (the event is in its queue then), and no longer than `ACCEPT` in all
    /// when it does not.
    #[test]
    fn a_sent_event_waits_until_the_host_has_taken_it() {
        let (mut hook, mut host) = UnixStream::pair().unwrap();
        let taker = std::thread::spawn(move || {
            let mut got = [0u8; 5];
            host.read_exact(&mut got).unwrap();
            std::thread::sleep(Duration::from_millis(80));
            drop(host);
            got
        });
        let t = Instant::now();
        assert_eq!(deliver(&mut hook, b"event", false), None);
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(80), "{waited:?}");
        assert!(waited < ACCEPT, "{waited:?}");
        assert_eq!(&taker.join().unwrap(), b"event");

        // A host that never hangs up costs the agent `ACCEPT`, no more.
        let (mut hook, _host) = UnixStream::pair().unwrap();
        let t = Instant::now();
        assert_eq!(deliver(&mut hook, b"event", false), None);
        let waited = t.elapsed();
        assert!(waited >= ACCEPT - Duration::from_millis(5), "{waited:?}");
        assert!(waited < ACCEPT * 3, "{waited:?}");
    }
}
