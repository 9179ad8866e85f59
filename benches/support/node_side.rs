//! Side by side with the strongest peer (issue 25): Node's `JSON.parse`, read the way the
//! TypeScript SDK reads (`benches/node_parse.mjs`), against switchboard's live ingest and its
//! replay of a realistic recording, each in the same run.
//!
//! The replay is measured in a child process of this bench (`--replay-pass FILE`) so its peak
//! memory is the replay's alone: from launch to the last frame drawn, `End` pressed at the first
//! frame, as a user opening a long recording does.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use switchboard::record::{Dir, Recorder};
use switchboard::replay::player::Player;
use switchboard::ui::theme::Theme;

use super::generator::{AcpGen, ClaudeGen, Rng};

/// What Node measured on one file.
#[derive(Debug, Default)]
pub struct NodeRun {
    pub lines: f64,
    pub ns_per_line: f64,
    pub seconds: f64,
}

/// Run `benches/node_parse.mjs MODE FILE`. Err says why Node could not be run.
pub fn node(mode: &str, file: &Path) -> Result<NodeRun, String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/node_parse.mjs");
    let out = Command::new("node")
        .arg(script)
        .arg(mode)
        .arg(file)
        .output()
        .map_err(|e| {
            format!("node cannot be run ({e}): install Node.js (the real agents need it too)")
        })?;
    if !out.status.success() {
        return Err(format!(
            "node failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("node printed no result: {e}"))?;
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Ok(NodeRun {
        lines: f("lines"),
        ns_per_line: f("ns_per_line"),
        seconds: f("seconds"),
    })
}

/// Write `lines` protocol lines one per line (the stream Node and live ingest both read).
pub fn write_stream(path: &Path, lines: &[String]) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    f.flush().unwrap();
}

/// Write a recording of `n` frames of `backend` exactly as a live session's recorder does
/// (the real `Recorder`: header, keys, escaping), with timestamps a few milliseconds apart.
pub fn write_recording(path: &Path, backend: &str, n: usize) {
    let kind = switchboard::core::BackendKind::from_name(backend).expect("a backend name");
    let mut r = Recorder::create(path, kind, &[backend.to_string()], "/w").unwrap();
    let mut rng = Rng::new(11);
    let mut ts = 1_764_900_000_000u64;
    let mut tick = |rng: &mut Rng| {
        ts += rng.range(0, 12) as u64;
        ts
    };
    match backend {
        "gateway" => {
            for l in super::gen_remote::GatewayGen::new(5).take(n) {
                record_remote(&mut r, tick(&mut rng), l);
            }
        }
        "iii" => {
            for l in super::gen_remote::IiiGen::new(5).take(n) {
                record_remote(&mut r, tick(&mut rng), l);
            }
        }
        "acp" => {
            for l in AcpGen::new(5).take(n) {
                let dir = if l.out { Dir::Out } else { Dir::In };
                r.record_at(tick(&mut rng), dir, &l.line).unwrap();
            }
        }
        _ => {
            // The CLI's stdout, and after each turn's result the next prompt we sent (as the
            // encoder writes it), so the replay reads both directions as it does a real one.
            let mut written = 0;
            let mut turn = 0;
            for l in ClaudeGen::new(3) {
                if written == n {
                    break;
                }
                r.record_at(tick(&mut rng), Dir::In, &l).unwrap();
                written += 1;
                if l.contains(r#""type":"result""#) && written < n {
                    turn += 1;
                    let prompt =
                        format!("Next step {turn}: run the \"tests\" again\nand fix what fails.");
                    let out = switchboard::backend::claude::encode::user_turn(&prompt);
                    r.record_at(tick(&mut rng), Dir::Out, &out).unwrap();
                    written += 1;
                }
            }
        }
    }
}

fn record_remote(r: &mut Recorder, ts: u64, l: super::gen_remote::RecLine) {
    use super::gen_remote::Way;
    let dir = match l.way {
        Way::In => Dir::In,
        Way::Out => Dir::Out,
        Way::Note => Dir::Note,
    };
    r.record_at(ts, dir, &l.line).unwrap();
}

/// The child's side: open `file`, press `End` at the first frame, work until the last frame
/// is drawn. Prints `frames seconds peak_rss_bytes`.
pub fn replay_pass_child(file: &str) {
    let theme = Theme::dark();
    let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap();
    let t = Instant::now();
    let mut player = Player::open_path(Path::new(file), None).unwrap();
    player.draw(&mut term, &theme).unwrap();
    let total = player.total();
    // `End` as the key handler does it, then the run loop's slices until the last frame is on
    // screen (the copies prepared afterwards for stepping back are not waited for).
    player.key(switchboard::core::input::KeyEvent::from(
        switchboard::core::input::KeyCode::End,
    ));
    let at = |p: &Player| p.state().replay.as_ref().map_or(0, |r| r.frame);
    while at(&player) < total {
        if player.only_waiting() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        player.work(std::time::Duration::from_millis(8));
    }
    player.draw(&mut term, &theme).unwrap();
    let secs = t.elapsed().as_secs_f64();
    // Every gate of a generated recording is answered soon after it opens: one opened
    // long before the last frame and still waiting is a replay that lost track of its gates
    // (an iii replay did, past 10,000 of them). The last frames may hold a gate whose answer
    // the cut of the recording left out.
    let cutoff = player.frame(total.saturating_sub(1000)).ts.unwrap_or(0);
    let lost = player
        .state()
        .sessions
        .iter()
        .flat_map(|s| s.gates.iter())
        .filter(|g| g.opened_ms < cutoff)
        .count();
    if lost > 0 {
        eprintln!(
            "{lost} gate(s) opened more than 1000 frames before the last still waiting, where every one is answered"
        );
        std::process::exit(1);
    }
    let at = player.state().replay.as_ref().map_or(0, |r| r.frame);
    assert_eq!(at, total, "the replay reached its last frame");
    // Then step back from the last frame, key to frame drawn, the copies prepared between
    // presses being idle time as between a person's presses.
    let mut back = 0f64;
    for _ in 0..3 {
        player.finish_work();
        let pos = player.state().replay.as_ref().map_or(0, |r| r.frame);
        let t = Instant::now();
        // `,` steps one frame back.
        player.key(switchboard::core::input::KeyEvent::from(
            switchboard::core::input::KeyCode::Char(','),
        ));
        player.draw(&mut term, &theme).unwrap();
        back = back.max(t.elapsed().as_secs_f64());
        let now = player.state().replay.as_ref().map_or(0, |r| r.frame);
        assert_eq!(now + 1, pos, "one step back");
    }
    println!(
        "{total} {secs} {} {}",
        peak_rss().unwrap_or(0),
        back * 1000.0
    );
}

fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: u64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// One replay pass in a child process, then three steps back: (frames, seconds to the last
/// frame, peak RSS bytes, the slowest step back in ms).
pub fn replay_pass(file: &Path) -> Result<(usize, f64, u64, f64), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(exe)
        .arg("--replay-pass")
        .arg(file)
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or("");
    let mut w = last.split_whitespace();
    match (w.next(), w.next(), w.next(), w.next()) {
        (Some(n), Some(s), Some(r), Some(b)) if out.status.success() => Ok((
            n.parse().map_err(|_| last.to_string())?,
            s.parse().map_err(|_| last.to_string())?,
            r.parse().map_err(|_| last.to_string())?,
            b.parse().map_err(|_| last.to_string())?,
        )),
        _ => Err(format!(
            "the replay pass failed: {}{}",
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// A scratch path for this run.
pub fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("switchboard-bench-{}-{name}", std::process::id()))
}
