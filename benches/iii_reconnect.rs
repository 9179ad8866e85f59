//! iii reconnect (issue #12, Benchmark): a reconnect to an engine with 200 sessions listed, the
//! focused one holding 2,000 messages, 50 pending approvals; time to a usable screen and
//! memory.
//!
//! Everything is the real path: the in-process fake engine (a WebSocket server on
//! 127.0.0.1:0) serves a scaled world (`fake_scale`: realistic titles and turn states,
//! transcripts of prompts, assistant messages with thinking, text and `function_call` blocks,
//! results with test output and whole files, some long; the held calls are the last message's
//! calls, a fifth of them filesystem accesses; `approval::list-pending` pages by 20 so the
//! listing follows cursors). `switchboard iii`'s own app runs against it: `IiiBackend` (client,
//! mapper, one workspace session per root) inside the `App` with its reducer, driven by the
//! TUI's loop (backend messages drained in 8 ms slices, frames at most every 16.7 ms) drawing
//! into a 200x50 `TestBackend` instead of a terminal.
//!
//! A **usable screen** is the first frame drawn once all of these hold:
//! - the engine connection reads `Live` (registered, every binding acknowledged);
//! - all 200 roots are workspace sessions and each reads `live` (the mapper's re-read is
//!   over: session list, tree, status, metrics and every transcript page answered, and the
//!   events buffered meanwhile applied);
//! - the focused session shows every row of its 2,000 messages (counted from the engine's
//!   transcript with the mapper's rules), and after a reconnect its first and last messages,
//!   edited on the engine while we were away, show the edit (the re-read sends only the
//!   entries that changed);
//! - the inbox holds exactly the engine's held calls: 50, including the one held while we were
//!   away and not the one answered elsewhere meanwhile.
//!
//! Measured: the first connect (from the app's start) and the reconnect after the engine drops
//! the socket (from the drop, which includes the client's 250–312 ms backoff, and from the new
//! connection's WebSocket handshake, the part switchboard controls). Memory: VmRSS after the
//! first usable screen and after the last reconnect, over the baseline taken with the engine
//! and its world in memory but before the app starts; VmHWM (the peak).
//!
//! `cargo bench --bench iii_reconnect` runs the full sizes, prints every figure and each target
//! with PASS/FAIL, and exits 1 on a miss. Without `--bench` (as a test target, under
//! `cargo test --all-targets`) it runs small sizes as a smoke check that fails only on a
//! broken screen, never on a time. Arguments after `--`: `--sessions N`, `--messages M`,
//! `--approvals A`, `--runs R` (fresh apps), `--reconnects K` (per app), `--show`.

#[path = "support/checks.rs"]
mod checks;

use std::time::{Duration, Instant};

use switchboard::app::frames::{FRAME_INTERVAL, FrameScheduler};
use switchboard::app::headless::Headless;
use switchboard::app::{DRAIN_MAX, DRAIN_TIME};
use switchboard::backend::iii::session::{IiiBackend, IiiConfig};
use switchboard::core::state::State;
use switchboard::core::transcript::ItemKind;
use switchboard_sim::iii::fake_engine::{Churn, FOCUSED, FOCUSED_TITLE, FakeEngine, Scale, World};

use checks::Check;

const W: u16 = 200;
const H: u16 = 50;
/// `approval::list-pending` page size the fake engine enforces.
const PENDING_PAGE: usize = 20;
/// A run that is not usable by then is broken, not slow.
const GIVE_UP: Duration = Duration::from_secs(60);

fn status_kb(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// VmRSS of this process in MiB.
fn rss_mib() -> f64 {
    status_kb("VmRSS:").unwrap_or(0) as f64 / 1024.0
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe extern "C" {
    fn malloc_trim(pad: usize) -> i32;
}

/// VmRSS in MiB after glibc returned its free pages to the system: what is live, without the
/// allocator's fragmentation (the same as `rss_mib` where that is not glibc).
fn live_mib() -> f64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it has no preconditions.
    unsafe {
        malloc_trim(0);
    }
    rss_mib()
}

/// VmHWM (peak RSS) of this process in MiB.
fn hwm_mib() -> f64 {
    status_kb("VmHWM:").unwrap_or(0) as f64 / 1024.0
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn arg(name: &str) -> Option<usize> {
    let v: Vec<String> = std::env::args().collect();
    v.iter()
        .position(|a| a == name)
        .and_then(|i| v.get(i + 1))
        .and_then(|s| s.parse().ok())
}

/// (median, p95) of `v`.
fn summary(v: &[f64]) -> (f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let at = |p: usize| s[(s.len() * p / 100).min(s.len() - 1)];
    (at(50), at(95))
}

/// The rows the mapper shows for the engine's transcript of `session`: one per user message,
/// function result and `function_call` block; an assistant message adds its thinking and its
/// text when not empty.
fn expected_rows(engine: &FakeEngine, session: &str) -> usize {
    let mut rows = 0;
    let mut cursor = serde_json::Value::Null;
    loop {
        let page = engine
            .with_world(|w| {
                w.handle(
                    "session::messages",
                    &serde_json::json!({"session_id": session, "limit": 500, "cursor": cursor}),
                )
            })
            .and_then(|(r, _)| r.ok())
            .expect("the fake world reads transcripts");
        for e in page["messages"].as_array().into_iter().flatten() {
            let m = &e["message"];
            let blocks = m["content"].as_array().cloned().unwrap_or_default();
            let has = |t: &str| blocks.iter().any(|b| b["type"] == t);
            rows += match m["role"].as_str() {
                Some("assistant") => {
                    usize::from(has("thinking"))
                        + usize::from(has("text"))
                        + blocks
                            .iter()
                            .filter(|b| b["type"] == "function_call")
                            .count()
                }
                _ => 1,
            };
        }
        match page.get("next_cursor") {
            Some(c) => cursor = c.clone(),
            None => return rows,
        }
    }
}

fn info<'a>(s: &'a switchboard::core::state::SessionState, key: &str) -> Option<&'a str> {
    s.session
        .info
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn has_gate(state: &State, (session, call): &(String, String)) -> bool {
    let id = format!("iii:{session}:{call}");
    state
        .inbox()
        .iter()
        .any(|(_, _, g)| g.id == id || g.id.strip_prefix(&id).is_some_and(|r| r.starts_with('#')))
}

/// What the screen must show to be usable.
struct Goal {
    sessions: usize,
    approvals: usize,
    rows: usize,
    /// After a reconnect: what changed on the engine meanwhile.
    churn: Option<Churn>,
}

/// When each part of the goal first held, since the clock's start.
#[derive(Default, Debug, Clone, Copy)]
struct Phases {
    live: Option<f64>,
    listed: Option<f64>,
    synced: Option<f64>,
    rows: Option<f64>,
    gates: Option<f64>,
}

fn focused(state: &State) -> Option<&switchboard::core::state::SessionState> {
    state.sessions.iter().find(|s| s.name() == FOCUSED_TITLE)
}

fn focused_revs(state: &State) -> Option<(u32, u32)> {
    let t = &focused(state)?.tree.nodes.first()?.transcript;
    let mut rows = t.items.iter().filter(|i| is_message_row(&i.kind));
    let first = rows.next()?.rev;
    Some((first, rows.next_back().map_or(first, |i| i.rev)))
}

/// A row made from a transcript message (not a protocol line or a gate's audit line).
fn is_message_row(k: &ItemKind) -> bool {
    matches!(
        k,
        ItemKind::User { .. }
            | ItemKind::Assistant { .. }
            | ItemKind::Thinking { .. }
            | ItemKind::ToolCall { .. }
            | ItemKind::ToolResult { .. }
    )
}

/// The text a message row shows.
fn row_text(k: &ItemKind) -> Option<&str> {
    match k {
        ItemKind::User { text }
        | ItemKind::Assistant { text, .. }
        | ItemKind::Thinking { text, .. }
        | ItemKind::ToolResult { text, .. } => Some(text),
        ItemKind::ToolCall { input, .. } => Some(input),
        _ => None,
    }
}

impl Goal {
    /// Updates `p` with what holds now (at `t` ms); true when everything does.
    fn check(&self, state: &State, p: &mut Phases, t: f64) -> bool {
        let mark = |slot: &mut Option<f64>, ok: bool| {
            if ok {
                slot.get_or_insert(t);
            } else {
                *slot = None;
            }
            ok
        };
        let engine = state.sessions.first();
        let live = mark(
            &mut p.live,
            engine.and_then(|s| info(s, "connection")) == Some("Live"),
        );
        let roots = &state.sessions[1.min(state.sessions.len())..];
        let listed = mark(&mut p.listed, roots.len() == self.sessions);
        let synced = mark(
            &mut p.synced,
            listed && roots.iter().all(|s| info(s, "connection") == Some("live")),
        );
        let f = focused(state);
        let rows = f.and_then(|s| s.tree.nodes.first()).map_or(0, |n| {
            n.transcript
                .items
                .iter()
                .filter(|i| is_message_row(&i.kind))
                .count()
        });
        // After a reconnect the first and last messages were edited elsewhere: the re-read
        // must show both (and, since it sends only what changed, little else).
        let reread = match &self.churn {
            None => true,
            Some(c) => {
                f.and_then(|s| s.tree.nodes.first()).map_or(0, |n| {
                    n.transcript
                        .items
                        .iter()
                        .filter(|i| row_text(&i.kind).is_some_and(|t| t.contains(&c.edited)))
                        .count()
                }) == 2
            }
        };
        let rows_ok = mark(&mut p.rows, rows == self.rows && reread);
        let gates_ok = state.pending_total() == self.approvals
            && self
                .churn
                .as_ref()
                .is_none_or(|c| has_gate(state, &c.held) && !has_gate(state, &c.resolved));
        let gates = mark(&mut p.gates, gates_ok);
        live && listed && synced && rows_ok && gates
    }

    fn explain(&self, state: &State) -> String {
        let f = focused(state);
        let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
        for i in f
            .and_then(|s| s.tree.nodes.first())
            .into_iter()
            .flat_map(|n| n.transcript.items.iter())
        {
            let k = format!("{:?}", i.kind);
            let k = k.split([' ', '(', '{']).next().unwrap_or("").to_string();
            *kinds.entry(k).or_default() += 1;
        }
        format!(
            "rows by kind {kinds:?}; engine {:?}; {} roots of {} ({} live); focused rows {} of {} (revs {:?}); {} gates of {} (churn {:?})",
            state.sessions.first().and_then(|s| info(s, "connection")),
            state.sessions.len().saturating_sub(1),
            self.sessions,
            state.sessions[1.min(state.sessions.len())..]
                .iter()
                .filter(|s| info(s, "connection") == Some("live"))
                .count(),
            kinds
                .iter()
                .filter(|(k, _)| *k != "Audit" && *k != "Protocol")
                .map(|(_, n)| n)
                .sum::<usize>(),
            self.rows,
            focused_revs(state),
            state.pending_total(),
            self.approvals,
            self.churn
        )
    }
}

/// One measured wait for a usable screen.
struct Usable {
    /// From the clock's start to the usable frame drawn.
    total: f64,
    /// From the new connection's handshake to the usable frame drawn.
    from_handshake: f64,
    frames: usize,
    phases: Phases,
    /// Of `total`: drawing frames, and applying backend messages in the app (the rest is
    /// waiting for the source: client, mapper, engine).
    draw: f64,
    apply: f64,
}

/// The TUI's loop without a terminal (`app::term::run`): backend messages applied and drained
/// in slices, a frame drawn when due; stops at the first frame drawn with `goal` met.
async fn until_usable(
    h: &mut Headless,
    goal: &Goal,
    start: Instant,
    engine: &FakeEngine,
    handshakes_before: usize,
) -> Result<Usable, String> {
    let mut frames = FrameScheduler::new(FRAME_INTERVAL);
    let mut phases = Phases::default();
    let mut drawn = 0;
    let (mut draw, mut apply) = (0.0, 0.0);
    let deadline = tokio::time::Instant::now() + GIVE_UP;
    loop {
        tokio::select! {
            biased;
            () = frames.due(h.app.dirty) => {
                let t = ms(start.elapsed());
                let ready = goal.check(&h.app.state, &mut phases, t);
                let d = Instant::now();
                h.draw();
                draw += ms(d.elapsed());
                frames.drawn();
                h.app.dirty = false;
                drawn += 1;
                if ready {
                    let done = Instant::now();
                    let hs = engine.handshake_times();
                    let Some(&at) = hs.get(handshakes_before) else {
                        return Err("usable without a new handshake".into());
                    };
                    return Ok(Usable {
                        total: ms(done - start),
                        from_handshake: ms(done.saturating_duration_since(at)),
                        frames: drawn,
                        phases,
                        draw,
                        apply,
                    });
                }
            }
            m = h.app.next_backend() => match m {
                Some(m) => {
                    let a = Instant::now();
                    h.app.apply(m);
                    h.app.drain_backend_for(DRAIN_MAX, DRAIN_TIME);
                    apply += ms(a.elapsed());
                    if goal.check(&h.app.state, &mut phases, ms(start.elapsed())) {
                        // The next frame is the usable one.
                        h.app.dirty = true;
                    }
                }
                None => return Err(format!("the backend ended: {}", goal.explain(&h.app.state))),
            },
            () = tokio::time::sleep_until(deadline) => {
                return Err(format!("not usable after {GIVE_UP:?}: {}\n{}", goal.explain(&h.app.state), h.screen()));
            }
        }
    }
}

struct Sizes {
    scale: Scale,
    runs: usize,
    reconnects: usize,
}

#[derive(Default)]
struct Results {
    first: Vec<f64>,
    first_hs: Vec<f64>,
    first_phases: Vec<Phases>,
    re_drop: Vec<f64>,
    re_hs: Vec<f64>,
    re_phases: Vec<Phases>,
    frames: Vec<usize>,
    first_split: Vec<(f64, f64)>,
    re_split: Vec<(f64, f64)>,
    rss_base: f64,
    rss_first: f64,
    rss_last: f64,
    /// VmRSS after each reconnect of the first app.
    rss_each: Vec<f64>,
    /// The same after `malloc_trim`.
    live_each: Vec<f64>,
    live_first: f64,
    hwm: f64,
    screen: String,
}

/// One fresh engine and app: the first connect, then `reconnects` drops and reconnects.
async fn run(sizes: &Sizes, index: usize, res: &mut Results, show: bool) -> Result<(), String> {
    let sc = &sizes.scale;
    let mut world = World::scaled(sc);
    world.set_pending_page_cap(PENDING_PAGE);
    let engine = FakeEngine::start(0, world)
        .await
        .map_err(|e| format!("the fake engine did not start: {e}"))?;
    // The frames it received would count against the app's memory.
    engine.set_frame_log(false);
    let mut rows = expected_rows(&engine, FOCUSED);
    if index == 0 {
        res.rss_base = live_mib();
    }
    let backend = IiiBackend::new(IiiConfig {
        url: engine.url(),
        headers: Vec::new(),
        sessions: Vec::new(),
        record: None,
        argv: vec!["switchboard".into(), "iii".into()],
    });
    let start = Instant::now();
    let mut h = Headless::start(Box::new(backend), W, H);
    let goal = Goal {
        sessions: sc.sessions,
        approvals: sc.approvals,
        rows,
        churn: None,
    };
    let u = until_usable(&mut h, &goal, start, &engine, 0).await?;
    res.first.push(u.total);
    res.first_hs.push(u.from_handshake);
    res.first_phases.push(u.phases);
    res.first_split.push((u.draw, u.apply));
    res.frames.push(u.frames);
    // The human looks at the focused session.
    let i = h
        .app
        .state
        .sessions
        .iter()
        .position(|s| s.name() == FOCUSED_TITLE)
        .ok_or("the focused session is not open")?;
    h.app.state.select_session(i, 0);
    h.draw();
    if index == 0 {
        res.rss_first = rss_mib();
        res.live_first = live_mib();
    }
    for k in 0..sizes.reconnects {
        let handshakes = engine.handshake_times().len();
        let start = Instant::now();
        engine.drop_connections();
        // Another console works while we are away.
        let round = (index * sizes.reconnects + k) as u64 + 1;
        let churn = engine
            .with_world(|w| w.churn(sc, round))
            .ok_or("the engine world could not churn")?;
        // The answered call's session gained a result and a closing message; the focused
        // session's first and last messages were edited (an edit may add a text row).
        rows = rows.max(expected_rows(&engine, FOCUSED));
        let goal = Goal {
            sessions: sc.sessions,
            approvals: sc.approvals,
            rows,
            churn: Some(churn),
        };
        let u = until_usable(&mut h, &goal, start, &engine, handshakes).await?;
        res.re_drop.push(u.total);
        res.re_hs.push(u.from_handshake);
        res.re_phases.push(u.phases);
        res.re_split.push((u.draw, u.apply));
        if index == 0 {
            res.rss_each.push(rss_mib());
            res.live_each.push(live_mib());
        }
        res.frames.push(u.frames);
        if h.app.state.shown().name() != FOCUSED_TITLE {
            return Err(format!(
                "the reconnect moved the screen to {:?}",
                h.app.state.shown().name()
            ));
        }
    }
    if index == 0 {
        // Raw, before `live_mib` trimmed the heap.
        res.rss_last = res.rss_each.last().copied().unwrap_or(res.rss_first);
        res.hwm = hwm_mib();
        res.screen = h.screen();
        if !res.screen.contains(FOCUSED_TITLE) {
            return Err(format!(
                "the usable screen does not show the focused session:\n{}",
                res.screen
            ));
        }
        if show {
            println!(
                "--- the usable screen after the last reconnect\n{}",
                res.screen
            );
        }
    }
    h.quit().await;
    Ok(())
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let show = std::env::args().any(|a| a == "--show");
    let sizes = Sizes {
        scale: Scale {
            sessions: arg("--sessions").unwrap_or(if full { 200 } else { 12 }),
            focused_messages: arg("--messages").unwrap_or(if full { 2_000 } else { 150 }),
            approvals: arg("--approvals").unwrap_or(if full { 50 } else { 8 }),
            other_messages: 40,
            seed: 12,
        },
        runs: arg("--runs").unwrap_or(if full { 6 } else { 1 }),
        reconnects: arg("--reconnects").unwrap_or(if full { 5 } else { 2 }),
    };
    let sc = &sizes.scale;
    println!(
        "iii_reconnect ({}), on {} cores, load {}",
        if full { "full" } else { "smoke" },
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    println!(
        "{} sessions listed, the focused one {} messages, {} held calls (pages of {PENDING_PAGE}); {} fresh apps × {} reconnects",
        sc.sessions, sc.focused_messages, sc.approvals, sizes.runs, sizes.reconnects
    );
    let started = Instant::now();
    let mut res = Results::default();
    let mut broken: Vec<String> = Vec::new();
    for index in 0..sizes.runs {
        // A runtime per app: the engine's tasks and the app's end with it.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        if let Err(e) = rt.block_on(run(&sizes, index, &mut res, show && index == 0)) {
            broken.push(format!("run {index}: {e}"));
            break;
        }
        rt.shutdown_timeout(Duration::from_secs(5));
    }
    let mut checks: Vec<Check> = Vec::new();
    if broken.is_empty() {
        let phase = |v: &[Phases], f: fn(&Phases) -> Option<f64>| {
            summary(
                &v.iter()
                    .map(|p| f(p).unwrap_or(f64::NAN))
                    .collect::<Vec<_>>(),
            )
            .0
        };
        println!();
        println!("{:<66} {:>10} {:>10}", "measure (200x50)", "median", "p95");
        let row = |name: &str, v: &[f64]| {
            let (a, b) = summary(v);
            println!("{name:<66} {a:>7.0} ms {b:>7.0} ms");
        };
        row("first connect: app start → usable screen", &res.first);
        row("first connect: handshake → usable screen", &res.first_hs);
        row(
            "reconnect: socket dropped → usable screen (incl. backoff)",
            &res.re_drop,
        );
        row("reconnect: handshake → usable screen", &res.re_hs);
        println!(
            "  reconnect phases (median ms from the drop): live {:.0} · roots live {:.0} · focused rows re-read {:.0} · gates {:.0}",
            phase(&res.re_phases, |p| p.live),
            phase(&res.re_phases, |p| p.synced),
            phase(&res.re_phases, |p| p.rows),
            phase(&res.re_phases, |p| p.gates),
        );
        println!(
            "  first-connect phases (median ms from the start): live {:.0} · listed {:.0} · roots live {:.0} · focused rows {:.0} · gates {:.0}",
            phase(&res.first_phases, |p| p.live),
            phase(&res.first_phases, |p| p.listed),
            phase(&res.first_phases, |p| p.synced),
            phase(&res.first_phases, |p| p.rows),
            phase(&res.first_phases, |p| p.gates),
        );
        let split = |v: &[(f64, f64)]| {
            (
                summary(&v.iter().map(|x| x.0).collect::<Vec<_>>()).0,
                summary(&v.iter().map(|x| x.1).collect::<Vec<_>>()).0,
            )
        };
        let (fd, fa) = split(&res.first_split);
        let (rd, ra) = split(&res.re_split);
        println!(
            "  of which in the app (median ms): first connect drawing {fd:.0} · applying {fa:.0}; reconnect drawing {rd:.0} · applying {ra:.0}"
        );
        println!(
            "  frames drawn while loading: median {}",
            summary(&res.frames.iter().map(|&f| f as f64).collect::<Vec<_>>()).0
        );
        println!(
            "{:<66} {:>7.0} MiB",
            "VmRSS baseline (engine + world in memory, app not started, trimmed)", res.rss_base
        );
        println!(
            "{:<66} {:>7.0} MiB (+{:.0})",
            "VmRSS after the first usable screen",
            res.rss_first,
            res.rss_first - res.rss_base
        );
        println!(
            "{:<66} {:>7.0} MiB (+{:.0})",
            format!("VmRSS after {} reconnects", sizes.reconnects),
            res.rss_last,
            res.rss_last - res.rss_base
        );
        println!(
            "  VmRSS after each reconnect (MiB): {}",
            res.rss_each
                .iter()
                .map(|r| format!("{r:.0}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        println!(
            "  the same after malloc_trim (live memory): {:.0} after the first screen, then {}",
            res.live_first,
            res.live_each
                .iter()
                .map(|r| format!("{r:.0}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        println!("{:<66} {:>7.0} MiB", "VmHWM (peak)", res.hwm);
        println!();
        checks = vec![
            Check::at_most(
                "reconnect p95, handshake → usable screen",
                summary(&res.re_hs).1,
                "ms",
                1_000.0,
            ),
            Check::at_most(
                "reconnect p95, socket dropped → usable screen",
                summary(&res.re_drop).1,
                "ms",
                1_500.0,
            ),
            Check::at_most(
                "first connect p95, app start → usable screen",
                summary(&res.first).1,
                "ms",
                1_500.0,
            ),
            Check::at_most(
                "VmRSS growth at the first usable screen",
                res.rss_first - res.rss_base,
                "MiB",
                64.0,
            ),
            // Live memory (after `malloc_trim`): what the reconnects keep, not how glibc
            // happens to fragment the transient frames of 2,000 messages.
            Check::at_most(
                format!("live memory growth over {} reconnects", sizes.reconnects),
                res.live_each.last().copied().unwrap_or(f64::NAN) - res.live_first,
                "MiB",
                16.0,
            ),
        ];
    }
    checks::report("iii_reconnect", &checks, broken, full, started);
}
