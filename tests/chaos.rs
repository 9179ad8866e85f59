//! Bad input never panics: real recorded lines, cut and mangled, fed through both backends'
//! mappings and the reducer with random keys in between, and drawn after every step.

use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use switchboard::core::state::State;
use switchboard::core::{Msg, update};
use switchboard::replay::mapper::for_backend;
use switchboard::ui::theme::Theme;

/// A small deterministic generator (no dependency, same inputs every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn corpus(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return lines;
    };
    for e in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for l in text.lines().skip(1) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(l)
                && let Some(line) = v.get("line").and_then(|x| x.as_str())
            {
                lines.push(line.to_string());
            }
        }
    }
    lines
}

fn mangle(rng: &mut Lcg, line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    match rng.below(6) {
        0 => chars[..rng.below(chars.len() + 1)].iter().collect(),
        1 => {
            let mut c = chars.clone();
            for _ in 0..3 {
                if !c.is_empty() {
                    let i = rng.below(c.len());
                    c[i] = ['{', '}', '"', '\u{0}', 'é', '\u{1b}', ':', '['][rng.below(8)];
                }
            }
            c.into_iter().collect()
        }
        2 => line.replace("\"request_id\"", "\"request_idx\""),
        3 => line.replace("\"type\":\"", "\"type\":\"x_"),
        4 => format!("{line}{line}"),
        _ => line.to_string(),
    }
}

const KEYS: &[KeyCode] = &[
    KeyCode::Char('y'),
    KeyCode::Char('a'),
    KeyCode::Char('n'),
    KeyCode::Char('e'),
    KeyCode::Char('r'),
    KeyCode::Char(' '),
    KeyCode::Char(']'),
    KeyCode::Char('/'),
    KeyCode::Char('v'),
    KeyCode::Char('A'),
    KeyCode::Enter,
    KeyCode::Esc,
    KeyCode::Tab,
    KeyCode::Up,
    KeyCode::Down,
    KeyCode::Left,
    KeyCode::Right,
    KeyCode::PageUp,
    KeyCode::Backspace,
];

fn run(backend: &str, dir: &str, seed: u64) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let lines = corpus(&root);
    assert!(!lines.is_empty(), "no corpus in {}", root.display());
    let mut rng = Lcg(seed);
    let mut state = State::new(backend, "main", 0);
    state.reply_check = switchboard::backend::claude::session::reply_check;
    let mut mapper = for_backend(backend);
    let theme = Theme::dark();
    let mut term = Terminal::new(TestBackend::new(90, 28)).unwrap();
    for step in 0..1500 {
        let pick = rng.below(lines.len());
        let line = mangle(&mut rng, &lines[pick]);
        let events = if rng.below(4) == 0 {
            mapper.outbound(&line).0
        } else {
            mapper.inbound(&line)
        };
        for event in events {
            let _ = update(&mut state, Msg::Backend { at_ms: step, event });
        }
        for _ in 0..rng.below(3) {
            let k = KEYS[rng.below(KEYS.len())];
            let _ = update(&mut state, Msg::Key(KeyEvent::new(k, KeyModifiers::NONE)));
        }
        if state.quitting {
            state.quitting = false;
        }
        term.draw(|f| switchboard::ui::render(&state, &theme, f))
            .unwrap_or_else(|e| panic!("step {step}: {e:?}"));
    }
}

#[test]
fn mangled_claude_traffic_never_panics() {
    for seed in [1, 7, 42] {
        run("claude", "fixtures/recordings/claude", seed);
    }
}

#[test]
fn mangled_acp_traffic_never_panics() {
    for seed in [3, 11] {
        run("acp", "fixtures/recordings/acp", seed);
    }
}
