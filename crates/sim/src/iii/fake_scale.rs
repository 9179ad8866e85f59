//! A busy world for the fake engine (the reconnect benchmark, issue #12): many root sessions
//! with realistic titles and turn states, one focused session with a long transcript, and held
//! calls spread over the sessions, each the `function_call` of its session's last assistant
//! message (so a gate card can show the full arguments), a fifth of them filesystem accesses.
//!
//! Messages follow the harness v1.8.25 transcript shapes (reference §5): user prompts;
//! assistant messages with thinking, text and `function_call` blocks whose arguments look like
//! real tool input (shell commands, file paths, whole files written); `function_result`
//! messages with test output and file contents, some of them long. Deterministic: the same
//! seed gives the same world (timestamps aside).

use serde_json::{Value, json};

use super::fake_world::World;
use switchboard_record::now_ms;

/// The id of the session holding the long transcript.
pub const FOCUSED: &str = "s-focus";
/// Its title (the workspace session's name).
pub const FOCUSED_TITLE: &str = "Split the billing service into crates";

/// How big the world is.
#[derive(Clone, Debug)]
pub struct Scale {
    /// Root sessions listed (the focused one included).
    pub sessions: usize,
    /// Messages in the focused session's transcript.
    pub focused_messages: usize,
    /// Held calls (pending approval records) over all sessions.
    pub approvals: usize,
    /// Messages in each other session: from 2 up to this.
    pub other_messages: usize,
    pub seed: u64,
}

/// splitmix64: small, fast, deterministic.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
}

/// A source of random numbers for the content makers below, so a bench's own generator can
/// make the same content (`benches/support/gen_remote.rs`).
pub trait Draw {
    fn next(&mut self) -> u64;
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi.saturating_sub(lo) + 1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.range(0, from.len() - 1)]
    }
}

impl Draw for Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

const VERBS: &[&str] = &[
    "Fix",
    "Refactor",
    "Add tests for",
    "Document",
    "Speed up",
    "Review",
    "Migrate",
    "Debug",
    "Clean up",
    "Port",
];
const THINGS: &[&str] = &[
    "the invoice exporter",
    "the auth middleware",
    "flaky integration tests",
    "the CSV importer",
    "the rate limiter",
    "the search indexer",
    "the webhook retries",
    "the onboarding emails",
    "the metrics dashboard",
    "the payment reconciler",
    "the CLI argument parser",
    "the cache eviction",
];
const FILES: &[&str] = &[
    "src/invoice/tax.rs",
    "src/invoice/export.rs",
    "src/auth/session.rs",
    "src/api/routes.rs",
    "crates/billing-core/src/lib.rs",
    "crates/billing-core/src/ledger.rs",
    "tests/reconcile.rs",
    "Cargo.toml",
    "README.md",
    "migrations/0042_split_ledger.sql",
];
const WORDS: &[&str] = &[
    "the",
    "ledger",
    "keeps",
    "invoices",
    "in",
    "one",
    "table",
    "and",
    "the",
    "exporter",
    "reads",
    "them",
    "twice;",
    "I'll",
    "move",
    "tax",
    "rounding",
    "into",
    "billing-core,",
    "then",
    "run",
    "the",
    "tests",
    "again.",
    "The",
    "failing",
    "case",
    "is",
    "a",
    "currency",
    "with",
    "three",
    "decimals.",
    // What real prose has and plain words lack: a non-ASCII letter and symbol, quotes (in
    // JSON, escapes; in a result that repeats JSON, escaped escapes).
    "→",
    "naïve",
    "\"quoted\"",
];

const CWD: &str = "/home/dev/billing";

/// Between `lo` and `hi` words of prose.
pub fn words(r: &mut impl Draw, lo: usize, hi: usize) -> String {
    let n = r.range(lo, hi);
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(r.pick(WORDS));
    }
    s
}

/// A file's worth of plausible Rust, `lines` long.
pub fn file_body(r: &mut impl Draw, lines: usize) -> String {
    let mut s = String::new();
    for i in 0..lines {
        match i % 7 {
            0 => s.push_str(&format!("/// {}\n", words(r, 8, 8))),
            1 => s.push_str(&format!(
                "pub fn round_{i}(amount: i64, scale: u32) -> i64 {{\n"
            )),
            5 => s.push_str("}\n"),
            _ => s.push_str(&format!(
                "    let v{i} = amount.checked_mul({}).unwrap_or(i64::MAX); // {}\n",
                r.range(2, 999),
                words(r, 4, 4)
            )),
        }
    }
    s
}

pub fn test_output(r: &mut impl Draw, lines: usize, failed: bool) -> String {
    let mut s = String::from(
        "   Compiling billing-core v0.4.2 (/home/dev/billing/crates/billing-core)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 7.41s\n     Running unittests src/lib.rs\n\n",
    );
    s.push_str(&format!("running {lines} tests\n"));
    for i in 0..lines {
        let ok = !(failed && i == lines / 2);
        s.push_str(&format!(
            "test ledger::tests::rounds_{}_{i} ... {}\n",
            r.pick(&["eur", "usd", "jpy", "kwd", "bhd"]),
            if ok { "ok" } else { "FAILED" }
        ));
    }
    s.push_str(&format!(
        "\ntest result: {}. {} passed; {} failed; 0 ignored\n",
        if failed { "FAILED" } else { "ok" },
        lines - usize::from(failed),
        usize::from(failed)
    ));
    s
}

/// One function call: (function id, arguments).
pub fn call(r: &mut impl Draw) -> (&'static str, Value) {
    let file = format!("{CWD}/{}", r.pick(FILES));
    match r.range(0, 9) {
        0..=2 => (
            "shell::exec",
            json!({"command": r.pick(&[
                "cargo test -p billing-core --lib 2>&1 | tail -n 60",
                "cargo clippy --all-targets -- -D warnings",
                "git diff --stat HEAD~1",
                "rg -n 'round_half_even' crates/ src/",
                "cargo build --release && ./target/release/billing export --month 2026-11",
            ]), "cwd": CWD, "timeout_ms": 120_000}),
        ),
        3..=5 => ("filesystem::read", json!({"path": file})),
        6 => {
            let lines = r.range(20, 160);
            (
                "filesystem::write",
                json!({"path": file, "content": file_body(r, lines)}),
            )
        }
        7 | 8 => (
            "filesystem::edit",
            json!({"path": file, "old_string": "amount / 100", "new_string": "amount.div_euclid(100)",
                   "replace_all": r.chance(30)}),
        ),
        _ => (
            "web::fetch",
            json!({"url": "https://docs.rs/rust_decimal/latest/rust_decimal/struct.Decimal.html",
                   "max_bytes": 65_536}),
        ),
    }
}

pub fn result_text(r: &mut impl Draw, function_id: &str, args: &Value) -> (String, bool) {
    let long = r.chance(6);
    match function_id {
        "shell::exec" => {
            let failed = r.chance(15);
            let n = if long {
                r.range(150, 400)
            } else {
                r.range(3, 25)
            };
            (test_output(r, n, failed), failed)
        }
        "filesystem::read" => {
            let n = if long {
                r.range(200, 600)
            } else {
                r.range(10, 60)
            };
            (file_body(r, n), false)
        }
        "filesystem::write" => (
            format!(
                "wrote {} bytes to {}",
                args["content"].as_str().map_or(0, str::len),
                args["path"].as_str().unwrap_or("")
            ),
            false,
        ),
        "filesystem::edit" => (
            format!("1 replacement in {}", args["path"].as_str().unwrap_or("")),
            false,
        ),
        _ => {
            let n = if long { 300 } else { 40 };
            (words(r, n, n), false)
        }
    }
}

fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

pub fn assistant(content: Vec<Value>, stop_reason: &str, r: &mut impl Draw) -> Value {
    json!({"role": "assistant", "content": content, "stop_reason": stop_reason,
           "model": "claude-sonnet-4-5", "provider": "anthropic", "timestamp": now_ms(),
           "usage": {"input": r.range(2_000, 90_000), "output": r.range(40, 1_800),
                     "cache_read": r.range(0, 60_000), "cache_write": 0}})
}

/// Appends `count` messages of turns to `session` (user prompt, then steps of an assistant
/// message with calls and their results, then a closing answer); `calls` numbers the calls.
fn transcript(w: &mut World, r: &mut Rng, session: &str, count: usize, calls: &mut u64) {
    let mut left = count;
    while left > 0 {
        w.append(
            session,
            json!({"role": "user", "content": text(&format!("{} {}", r.pick(VERBS), words(r, 6, 40))),
                   "timestamp": now_ms()}),
        );
        left -= 1;
        let steps = r.range(1, 6);
        for _ in 0..steps {
            if left == 0 {
                return;
            }
            let mut content = Vec::new();
            if r.chance(40) {
                content.push(json!({"type": "thinking", "text": words(r, 20, 120),
                                    "signature": format!("sig{:016x}", r.next())}));
            }
            content.push(json!({"type": "text", "text": words(r, 8, 60)}));
            let n = r.range(1, 3);
            let mut made = Vec::new();
            for _ in 0..n {
                *calls += 1;
                let id = format!("call_{:04x}{:08x}", *calls, r.next() as u32);
                let (f, args) = call(r);
                content.push(json!({"type": "function_call", "id": id, "function_id": f,
                                    "arguments": args}));
                made.push((id, f, args));
            }
            w.append(session, assistant(content, "function_call", r));
            left -= 1;
            for (id, f, args) in made {
                if left == 0 {
                    return;
                }
                let (t, is_error) = result_text(r, f, &args);
                w.append(
                    session,
                    json!({"role": "function_result", "function_call_id": id, "function_id": f,
                           "content": text(&t), "details": {"duration_ms": r.range(5, 40_000)},
                           "is_error": is_error, "timestamp": now_ms()}),
                );
                left -= 1;
            }
        }
        if left == 0 {
            return;
        }
        w.append(
            session,
            assistant(
                vec![json!({"type": "text", "text": words(r, 20, 200)})],
                "end",
                r,
            ),
        );
        left -= 1;
    }
}

/// Most held filesystem calls wait on an access outside the session's root: the request
/// that says which (a card of its own kind).
pub fn access_request(r: &mut impl Draw, function_id: &str, args: &Value) -> Option<Value> {
    if !(function_id.starts_with("filesystem::") && r.chance(60)) {
        return None;
    }
    let path = args["path"].as_str().unwrap_or(CWD).to_string();
    let root = path.rsplit_once('/').map_or("/", |(d, _)| d).to_string();
    Some(json!({"requested_root": root, "attempted_path": path, "error_code": "S215"}))
}

/// The session's last message: an assistant message whose `held` calls wait on the gate;
/// each gets its pending record.
fn hold_calls(w: &mut World, r: &mut Rng, session: &str, held: usize, calls: &mut u64) {
    let mut content = vec![json!({"type": "text", "text": words(r, 8, 40)})];
    let mut made = Vec::new();
    for _ in 0..held {
        *calls += 1;
        let id = format!("call_{:04x}{:08x}", *calls, r.next() as u32);
        let (f, args) = call(r);
        content.push(json!({"type": "function_call", "id": id, "function_id": f,
                            "arguments": args}));
        made.push((id, f, args));
    }
    w.append(session, assistant(content, "function_call", r));
    for (id, f, args) in made {
        let excerpt: String = args.to_string().chars().take(160).collect();
        let mut extra = json!({"arguments_excerpt": excerpt});
        if let Some(access) = access_request(r, f, &args) {
            extra["kind"] = json!("filesystem_access");
            extra["access_request"] = access;
        }
        w.hold(session, &id, f, extra);
    }
}

/// Builds the world `scale` describes.
pub fn build(scale: &Scale) -> World {
    let mut w = World::empty();
    let mut r = Rng(scale.seed);
    let n = scale.sessions.max(1);
    // Held calls per session: two in the focused one, the rest one each on every third
    // session (then again round the list while some are left).
    let mut held = vec![0usize; n];
    held[0] = scale.approvals.min(2);
    let mut left = scale.approvals - held[0];
    let others: Vec<usize> = (1..n).step_by(3).collect();
    let mut k = 0;
    while left > 0 {
        let i = if others.is_empty() {
            0
        } else {
            others[k % others.len()]
        };
        held[i] += 1;
        left -= 1;
        k += 1;
    }
    let now = now_ms();
    let mut calls = 0u64;
    for (i, &h) in held.iter().enumerate() {
        let (id, title) = if i == 0 {
            (FOCUSED.to_string(), FOCUSED_TITLE.to_string())
        } else {
            (
                format!("s-{i:04}"),
                format!("{} {}", r.pick(VERBS), r.pick(THINGS)),
            )
        };
        let created = now.saturating_sub((n - i) as u64 * 90_000);
        w.new_session(&id, &title, None, created);
        let count = if i == 0 {
            scale.focused_messages
        } else {
            r.range(2, scale.other_messages.max(2))
        };
        let body = count.saturating_sub(usize::from(h > 0));
        transcript(&mut w, &mut r, &id, body, &mut calls);
        if h > 0 {
            hold_calls(&mut w, &mut r, &id, h, &mut calls);
        } else {
            let status = match r.range(0, 19) {
                0..=9 => "completed",
                10..=13 => "running",
                14..=16 => "cancelled",
                _ => "failed",
            };
            if status != "running" {
                w.end_turn(&id, status);
            }
        }
    }
    w
}

/// What changed while a client was offline (`churn`): `(session, call)` pairs.
#[derive(Clone, Debug)]
pub struct Churn {
    /// A held call answered elsewhere: its gate must disappear.
    pub resolved: (String, String),
    /// A call held meanwhile: its gate must appear.
    pub held: (String, String),
    /// Appended to the focused session's first and last messages meanwhile: the re-read must
    /// show both rows with it.
    pub edited: String,
}

/// Another console works while a client is away: the oldest held call outside the focused
/// session is allowed (its session's turn completes), and a new call is held in a session of
/// `scale` that held none. `round` varies the session and the call.
pub fn churn(w: &mut World, scale: &Scale, round: u64) -> Option<Churn> {
    let mut cursor = Value::Null;
    let mut oldest = None;
    for _ in 0..1_000 {
        let (page, _) = w.handle(
            "approval::list-pending",
            &json!({"limit": 500, "cursor": cursor}),
        )?;
        let page = page.ok()?;
        oldest = page["pending"]
            .as_array()?
            .iter()
            .find(|r| r["session_id"] != FOCUSED)
            .map(|r| {
                (
                    r["session_id"].as_str().unwrap_or("").to_string(),
                    r["function_call_id"].as_str().unwrap_or("").to_string(),
                )
            });
        match page.get("next_cursor") {
            Some(c) if oldest.is_none() => cursor = c.clone(),
            _ => break,
        }
    }
    let resolved = oldest?;
    let (answer, _) = w.handle(
        "approval::resolve",
        &json!({"session_id": resolved.0, "function_call_id": resolved.1, "decision": "allow"}),
    )?;
    answer.ok()?;
    // Sessions 2, 5, 8… hold nothing in `build` (unless there are more calls than sessions).
    let free = (scale.sessions.saturating_sub(2)).div_ceil(3).max(1);
    let session = format!("s-{:04}", 2 + 3 * (round as usize % free));
    let mut r = Rng(scale.seed ^ round.wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut calls = 0x1_0000 + round * 16;
    hold_calls(w, &mut r, &session, 1, &mut calls);
    let (st, _) = w.handle("harness::status", &json!({"session_id": session}))?;
    let call = st.ok()?["pending_function_calls"]
        .as_array()?
        .last()?
        .as_str()?
        .to_string();
    let edited = format!(" [edited elsewhere, round {round}]");
    if !(w.edit_text(FOCUSED, 0, false, &edited) && w.edit_text(FOCUSED, 0, true, &edited)) {
        return None;
    }
    Some(Churn {
        resolved,
        held: (session, call),
        edited,
    })
}

/// The scale model's constructors of a world (kept here, so the world does not know them).
impl World {
    /// A busy engine for the reconnect benchmark: see this module.
    pub fn scaled(scale: &Scale) -> World {
        build(scale)
    }

    /// Another console answers one held call and a new one is held (see `churn`).
    pub fn churn(&mut self, scale: &Scale, round: u64) -> Option<Churn> {
        churn(self, scale, round)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scale() -> Scale {
        Scale {
            sessions: 20,
            focused_messages: 300,
            approvals: 10,
            other_messages: 12,
            seed: 7,
        }
    }

    #[test]
    fn the_scaled_world_has_the_sizes_asked_for() {
        let mut w = build(&scale());
        w.set_pending_page_cap(4);
        let (l, _) = w.handle("session::list", &json!({"limit": 500})).unwrap();
        assert_eq!(l.unwrap()["sessions"].as_array().unwrap().len(), 20);
        let (m, _) = w
            .handle(
                "session::messages",
                &json!({"session_id": FOCUSED, "limit": 500}),
            )
            .unwrap();
        let m = m.unwrap();
        let msgs = m["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 300);
        // The held calls are the function_call blocks of the last message.
        let last = &msgs[299]["message"];
        assert_eq!(last["role"], "assistant");
        let blocks = last["content"].as_array().unwrap();
        let held: Vec<&str> = blocks
            .iter()
            .filter(|b| b["type"] == "function_call")
            .map(|b| b["id"].as_str().unwrap())
            .collect();
        assert_eq!(held.len(), 2);
        // Every result answers a call made before it.
        let mut made = std::collections::HashSet::new();
        for e in msgs {
            let m = &e["message"];
            for b in m["content"].as_array().unwrap() {
                if b["type"] == "function_call" {
                    assert!(made.insert(b["id"].as_str().unwrap().to_string()));
                }
            }
            if m["role"] == "function_result" {
                assert!(made.contains(m["function_call_id"].as_str().unwrap()));
            }
        }
        // Ten records in pages of at most four, whatever the limit asked.
        let mut cursor = Value::Null;
        let mut records = Vec::new();
        let mut pages = 0;
        loop {
            let (p, _) = w
                .handle(
                    "approval::list-pending",
                    &json!({"limit": 500, "cursor": cursor}),
                )
                .unwrap();
            let p = p.unwrap();
            let page = p["pending"].as_array().unwrap();
            assert!(page.len() <= 4);
            records.extend(page.iter().cloned());
            pages += 1;
            match p.get("next_cursor") {
                Some(c) => cursor = c.clone(),
                None => break,
            }
        }
        assert_eq!(pages, 3);
        assert_eq!(records.len(), 10);
        assert!(
            records
                .iter()
                .filter(|r| r["session_id"] == FOCUSED)
                .map(|r| r["function_call_id"].as_str().unwrap())
                .eq(held.iter().copied())
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_transcripts() {
        let text_of = |mut w: World| {
            let (m, _) = w
                .handle(
                    "session::messages",
                    &json!({"session_id": FOCUSED, "limit": 500}),
                )
                .unwrap();
            let mut m = m.unwrap();
            for e in m["messages"].as_array_mut().unwrap() {
                if let Some(o) = e["message"].as_object_mut() {
                    o.remove("timestamp");
                }
            }
            m.to_string()
        };
        let a = text_of(build(&scale()));
        assert_eq!(a, text_of(build(&scale())));
        let mut other = scale();
        other.seed = 8;
        assert_ne!(a, text_of(build(&other)));
    }

    #[test]
    fn churn_answers_one_held_call_and_holds_another() {
        let sc = scale();
        let mut w = build(&sc);
        let held = |w: &mut World| -> Vec<(String, String)> {
            let (p, _) = w
                .handle("approval::list-pending", &json!({"limit": 500}))
                .unwrap();
            p.unwrap()["pending"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r["session_id"].as_str().unwrap().to_string(),
                        r["function_call_id"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        };
        let before = held(&mut w);
        let c = churn(&mut w, &sc, 1).unwrap();
        let after = held(&mut w);
        assert_eq!(before.len(), after.len());
        assert!(before.contains(&c.resolved) && !after.contains(&c.resolved));
        assert!(!before.contains(&c.held) && after.contains(&c.held));
        assert_ne!(c.resolved.0, FOCUSED);
        assert_ne!(churn(&mut w, &sc, 2).unwrap().held, c.held);
    }
}
