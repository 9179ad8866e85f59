//! iii held calls in the core's reducer, driven through iii's real mapper (no socket): the
//! deny asks for the reason the model reads and sends it as `approval::resolve`'s `reason`;
//! while the engine connection is down the session refuses every decision and rules wait for
//! the reconnect. They need the backend: what is tested is the mapper and the reducer
//! answering each other (the re-read, the buffered events, the calls the mapper makes). The
//! reducer's own tests are in `crates/core/src/update/tests/` (docs/architecture.md).

use serde_json::{Value, json};

use crate::mapping::{DEFAULT_DENY, Mapper, Out, OutCall};
use switchboard_core::gate::{Decision, GateKind};
use switchboard_core::input::KeyCode;
use switchboard_core::msg::{Command, Effect};
use switchboard_core::rules::{Origin, parse_spec_line};
use switchboard_core::state::{EditorPurpose, Focus, Overlay, State};
use switchboard_core::testing::{editor_purpose, editor_text, last_audit, press};
use switchboard_core::transcript::{ItemKind, Tone};
use switchboard_core::update;

const OFFLINE: &str = "offline: reconnecting to the engine; decisions are disabled";

/// One workspace session for iii root `s1`, its mapper, and an engine answering in memory.
struct Iii {
    s: State,
    m: Mapper,
    /// Held calls the engine lists.
    pending: Vec<Value>,
    /// Every call the mapper made.
    calls: Vec<OutCall>,
    now: u64,
}

impl Iii {
    fn new() -> Iii {
        let mut s = State::new(switchboard_core::BackendKind::Iii, "s1", 0);
        s.keeps_gates_on_quit = true;
        let mut x = Iii {
            s,
            m: Mapper::new("t"),
            pending: Vec::new(),
            calls: Vec::new(),
            now: 1_000,
        };
        let out = x.m.reconnected();
        x.apply(out);
        assert!(!x.m.syncing());
        x
    }

    fn engine(&mut self, c: &OutCall) -> Value {
        self.calls.push(c.clone());
        let p = &c.payload;
        match c.function_id.as_str() {
            "session::list" => {
                json!({"sessions": [{"session_id": "s1", "title": "Fix the build", "status": "working"}]})
            }
            // The transcript holds the calls' full arguments: the cards show them (a card
            // with only the redacted excerpt is never batched nor allowed by a rule).
            "session::messages" => json!({"messages": [
                {"entry_id": "e1", "message": {"role": "assistant", "stop_reason": "function_call", "content": [
                    {"type": "function_call", "id": "c1", "function_id": "shell::exec", "arguments": {"command": "rm -rf build"}},
                    {"type": "function_call", "id": "c2", "function_id": "shell::exec", "arguments": {"command": "rm -rf build"}},
                    {"type": "function_call", "id": "c3", "function_id": "shell::exec", "arguments": {"command": "rm -rf build"}}]}}]}),
            "approval::list-pending" => {
                let s = p.get("session_id").and_then(Value::as_str);
                let list: Vec<&Value> = self
                    .pending
                    .iter()
                    .filter(|r| s.is_none_or(|s| r["session_id"] == s))
                    .collect();
                json!({ "pending": list })
            }
            "approval::resolve" => {
                let call = p["function_call_id"].clone();
                self.pending.retain(|r| r["function_call_id"] != call);
                json!({"resolved": true, "turn_resumed": true})
            }
            f => crate::mapping::engine_answer(f, crate::mapping::Generation::Kebab),
        }
    }

    /// Apply the mapper's output: events into the reducer (its effects back to the mapper),
    /// calls answered by the engine, until nothing is left. The reducer's effects, in order.
    fn apply(&mut self, out: Out) -> Vec<Effect> {
        let mut fx = Vec::new();
        let mut queue: std::collections::VecDeque<Out> = [out].into();
        while let Some(out) = queue.pop_front() {
            for (root, event) in out.events {
                if root != "s1" {
                    continue;
                }
                let got = update(
                    &mut self.s,
                    switchboard_core::Msg::Backend {
                        session: switchboard_core::state::SessionId::FIRST,
                        at_ms: self.now,
                        event,
                    },
                );
                for e in &got {
                    if let Effect::Send(_, cmd) = e {
                        queue.push_back(self.m.command("s1", cmd, self.now));
                    }
                }
                fx.extend(got);
            }
            for c in out.calls {
                let r = self.engine(&c);
                queue.push_back(self.m.on_result(&c.function_id, &c.payload, &r, self.now));
            }
        }
        fx
    }

    /// A key press; what it sends reaches the mapper and the engine.
    fn key(&mut self, code: KeyCode) -> Vec<Effect> {
        let fx = press(&mut self.s, code);
        let mut all = fx.clone();
        for e in &fx {
            if let Effect::Send(_, cmd) = e {
                let out = self.m.command("s1", cmd, self.now);
                all.extend(self.apply(out));
            }
        }
        all
    }

    fn typ(&mut self, text: &str) {
        for c in text.chars() {
            assert_eq!(self.key(KeyCode::Char(c)), vec![], "typing {c:?}");
        }
    }

    /// The engine holds call `call` of `shell::exec`: its card opens. The card's id.
    fn hold(&mut self, call: &str) -> String {
        let r = json!({"session_id": "s1", "turn_id": "t1", "function_call_id": call,
            "function_id": "shell::exec", "kind": "function", "pending_at": 500,
            "arguments_excerpt": "{\"command\":\"rm -rf build\"}", "depth": 0});
        self.pending.push(r.clone());
        let out = self.m.on_event("approval::pending-created", &r, self.now);
        self.apply(out);
        self.s
            .gates
            .iter()
            .find(|g| g.id.ends_with(call))
            .map(|g| g.id.clone())
            .expect("the card opened")
    }

    fn resolves(&self) -> Vec<&Value> {
        self.calls
            .iter()
            .filter(|c| c.function_id == "approval::resolve")
            .map(|c| &c.payload)
            .collect()
    }

    fn offline(&mut self) {
        let out = self.m.offline();
        self.apply(out);
    }

    fn reconnect(&mut self) -> Vec<Effect> {
        let out = self.m.reconnected();
        self.apply(out)
    }
}

fn denies(fx: &[Effect]) -> Vec<String> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Send(
                _,
                Command::Answer {
                    decision: Decision::Deny { message, .. },
                    ..
                },
            ) => Some(message.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn iii_deny_asks_for_the_reason_the_model_reads() {
    let mut x = Iii::new();
    let id = x.hold("c1");
    assert_eq!(x.s.focus, Focus::Gate);
    let GateKind::Permission(p) = &x.s.gate(&id).unwrap().kind else {
        panic!()
    };
    assert_eq!(p.deny_reason.as_deref(), Some(DEFAULT_DENY));
    // The card says the deny asks first.
    let deny = p.choices().into_iter().find(|c| p.choice_key(*c) == 'n');
    assert!(p.choice_label(deny.unwrap()).ends_with('…'));
    // `n` opens the reason prompt; nothing is sent yet.
    assert_eq!(x.key(KeyCode::Char('n')), vec![]);
    assert_eq!(editor_purpose(&x.s), Some(EditorPurpose::DenyMessage));
    assert!(x.resolves().is_empty());
    x.typ("use rg, not rm");
    let fx = x.key(KeyCode::Enter);
    assert_eq!(denies(&fx), vec!["use rg, not rm".to_string()]);
    let r = x.resolves();
    assert_eq!(r.len(), 1);
    assert_eq!(
        *r[0],
        json!({"session_id": "s1", "function_call_id": "c1", "decision": "deny", "reason": "use rg, not rm"})
    );
    assert!(x.s.gates.is_empty());
    let (audit, tone) = last_audit(&x.s, 0);
    assert!(audit.starts_with("denied: shell::exec"), "{audit}");
    assert!(audit.ends_with("— use rg, not rm"), "{audit}");
    assert_eq!(tone, Tone::Denied);
}

#[test]
fn iii_deny_with_an_empty_reason_sends_the_default() {
    let mut x = Iii::new();
    x.hold("c1");
    // Enter on the highlighted deny option opens the prompt too (the first move highlights
    // the first option).
    x.key(KeyCode::Down);
    x.key(KeyCode::Down);
    x.key(KeyCode::Down);
    assert_eq!(x.key(KeyCode::Enter), vec![]);
    assert_eq!(editor_purpose(&x.s), Some(EditorPurpose::DenyMessage));
    x.typ("   ");
    let fx = x.key(KeyCode::Enter);
    assert_eq!(denies(&fx), vec![DEFAULT_DENY.to_string()]);
    assert_eq!(x.resolves()[0]["reason"], DEFAULT_DENY);
    // Esc backs out of the prompt without sending.
    let mut x = Iii::new();
    x.hold("c2");
    x.key(KeyCode::Char('n'));
    x.typ("no");
    assert_eq!(x.key(KeyCode::Esc), vec![]);
    assert!(x.resolves().is_empty());
    assert_eq!(x.s.gates.len(), 1);
}

#[test]
fn inbox_batch_deny_reason_reaches_iii() {
    let mut x = Iii::new();
    x.hold("c1");
    x.hold("c2");
    x.key(KeyCode::Esc);
    x.s.focus = Focus::Transcript;
    x.key(KeyCode::Char('I'));
    assert_eq!(x.s.overlay, Some(Overlay::Inbox));
    x.key(KeyCode::Char(' '));
    x.key(KeyCode::Char(' '));
    x.key(KeyCode::Char('n'));
    x.typ("wrong directory");
    let fx = x.key(KeyCode::Enter);
    assert_eq!(denies(&fx), vec!["wrong directory".to_string(); 2]);
    let reasons: Vec<&Value> = x.resolves().iter().map(|r| &r["reason"]).collect();
    assert_eq!(reasons, vec!["wrong directory", "wrong directory"]);
    // An empty batch reason sends iii's default, never an empty one.
    let mut x = Iii::new();
    x.hold("c3");
    x.key(KeyCode::Esc);
    x.s.focus = Focus::Transcript;
    x.key(KeyCode::Char('I'));
    x.key(KeyCode::Char(' '));
    x.key(KeyCode::Char('n'));
    x.key(KeyCode::Enter);
    assert_eq!(x.resolves()[0]["reason"], DEFAULT_DENY);
}

#[test]
fn a_deny_rule_sends_its_reason_to_iii() {
    let mut x = Iii::new();
    let spec = parse_spec_line("deny shell::exec").unwrap();
    x.s.rules.add(spec, Origin::Session);
    let r = json!({"session_id": "s1", "turn_id": "t1", "function_call_id": "c1",
        "function_id": "shell::exec", "pending_at": 500});
    let out = x.m.on_event("approval::pending-created", &r, x.now);
    x.apply(out);
    assert!(x.s.gates.is_empty(), "answered by the rule");
    let r = x.resolves();
    assert_eq!(r.len(), 1);
    let reason = r[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("Denied by a switchboard rule"),
        "{reason}"
    );
}

#[test]
fn offline_refuses_every_decision_and_keeps_the_card() {
    let mut x = Iii::new();
    let id = x.hold("c1");
    x.offline();
    assert_eq!(
        x.s.session.offline.as_deref(),
        Some("reconnecting to the engine")
    );
    assert_eq!(x.s.status_label(), "reconnecting to the engine");
    for c in ['y', 'a', 'n', 'r', 'A', 'e'] {
        assert_eq!(x.key(KeyCode::Char(c)), vec![], "{c}");
        assert_eq!(x.s.status_line.as_deref(), Some(OFFLINE), "{c}");
        assert_eq!(editor_purpose(&x.s), None, "{c} opened an editor");
    }
    assert_eq!(x.key(KeyCode::Enter), vec![]);
    // Moving in the card, searching and leaving it still work.
    x.key(KeyCode::Down);
    x.key(KeyCode::Down);
    assert_eq!(x.s.active_ui().unwrap().choice, 1);
    x.key(KeyCode::Tab);
    assert_ne!(x.s.focus, Focus::Gate);
    assert!(x.resolves().is_empty());
    assert_eq!(x.s.gates.len(), 1);
    assert_eq!(x.s.gates[0].id, id);
    // The inbox batch sends nothing either, and says why.
    x.s.focus = Focus::Transcript;
    x.key(KeyCode::Char('I'));
    x.key(KeyCode::Char(' '));
    assert_eq!(x.key(KeyCode::Char('y')), vec![]);
    let status = x.s.status_line.clone().unwrap();
    assert!(status.contains("1 not sent: offline"), "{status}");
    assert!(x.resolves().is_empty());
    // Its mark stays for when the session is back.
    assert_eq!(x.s.inbox.marked.len(), 1);
    // During the re-read it is still refused (the state on screen is the stale one).
    let out = x.m.reconnected();
    let events = Out {
        events: out.events,
        ..Out::default()
    };
    x.apply(events);
    assert_eq!(
        x.s.session.offline.as_deref(),
        Some("reconnected, re-reading the engine")
    );
    x.key(KeyCode::Esc);
    x.s.overlay = None;
    switchboard_core::update::workspace::jump_to(&mut x.s, 0, &id);
    assert_eq!(x.key(KeyCode::Char('y')), vec![]);
    // The re-read finishes: the card works again.
    x.apply(Out {
        calls: out.calls,
        ..Out::default()
    });
    assert_eq!(x.s.session.offline, None);
    assert_eq!(x.s.status_label(), "waiting on you");
    let fx = x.key(KeyCode::Char('y'));
    assert_eq!(fx.len(), 1, "{fx:?}");
    assert_eq!(x.resolves().len(), 1);
    assert_eq!(x.resolves()[0]["decision"], "allow");
}

#[test]
fn a_reason_typed_before_the_drop_waits_in_the_prompt() {
    let mut x = Iii::new();
    x.hold("c1");
    x.key(KeyCode::Char('n'));
    x.typ("not now");
    x.offline();
    assert_eq!(x.key(KeyCode::Enter), vec![]);
    assert_eq!(x.s.status_line.as_deref(), Some(OFFLINE));
    assert_eq!(editor_text(&x.s), "not now");
    x.reconnect();
    assert_eq!(x.s.session.offline, None);
    let fx = x.key(KeyCode::Enter);
    assert_eq!(denies(&fx), vec!["not now".to_string()]);
    assert_eq!(x.resolves()[0]["reason"], "not now");
}

#[test]
fn rules_wait_for_the_reconnect_and_skip_gates_resolved_meanwhile() {
    let mut x = Iii::new();
    x.offline();
    x.s.rules.add(
        parse_spec_line("deny shell::exec").unwrap(),
        Origin::Session,
    );
    let rec = |call: &str| {
        json!({"session_id": "s1", "turn_id": "t1", "function_call_id": call,
            "function_id": "shell::exec", "pending_at": 500, "arguments_excerpt": "x"})
    };
    // c1 was held during the outage; c2 is held and resolved elsewhere while the re-read
    // runs (its events are buffered and applied before the connection counts as back).
    x.pending.push(rec("c1"));
    let out = x.m.reconnected();
    assert!(
        x.m.on_event("approval::pending-created", &rec("c2"), x.now)
            .events
            .is_empty()
    );
    let resolved = json!({"session_id": "s1", "turn_id": "t1", "function_call_id": "c2",
        "function_id": "shell::exec", "outcome": "deny", "reason": "no", "resolved_at": 900});
    assert!(
        x.m.on_event("approval::pending-resolved", &resolved, x.now)
            .events
            .is_empty()
    );
    let events = Out {
        events: out.events,
        ..Out::default()
    };
    x.apply(events);
    assert!(x.s.session.offline.is_some());
    // The re-read answers: c1's card opens while still offline, so no rule runs yet.
    let fx = x.apply(Out {
        calls: out.calls,
        ..Out::default()
    });
    assert_eq!(x.s.session.offline, None);
    assert!(x.s.gates.is_empty(), "{:?}", x.s.gates);
    assert_eq!(denies(&fx).len(), 1, "{fx:?}");
    let r = x.resolves();
    assert_eq!(r.len(), 1, "only the call still held is ruled: {r:?}");
    assert_eq!(r[0]["function_call_id"], "c1");
    assert!(
        r[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("Denied by a switchboard rule")
    );
    assert_eq!(x.s.rules.list[0].hits, 1);
}

#[test]
fn offline_search_navigation_and_quit_still_work() {
    let mut x = Iii::new();
    x.hold("c1");
    x.offline();
    // Leave the card, search the transcript, move in the tree.
    x.key(KeyCode::Tab);
    x.s.focus = Focus::Transcript;
    x.key(KeyCode::Char('/'));
    x.typ("rm -rf");
    x.key(KeyCode::Enter);
    let search = x.s.search.as_ref().expect("search runs offline");
    assert_eq!(search.query, "rm -rf");
    x.key(KeyCode::Esc);
    x.s.focus = Focus::Tree;
    x.key(KeyCode::Down);
    x.key(KeyCode::Up);
    // Quitting leaves the held call held (nothing is sent), offline or not.
    x.key(KeyCode::Char('q'));
    assert_eq!(x.s.overlay, Some(Overlay::ConfirmQuit));
    let fx = x.key(KeyCode::Char('y'));
    assert!(fx.contains(&Effect::Quit), "{fx:?}");
    assert!(
        !fx.iter()
            .any(|e| matches!(e, Effect::Send(_, Command::Answer { .. }))),
        "{fx:?}"
    );
    assert!(x.resolves().is_empty());
    assert!(x.s.tree.nodes[0].transcript.items.iter().any(
        |i| matches!(&i.kind, ItemKind::Audit { text, .. } if text.starts_with("left pending"))
    ));
}

/// A rule that matches a card while the session is offline (saved from that card, say) is
/// not lost: the card waits for the connection and the rule answers it then.
#[test]
fn a_rule_matched_while_offline_answers_after_the_reconnect() {
    let mut x = Iii::new();
    let id = x.hold("c1");
    x.offline();
    let fx = switchboard_core::update::decide::answer_by_rule(
        &mut x.s,
        &id,
        Decision::Deny {
            message: "Denied by a switchboard rule".into(),
            interrupt: false,
        },
        "deny shell::exec",
    );
    assert!(fx.is_empty(), "{fx:?}");
    assert_eq!(x.s.gates.len(), 1);
    assert!(x.s.gate_ui.get(&id).is_some_and(|ui| ui.rules_later));
    // The rule is in place by the time the connection is back.
    x.s.rules.add(
        parse_spec_line("deny shell::exec").unwrap(),
        Origin::Session,
    );
    x.reconnect();
    assert!(x.s.gates.is_empty(), "{:?}", x.s.gates);
    let r = x.resolves();
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["function_call_id"], "c1");
}
