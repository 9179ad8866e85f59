//! Settle time (issue 38 item 1), the built binary on ptys: a card's answer keys act only once
//! that card, as it is now, has been on the terminal's screen for 300 ms. A `y` typed within
//! 100 ms of a card appearing (`g y` as one chord, the next gate taking the card, a card
//! replaced after another client answered) does nothing and the footer says so; the same `y`
//! 400 ms later answers. `[keys] settle_ms = 0` restores answering at once.
//!
//! Keys here are typed with `send_now` (no pause, no second press) so a held key stays held.

use std::path::Path;
use std::time::{Duration, Instant};

#[path = "support/place.rs"]
mod place;
#[path = "support/pty.rs"]
mod pty;

use place::Place;
use pty::{HELD, STEP, Tui};

/// Past the settle time.
const SETTLED: Duration = Duration::from_millis(400);
/// A held key is not sent: nothing may reach the agent for this long after it.
const QUIET: Duration = Duration::from_millis(250);

/// The demo in a place's own cwd, and the answers it was sent.
trait SettlePlace {
    fn demo(&self, extra: &[&str]) -> Tui;
    fn answers(&self) -> Vec<serde_json::Value>;
    fn wait_answers(&self, n: usize, tui: &Tui);
}

impl SettlePlace for Place {
    fn demo(&self, extra: &[&str]) -> Tui {
        let cwd = self.base.join("cwd");
        std::fs::create_dir_all(&cwd).unwrap();
        let cwd = cwd.display().to_string();
        let mut args = vec!["demo", "--cwd", cwd.as_str()];
        args.extend_from_slice(extra);
        self.tui(&args, &[])
    }

    /// Answers switchboard sent the agent so far (outbound `control_response`s).
    fn answers(&self) -> Vec<serde_json::Value> {
        answers_sent(&self.base)
    }

    fn wait_answers(&self, n: usize, tui: &Tui) {
        let t = Instant::now();
        while self.answers().len() < n {
            assert!(
                t.elapsed() < STEP,
                "waiting for answer {n}, sent {:?}\n{}",
                self.answers(),
                tui.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Nothing more than `n` answers for `QUIET`, and the footer says why.
fn held(p: &Place, n: usize, tui: &Tui) {
    tui.wait_for(&[HELD], Duration::from_secs(5));
    std::thread::sleep(QUIET);
    assert_eq!(
        p.answers().len(),
        n,
        "a held key answered\n{}",
        tui.screen()
    );
}

/// The card of the gate after the first: the demo's Edit permission or its Grep breakpoint.
fn next_card(tui: &Tui) -> String {
    let t = Instant::now();
    loop {
        let s = tui.screen();
        if !s.contains("wants to run touch demo-output.txt")
            && (s.contains("src/auth.rs") || s.contains("fn authenticate"))
            && s.contains("[y]")
        {
            return s;
        }
        assert!(t.elapsed() < STEP, "waiting for the next card\n{s}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// In one terminal: `g y` typed as one chord does not approve the oldest gate unread; `y`
/// after the settle time does. Then the next gate takes the card: a `y` at once is held,
/// the same `y` 400 ms later answers it.
#[test]
fn a_key_on_a_card_just_shown_is_held_then_acts() {
    let p = Place::new("settle", "local");
    let mut tui = p.demo(&[]);
    tui.wait(&["touch demo-output.txt", "1 waiting"]);
    assert_eq!(p.answers().len(), 0);
    tui.send_now(b"gy");
    held(&p, 0, &tui);
    // The card is still up, unanswered.
    assert!(tui.screen().contains("[y]"), "{}", tui.screen());
    std::thread::sleep(SETTLED);
    tui.send_now(b"y");
    p.wait_answers(1, &tui);
    assert_eq!(
        p.answers()[0]["response"]["behavior"],
        "allow",
        "{:?}",
        p.answers()
    );
    // The next gate takes the card: a key within 100 ms of it appearing is held.
    next_card(&tui);
    tui.send_now(b"y");
    held(&p, 1, &tui);
    // Navigation is never held (and clears the word).
    tui.send_now(b"\x1b[B");
    tui.wait_gone(&[HELD], Duration::from_secs(5));
    std::thread::sleep(SETTLED);
    tui.send_now(b"y");
    p.wait_answers(2, &tui);
    tui.quit();
}

/// `[keys] settle_ms = 0`: the chord answers at once, as before the settle time.
#[test]
fn settle_ms_zero_answers_at_once() {
    let p = Place::new("settle", "zero");
    std::fs::write(p.base.join("config.toml"), "[keys]\nsettle_ms = 0\n").unwrap();
    let mut tui = p.demo(&[]);
    tui.wait(&["touch demo-output.txt", "1 waiting"]);
    tui.send_now(b"gy");
    p.wait_answers(1, &tui);
    next_card(&tui);
    tui.send_now(b"y");
    p.wait_answers(2, &tui);
    assert!(!tui.screen().contains(HELD), "{}", tui.screen());
    tui.quit();
}

/// Two terminals on one host. A host client's `g y` is held as a terminal's is. Then with two
/// gates waiting, A answers the card both show; B's card is replaced by the other gate at
/// once, and B's `y` within 100 ms of its terminal drawing it is held (measured from the
/// frame drawn for B); 400 ms later it answers.
#[test]
fn a_card_replaced_after_another_client_answered_is_held() {
    let p = Place::new("settle", "host");
    let mut a = p.demo(&["--name", p.name]);
    a.wait(&["touch demo-output.txt", "1 waiting"]);
    let mut b = p.tui(&["attach", p.name], &[]);
    b.wait(&["touch demo-output.txt", "1 waiting"]);
    a.send_now(b"gy");
    held(&p, 0, &a);
    std::thread::sleep(SETTLED);
    a.send_now(b"y");
    p.wait_answers(1, &a);
    // Two gates wait (the Edit permission and the Grep breakpoint); both terminals show the
    // oldest on the card.
    b.wait(&["2 waiting"]);
    b.send_now(b"g");
    let first = card_title(&b.wait(&["[y]"]));
    std::thread::sleep(SETTLED);
    assert_eq!(card_title(&a.screen()), first, "{}", a.screen());
    a.send_now(b"y");
    p.wait_answers(2, &a);
    // B's card shows the other gate: its `y` at once is held.
    let t = Instant::now();
    while card_title(&b.screen()) == first || !b.screen().contains("[y]") {
        assert!(t.elapsed() < STEP, "B's card not replaced\n{}", b.screen());
        std::thread::sleep(Duration::from_millis(10));
    }
    b.send_now(b"y");
    held(&p, 2, &b);
    std::thread::sleep(SETTLED);
    b.send_now(b"y");
    p.wait_answers(3, &b);
    let o = p.run(&["stop", p.name]);
    assert!(o.status.success(), "{o:?}");
}

/// The card's title row (the line under the card's top border), trimmed.
fn card_title(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    lines
        .iter()
        .position(|l| l.starts_with("┌ ‖"))
        .and_then(|i| lines.get(i + 1))
        .map(|l| {
            l.trim_matches(|c: char| c == '│' || c.is_whitespace())
                .to_string()
        })
        .unwrap_or_default()
}

/// The answers switchboard sent in every recording under `data`: the outbound
/// `control_response` frames (to permission requests and hook callbacks alike).
fn answers_sent(data: &Path) -> Vec<serde_json::Value> {
    let Ok(dir) = std::fs::read_dir(data.join("recordings")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        if e.path().extension().and_then(|x| x.to_str()) != Some("jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        for line in text.lines() {
            let Ok(entry) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if entry["dir"] != "out" {
                continue;
            }
            let Some(frame) = entry["line"]
                .as_str()
                .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            else {
                continue;
            };
            if frame["type"] == "control_response" {
                out.push(frame["response"].clone());
            }
        }
    }
    out
}
