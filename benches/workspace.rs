//! Workspace targets (issue 11, Benchmark): many sessions cost what one costs on screen, and
//! the gate inbox costs the gates, whatever the transcripts hold. Measured on realistic data:
//! each session is the Claude CLI's stdout from the seeded generator (`support/gen.rs`)
//! mapped by the real mapper and fed through `update`, ending on a message whose tool calls
//! wait on 10 `can_use_tool` requests; the sessions' requests arrive interleaved in time.
//!
//! `cargo bench --bench workspace` runs the full sizes, prints each figure (median, p99) and
//! every target with PASS/FAIL, and exits 1 when one is missed. Without `--bench` (as a test
//! target) the same code runs at small sizes as a smoke check and never fails on a time.
//!
//! 1. Frame time: a full `ui::render` into a 200x50 `TestBackend`, one word streamed into the
//!    shown session before each frame, for one session vs fifty (each N lines, 10 gates).
//! 2. `g` (the oldest gate anywhere, through `update`) and a frame with the inbox overlay,
//!    with fifty sessions × 10 gates at N/10 lines vs N lines each.
//! 3. Memory: VmRSS after building the fifty-session workspace.
//! 4. Ten times longer sessions (`--long` lines each, default 10 × N: about 260 sub-agents
//!    per session at 200k lines): a frame of fifty such sessions against one, and the inbox
//!    frame against the N-line workspace's. The tree pane's totals, the selected row's
//!    position and its window come from what the reducer keeps, so neither may grow.
//!
//! Arguments after `--`: `--lines N` (stream lines per session, default 20000), `--sessions
//! S` (default 50), `--frames F` (default 300), `--long L` (default 10 × N; 0 skips part 4).

#[path = "support/checks.rs"]
mod checks;
#[path = "support/gen.rs"]
mod generator;

use checks::Check;
use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use switchboard::backend::claude::mapping::Mapper;
use switchboard::core::input::{KeyCode, KeyEvent, KeyModifiers};
use switchboard::core::msg::BackendEvent;
use switchboard::core::state::{Focus, Overlay, SessionId};
use switchboard::core::transcript::ItemOp;
use switchboard::core::update::{row_index, row_totals, rows_from};
use switchboard::core::{Msg, State, update};
use switchboard::ui::theme::Theme;

use generator::ClaudeGen;

const W: u16 = 200;
const H: u16 = 50;
const GATES: usize = 10;

/// VmRSS of this process in bytes (`/proc/self/status`).
fn vm_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn pct(sorted: &[f64], p: usize) -> f64 {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

/// (median, p99) of `times`.
fn summary(mut times: Vec<f64>) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    (pct(&times, 50), pct(&times, 99))
}

fn feed(state: &mut State, session: SessionId, at_ms: u64, events: Vec<BackendEvent>) {
    for event in events {
        let _ = update(
            state,
            Msg::Backend {
                session,
                at_ms,
                event,
            },
        );
    }
}

/// A workspace of `sessions` Claude sessions, each `lines` lines of its own stream (seeded by
/// its index) then `GATES` pending permission requests; requests of all sessions arrive
/// round-robin, so the oldest gate is session 0's first. Everything goes through `update`.
fn build(sessions: usize, lines: usize) -> State {
    let mut state = State::new(switchboard::core::BackendKind::Claude, "s00", 0);
    let _ = update(&mut state, Msg::Resize(W, H));
    let mut ids = vec![SessionId::FIRST];
    for i in 1..sessions {
        ids.push(state.add_session(switchboard::core::BackendKind::Claude, &format!("s{i:02}")));
    }
    let mut clock = 0u64;
    let mut pending = Vec::with_capacity(sessions);
    for (i, &id) in ids.iter().enumerate() {
        let mut gen_ = ClaudeGen::new(1000 + i as u64);
        let mut mapper = Mapper::new(&[]);
        for line in gen_.by_ref().take(lines) {
            clock += 1;
            feed(&mut state, id, clock, mapper.on_line(&line).events);
        }
        let (lead, requests) = gen_.pending_gates(GATES);
        for line in lead {
            clock += 1;
            feed(&mut state, id, clock, mapper.on_line(&line).events);
        }
        pending.push((mapper, requests));
    }
    for k in 0..GATES {
        for (i, &id) in ids.iter().enumerate() {
            let (mapper, requests) = &mut pending[i];
            clock += 1;
            feed(&mut state, id, clock, mapper.on_line(&requests[k]).events);
        }
    }
    let _ = update(&mut state, Msg::Tick(clock + 90_000));
    state
}

/// Rows held across every node of every session.
fn rows(state: &State) -> usize {
    state
        .sessions
        .iter()
        .flat_map(|s| s.tree.nodes.iter())
        .map(|n| n.transcript.len())
        .sum()
}

fn stream_word(state: &mut State, i: usize) {
    let session = state.shown().id;
    feed(
        state,
        session,
        0,
        vec![BackendEvent::Item {
            node: None,
            op: ItemOp::AppendText {
                key: "live".into(),
                thinking: false,
                delta: format!("word{i} "),
            },
        }],
    );
}

fn terminal(state: &mut State, theme: &Theme) -> Terminal<TestBackend> {
    let mut term = Terminal::new(TestBackend::new(W, H)).unwrap();
    switchboard::ui::draw(&mut term, state, theme).unwrap();
    // Steady state, as `perf`: the shown transcript's height index complete.
    let iw = state.view.transcript_area.width.saturating_sub(1);
    let shown = state.shown();
    switchboard::ui::items::sync_heights(
        &shown.tree.nodes[state.selected_node].transcript,
        iw,
        theme,
        None,
    );
    term
}

/// A workspace and the terminal it draws into.
struct Rig {
    state: State,
    term: Terminal<TestBackend>,
}

impl Rig {
    fn new(mut state: State, theme: &Theme) -> Rig {
        let term = terminal(&mut state, theme);
        Rig { state, term }
    }

    /// One frame of the main view (ms), one word streamed into the shown session before it.
    fn frame(&mut self, theme: &Theme, i: usize) -> f64 {
        stream_word(&mut self.state, i);
        let t = Instant::now();
        switchboard::ui::draw(&mut self.term, &mut self.state, theme).unwrap();
        t.elapsed().as_secs_f64() * 1e3
    }

    /// `g` through `update` (µs) from session `from`, and whether it landed on the oldest gate.
    fn g(&mut self, from: usize) -> (f64, bool) {
        let oldest = {
            let inbox = self.state.inbox();
            let (_, i, g) = inbox.first().expect("the workspace has gates");
            (*i, g.id.clone())
        };
        let state = &mut self.state;
        state.select_session(from % state.sessions.len(), 0);
        state.focus = Focus::Tree;
        let t = Instant::now();
        let _ = update(
            state,
            Msg::Key(KeyEvent::new(KeyCode::Char('g'), KeyModifiers::NONE)),
        );
        let us = t.elapsed().as_secs_f64() * 1e6;
        let right = state.selected == oldest.0 && state.active_gate.as_deref() == Some(&oldest.1);
        (us, right)
    }

    /// One frame with the inbox overlay up (ms), its cursor on row `i` (wrapped).
    fn inbox_frame(&mut self, theme: &Theme, i: usize) -> f64 {
        self.state.overlay = Some(Overlay::Inbox);
        self.state.inbox.cursor = i % self.state.pending_total().max(1);
        let t = Instant::now();
        switchboard::ui::draw(&mut self.term, &mut self.state, theme).unwrap();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        self.state.overlay = None;
        ms
    }
}

/// What the tree pane asks of the state each frame: its totals, the selected row's
/// position and the rows of a 50-line window.
fn tree_pane(state: &State) -> usize {
    let totals = row_totals(state);
    let here = row_index(state, (state.selected, state.selected_node)).unwrap_or(0);
    let window = rows_from(state, here.saturating_sub(12)).take(27).count();
    totals.running + here + window
}

/// What the inbox overlay asks of the state each frame: the number of pending gates, the
/// gates of a 45-row window and the batch.
fn inbox_window(state: &State) -> usize {
    let total = state.inbox_len();
    let top = state
        .inbox
        .cursor
        .min(total.saturating_sub(1))
        .saturating_sub(44);
    let window = (top..total.min(top + 45))
        .filter_map(|k| state.inbox_at(k))
        .count();
    window + switchboard::core::update::workspace::batch(state).len()
}

/// Runs `a` and `b` alternately `n` times each, so both see the same load of a shared
/// machine; returns their times.
fn paired(
    n: usize,
    mut a: impl FnMut(usize) -> f64,
    mut b: impl FnMut(usize) -> f64,
) -> (Vec<f64>, Vec<f64>) {
    let (mut ta, mut tb) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        ta.push(a(i));
        tb.push(b(i));
    }
    (ta, tb)
}

fn arg(name: &str) -> Option<usize> {
    let v: Vec<String> = std::env::args().collect();
    v.iter()
        .position(|a| a == name)
        .and_then(|i| v.get(i + 1))
        .and_then(|s| s.parse().ok())
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let lines = arg("--lines").unwrap_or(if full { 20_000 } else { 2_000 });
    let small_lines = lines / 10;
    let n = arg("--sessions").unwrap_or(if full { 50 } else { 5 });
    let frames = arg("--frames").unwrap_or(if full { 300 } else { 10 });
    let presses = if full { 3_000 } else { 50 };
    let theme = Theme::dark();
    let started = Instant::now();
    println!(
        "workspace ({}), on {} cores, load {}",
        if full { "full" } else { "smoke" },
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    let mut broken: Vec<String> = Vec::new();

    // Memory first, before other workspaces leave freed pages with the allocator.
    let rss0 = vm_rss().unwrap_or(0);
    let t = Instant::now();
    let many = build(n, lines);
    let build_s = t.elapsed().as_secs_f64();
    let rss = vm_rss().unwrap_or(0);
    let many_rows = rows(&many);
    println!(
        "built {n} sessions × {lines} lines + {GATES} gates in {build_s:.1} s: {many_rows} rows, {} gates pending; VmRSS {:.0} MiB ({:.0} MiB over the start, {:.1} MiB per session, {:.0} B per line)",
        many.pending_total(),
        rss as f64 / 1048576.0,
        rss.saturating_sub(rss0) as f64 / 1048576.0,
        rss.saturating_sub(rss0) as f64 / 1048576.0 / n as f64,
        rss.saturating_sub(rss0) as f64 / (n * lines) as f64,
    );
    if many.pending_total() != n * GATES {
        broken.push(format!(
            "{} gates pending, {} expected",
            many.pending_total(),
            n * GATES
        ));
    }

    let mut many = Rig::new(many, &theme);
    let mut one = Rig::new(build(1, lines), &theme);
    let one_rows = rows(&one.state);
    let mut small = Rig::new(build(n, small_lines), &theme);
    let small_rows = rows(&small.state);

    // `--show`: the screens measured, to see what a frame draws.
    if std::env::args().any(|a| a == "--show") {
        for (name, rig) in [("one", &mut one), ("many", &mut many)] {
            rig.frame(&theme, 0);
            println!(
                "--- {name}\n{}",
                switchboard::ui::buffer_text(rig.term.backend().buffer())
            );
        }
        many.inbox_frame(&theme, 0);
        println!(
            "--- inbox\n{}",
            switchboard::ui::buffer_text(many.term.backend().buffer())
        );
    }
    let (one_t, many_t) = paired(frames, |i| one.frame(&theme, i), |i| many.frame(&theme, i));
    let (one_p50, one_p99) = summary(one_t);
    let (many_p50, many_p99) = summary(many_t);
    // One session leaves most of the tree pane empty; from a few sessions on it is full, so a
    // few against fifty shows what the number of sessions itself costs.
    let few = 5.min(n);
    let mut some = Rig::new(build(few, lines), &theme);
    let (some_t, many_t2) = paired(frames, |i| some.frame(&theme, i), |i| many.frame(&theme, i));
    let (some_p50, some_p99) = summary(some_t);
    let many2_p50 = summary(many_t2).0;
    drop(some);
    // The same history as `many` (a reply streamed word by word while it was measured), so
    // the two differ only in the transcripts' size.
    for i in 0..2 * frames {
        small.frame(&theme, i);
    }
    let landed = std::cell::Cell::new(true);
    let (g_s, g_b) = paired(
        presses,
        |k| {
            let (t, ok) = small.g(k * 7 + 1);
            landed.set(landed.get() && ok);
            t
        },
        |k| {
            let (t, ok) = many.g(k * 7 + 1);
            landed.set(landed.get() && ok);
            t
        },
    );
    let (g_small50, g_small99) = summary(g_s);
    let (g_big50, g_big99) = summary(g_b);
    if !landed.get() {
        broken.push("`g` did not land on the oldest gate".into());
    }
    let (ib_s, ib_b) = paired(
        frames,
        |i| small.inbox_frame(&theme, i * 37),
        |i| many.inbox_frame(&theme, i * 37),
    );
    let (ib_small50, ib_small99) = summary(ib_s);
    let (ib_big50, ib_big99) = summary(ib_b);

    // Where a frame's extra cost with many sessions goes: the parts that walk every session
    // (the tree's rows, every node of every session; the inbox, every gate), timed alone.
    let (rows_one, rows_many) = paired(
        presses,
        |_| {
            let t = Instant::now();
            std::hint::black_box(tree_pane(&one.state));
            t.elapsed().as_secs_f64() * 1e6
        },
        |_| {
            let t = Instant::now();
            std::hint::black_box(tree_pane(&many.state));
            t.elapsed().as_secs_f64() * 1e6
        },
    );
    let (inbox_s, inbox_b) = paired(
        presses,
        |_| {
            let t = Instant::now();
            std::hint::black_box(inbox_window(&small.state));
            t.elapsed().as_secs_f64() * 1e6
        },
        |_| {
            let t = Instant::now();
            std::hint::black_box(inbox_window(&many.state));
            t.elapsed().as_secs_f64() * 1e6
        },
    );
    let nodes = |s: &State| s.sessions.iter().map(|s| s.tree.nodes.len()).sum::<usize>();
    let (one_nodes, many_nodes) = (nodes(&one.state), nodes(&many.state));
    drop(one);
    drop(small);

    // 4. Ten times longer sessions: the tree pane used to walk every node of every session
    // each frame (its totals and the selected row's position), so these grew with length.
    let long = arg("--long").unwrap_or(if full { 10 * lines } else { 2 * lines });
    let mut long_rows = Vec::new();
    let mut long_checks = Vec::new();
    if long > 0 {
        let t = Instant::now();
        let mut long_many = Rig::new(build(n, long), &theme);
        let mut long_one = Rig::new(build(1, long), &theme);
        println!(
            "built {n} sessions and 1 session × {long} lines in {:.1} s: {} and {} nodes, {} rows",
            t.elapsed().as_secs_f64(),
            nodes(&long_many.state),
            nodes(&long_one.state),
            rows(&long_many.state),
        );
        let (lo, lm) = paired(
            frames,
            |i| long_one.frame(&theme, i),
            |i| long_many.frame(&theme, i),
        );
        let (lo50, lo99) = summary(lo);
        let (lm50, lm99) = summary(lm);
        // The same history as `many` (2 × frames words streamed) before the inbox pairing.
        for i in 0..frames {
            long_many.frame(&theme, frames + i);
        }
        let (ib_m, ib_l) = paired(
            frames,
            |i| many.inbox_frame(&theme, i * 37),
            |i| long_many.inbox_frame(&theme, i * 37),
        );
        let (ibm50, ibm99) = summary(ib_m);
        let (ibl50, ibl99) = summary(ib_l);
        let long_nodes = nodes(&long_many.state);
        long_rows.push((format!("frame, 1 session × {long} lines"), lo50, lo99));
        long_rows.push((
            format!("frame, {n} sessions × {long} lines ({long_nodes} nodes)"),
            lm50,
            lm99,
        ));
        long_rows.push((
            format!("inbox frame, {n}×{GATES} gates, {lines} lines each (again)"),
            ibm50,
            ibm99,
        ));
        long_rows.push((
            format!("inbox frame, {n}×{GATES} gates, {long} lines each"),
            ibl50,
            ibl99,
        ));
        long_checks.push(Check::at_most(
            format!("frame median, {n} sessions / 1 session, {long} lines"),
            lm50 / lo50,
            "x",
            1.3,
        ));
        long_checks.push(Check::at_most(
            format!("inbox frame median, {long} / {lines} lines per session"),
            ibl50 / ibm50,
            "x",
            1.3,
        ));
    }

    println!();
    println!("{:<58} {:>10} {:>10}", "measure (200x50)", "median", "p99");
    let row = |name: String, a: f64, b: f64, unit: &str| {
        println!("{name:<58} {a:>7.3} {unit:<2} {b:>7.3} {unit:<2}");
    };
    row(
        format!("frame, 1 session × {lines} lines ({one_rows} rows)"),
        one_p50,
        one_p99,
        "ms",
    );
    row(
        format!("frame, {n} sessions × {lines} lines ({many_rows} rows)"),
        many_p50,
        many_p99,
        "ms",
    );
    row(
        format!(
            "frame, {few} sessions × {lines} lines (against 50: {:.3}x)",
            many2_p50 / some_p50
        ),
        some_p50,
        some_p99,
        "ms",
    );
    row(
        format!("g, {n}×{GATES} gates, {small_lines} lines each ({small_rows} rows)"),
        g_small50,
        g_small99,
        "µs",
    );
    row(
        format!("g, {n}×{GATES} gates, {lines} lines each ({many_rows} rows)"),
        g_big50,
        g_big99,
        "µs",
    );
    row(
        format!("inbox frame, {n}×{GATES} gates, {small_lines} lines each"),
        ib_small50,
        ib_small99,
        "ms",
    );
    row(
        format!("inbox frame, {n}×{GATES} gates, {lines} lines each"),
        ib_big50,
        ib_big99,
        "ms",
    );
    let (a50, a99) = summary(rows_one);
    row(
        format!("  of which tree pane rows, 1 session ({one_nodes} nodes)"),
        a50,
        a99,
        "µs",
    );
    let (a50, a99) = summary(rows_many);
    row(
        format!("  of which tree pane rows, {n} sessions ({many_nodes} nodes)"),
        a50,
        a99,
        "µs",
    );
    let (a50, a99) = summary(inbox_s);
    row(
        format!("  of which inbox rows, {n}×{GATES} gates, {small_lines} lines each"),
        a50,
        a99,
        "µs",
    );
    let (a50, a99) = summary(inbox_b);
    row(
        format!("  of which inbox rows, {n}×{GATES} gates, {lines} lines each"),
        a50,
        a99,
        "µs",
    );
    for (name, a, b) in long_rows {
        row(name, a, b, "ms");
    }
    println!(
        "{:<58} {:>7.0} MiB",
        format!("VmRSS after building {n} sessions × {lines} lines"),
        rss as f64 / 1048576.0
    );
    println!();

    let mut checks = vec![
        Check::at_most(
            format!("frame median, {n} sessions / 1 session"),
            many_p50 / one_p50,
            "x",
            1.3,
        ),
        // "The same whatever the transcripts' size": within timing noise of a shared machine.
        Check::at_most(
            format!("g median, {lines} / {small_lines} lines per session"),
            g_big50 / g_small50,
            "x",
            1.2,
        ),
        Check::at_most(
            format!("inbox frame median, {lines} / {small_lines} lines per session"),
            ib_big50 / ib_small50,
            "x",
            1.2,
        ),
    ];
    checks.extend(long_checks);
    checks::report("workspace", &checks, broken, full, started);
}
