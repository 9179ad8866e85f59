//! The commands this channel started, watched while they run: each tick reads what each
//! one printed since the last (through its `Watch`, never the engine's lock), so its row
//! shows the output and then the exit status whether or not the host ever polls.
//!
//! Each tick costs the bytes that arrived (at most `effect::SHOWN` per command: a flood
//! skips to its newest bytes) plus one row update per command that changed. A row keeps
//! the last `SHOWN` bytes, sanitized.

use super::effect::{SHOWN, clip_tail};
use super::engine::Out;
use super::tools::exec::{Status, Watch};
use switchboard_core::text::sanitize;

/// Commands watched at once; the exec table runs at most `MAX_RUNNING` (16) per channel, so
/// this is never reached by a well-behaved channel. Past it the oldest watch is dropped (its
/// row keeps what it showed).
pub const MAX_WATCHED: usize = 64;

/// How often the session task reads the commands' output.
pub const TICK: std::time::Duration = std::time::Duration::from_millis(200);

struct Watched {
    session: String,
    command_id: String,
    command: String,
    watch: Watch,
    /// The output offset read up to.
    offset: usize,
    /// The bytes of a character split across reads (at most 3).
    pending: Vec<u8>,
    /// Sanitized output kept for the row (trimmed to `SHOWN` when it reaches twice that).
    shown: String,
    /// Older output is not in `shown`.
    cut: bool,
}

#[derive(Default)]
pub struct Watcher {
    cmds: Vec<Watched>,
}

impl Watcher {
    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    /// Watch a command started for conversation `session`.
    pub fn add(&mut self, session: &str, command_id: &str, command: &str, watch: Watch) {
        if self.cmds.len() >= MAX_WATCHED {
            self.cmds.remove(0);
        }
        self.cmds.push(Watched {
            session: session.to_string(),
            command_id: command_id.to_string(),
            command: command.to_string(),
            watch,
            offset: 0,
            pending: Vec::new(),
            shown: String::new(),
            cut: false,
        });
    }

    /// What changed since the last tick: one `Out::Output` per command with new output or
    /// an end; ended commands are not watched any more.
    pub fn poll(&mut self) -> Vec<Out> {
        let mut out = Vec::new();
        self.cmds.retain_mut(|w| {
            let r = w.watch.read(w.offset, SHOWN);
            let ended = r.status != Status::Running;
            if r.bytes.is_empty() && !ended {
                return true;
            }
            if r.skipped {
                // A flood: what was kept is no longer followed by what comes next.
                w.shown.clear();
                w.pending.clear();
                w.cut = true;
            }
            w.offset = r.next;
            w.pending.extend_from_slice(&r.bytes);
            let keep = if ended {
                0
            } else {
                incomplete_suffix(&w.pending)
            };
            let done = w.pending.len() - keep;
            w.shown
                .push_str(&sanitize(&String::from_utf8_lossy(&w.pending[..done])));
            w.pending.drain(..done);
            if w.shown.len() >= 2 * SHOWN {
                w.shown = clip_tail(&w.shown).to_string();
                w.cut = true;
            }
            out.push(Out::Output {
                session: w.session.clone(),
                command_id: w.command_id.clone(),
                command: w.command.clone(),
                status: r.status,
                output: clip_tail(&w.shown).to_string(),
                cut: w.cut || w.shown.len() > SHOWN,
            });
            !ended
        });
        out
    }
}

/// How many bytes at the end of `b` begin a UTF-8 character that is not complete yet.
fn incomplete_suffix(b: &[u8]) -> usize {
    for back in 1..=b.len().min(3) {
        let x = b[b.len() - back];
        if x & 0xC0 == 0x80 {
            continue; // a continuation byte: its lead is further back
        }
        let need = match x {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if need > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::exec::Commands;
    use serde_json::{Map, Value, json};
    use std::time::{Duration, Instant};
    use switchboard_backend::contain::Root;

    #[test]
    fn a_split_character_waits_for_its_end() {
        let e = "é".as_bytes();
        assert_eq!(incomplete_suffix(&[b'a', e[0]]), 1);
        assert_eq!(incomplete_suffix(&[b'a', e[0], e[1]]), 0);
        let euro = "€".as_bytes();
        assert_eq!(incomplete_suffix(&euro[..2]), 2);
        assert_eq!(incomplete_suffix(b"abc"), 0);
        assert_eq!(incomplete_suffix(b""), 0);
    }

    fn run(cmds: &mut Commands, root: &Root, command: &str) -> Watch {
        let owner = ("w".to_string(), "s".to_string());
        let mut args = Map::new();
        args.insert("command".into(), Value::String(command.into()));
        let id = Commands::new_id();
        let v = cmds.exec(root, owner, &id, &args).unwrap();
        assert_eq!(v["commandId"], json!(id));
        cmds.watch(&id).unwrap()
    }

    fn until_done(w: &mut Watcher) -> Vec<Out> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut all = Vec::new();
        while !w.is_empty() {
            assert!(Instant::now() < deadline, "the command ended");
            all.extend(w.poll());
            std::thread::sleep(Duration::from_millis(10));
        }
        all
    }

    /// Output and the exit status arrive without any poll by a host; control characters are
    /// shown visibly; the watch ends with the command.
    #[test]
    fn a_command_is_followed_to_its_end() {
        let dir = std::env::temp_dir().join(format!("sb-gw-watch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let root = Root::open(&dir).unwrap();
        let mut cmds = Commands::default();
        let watch = run(
            &mut cmds,
            &root,
            r"printf 'hello\n\033]0;x\007'; sleep 0.3; printf 'é\n'; exit 3",
        );
        let mut w = Watcher::default();
        w.add("s", "c1", "printf …", watch);
        let all = until_done(&mut w);
        let Some(Out::Output {
            status,
            output,
            cut,
            session,
            ..
        }) = all.last()
        else {
            panic!("{all:?}");
        };
        assert_eq!(session, "s");
        assert_eq!(status, &Status::Exited(3));
        assert_eq!(output, "hello\n^[]0;x^Gé\n");
        assert!(!cut);
        assert!(
            all.iter().any(|o| matches!(o, Out::Output { status: Status::Running, output, .. } if output.starts_with("hello"))),
            "the output showed while the command ran: {all:?}"
        );
        assert!(w.poll().is_empty(), "an ended command is not watched");
    }

    /// A flood keeps the newest `SHOWN` bytes and says older ones are cut.
    #[test]
    fn a_flood_keeps_its_tail() {
        let dir = std::env::temp_dir().join(format!("sb-gw-flood-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let root = Root::open(&dir).unwrap();
        let mut cmds = Commands::default();
        let watch = run(&mut cmds, &root, "seq 1 100000; echo END");
        let mut w = Watcher::default();
        w.add("s", "c1", "seq", watch);
        let all = until_done(&mut w);
        for o in &all {
            let Out::Output { output, .. } = o else {
                panic!()
            };
            assert!(output.len() <= SHOWN);
        }
        let Some(Out::Output { output, cut, .. }) = all.last() else {
            panic!()
        };
        assert!(cut);
        assert!(
            output.ends_with("100000\nEND\n"),
            "{}",
            &output[output.len() - 40..]
        );
    }
}
