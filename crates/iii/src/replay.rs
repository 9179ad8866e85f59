//! iii recordings read back through the live mapper (no second parser). One recording holds
//! the whole engine connection, so replay shows it as one session: each iii root session is a
//! node under the replay's root (`iii:<root id>`), its sub-agents under it as live.
//!
//! Outgoing `invokefunction` frames are remembered by invocation id; their recorded results
//! feed `on_result`/`on_error`. Incoming `invokefunction` frames are the engine's pushed
//! events to our handlers: the handler id names the trigger through our recorded
//! `registertrigger`. Each outgoing `approval::resolve` closes its card with the decision the
//! wire said (`RecordedAnswers`), never with what the UI might have meant.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use super::mapping::json::Field;

use super::mapping::{Mapper, Out, RecordedAnswers};
use switchboard_core::msg::BackendEvent;
use switchboard_core::tree::{NodePatch, ROOT_KEY};
use switchboard_record::Dir;
use switchboard_record::mapper::{Answered, Parsed, ReplayMapper, decision_label, parsed_mut};

/// Remembered calls at most: a recording of calls never answered must not grow memory.
const MAX_CALLS: usize = 10_000;

/// A held call: (session, call id).
type GateKey = (String, String);

#[derive(Clone, Debug)]
pub struct Replay {
    mapper: Mapper,
    answers: RecordedAnswers,
    /// Our calls by invocation id: (function id, payload).
    calls: HashMap<String, (String, Value)>,
    /// Our handler function ids → the trigger type they were bound to.
    handlers: HashMap<String, String>,
    /// Roots already shown as nodes.
    roots: HashMap<String, ()>,
    /// Gates opened, for closing them by (session, call) → the newest card's id (a changed
    /// record opens `…#<version>`) and its number in the order gates were opened. Keyed by
    /// the mapping's own (session, call), never read back out of the card's id: a call id
    /// may itself end in `#2`, and a session id may hold a `:`.
    gates: HashMap<GateKey, (String, u64)>,
    /// The keys of `gates`, oldest first, with their numbers: past `MAX_CALLS` the
    /// oldest is forgotten (a held call is answered soon after it opens), never a new one.
    gate_order: VecDeque<(GateKey, u64)>,
    gates_opened: u64,
    now: u64,
}

impl Default for Replay {
    fn default() -> Replay {
        Replay {
            mapper: Mapper::new("replay"),
            answers: Default::default(),
            calls: HashMap::new(),
            handlers: HashMap::new(),
            roots: HashMap::new(),
            gates: HashMap::new(),
            gate_order: VecDeque::new(),
            gates_opened: 0,
            now: 0,
        }
    }
}

fn node_of(root: &str, key: &str) -> String {
    if key == ROOT_KEY {
        format!("iii:{root}")
    } else {
        key.to_string()
    }
}

impl Replay {
    /// The mapper's root-addressed events as one session's: root nodes re-keyed under ours.
    fn flatten(&mut self, out: Out) -> Vec<BackendEvent> {
        let mut v = Vec::new();
        for r in out.roots {
            if self.roots.insert(r.key.clone(), ()).is_none() {
                v.push(BackendEvent::NodeOpen {
                    key: format!("iii:{}", r.key),
                    parent: Some(ROOT_KEY.to_string()),
                    patch: NodePatch {
                        name: Some(switchboard_core::text::sanitize(&r.title)),
                        ..NodePatch::default()
                    },
                });
            }
        }
        for (root, e) in out.events {
            if root.is_empty() {
                v.push(e);
                continue;
            }
            v.push(match e {
                BackendEvent::NodeOpen { key, parent, patch } => BackendEvent::NodeOpen {
                    key: node_of(&root, &key),
                    parent: Some(node_of(&root, parent.as_deref().unwrap_or(ROOT_KEY))),
                    patch,
                },
                BackendEvent::NodeUpdate { key, patch } => BackendEvent::NodeUpdate {
                    key: node_of(&root, &key),
                    patch,
                },
                BackendEvent::Item { node, op } => BackendEvent::Item {
                    node: Some(node_of(&root, node.as_deref().unwrap_or(ROOT_KEY))),
                    op,
                },
                BackendEvent::GateOpen(mut g) => {
                    g.node_key = node_of(&root, &g.node_key);
                    if let Some(key) = self.mapper.gate_call(&g.id).cloned() {
                        self.remember_gate(key, &g.id);
                    }
                    BackendEvent::GateOpen(g)
                }
                // A card that took the full arguments from the transcript (`…#2`) replaces
                // its call's: the recorded answer closes that one.
                BackendEvent::GateUpgraded { old, mut gate } => {
                    gate.node_key = node_of(&root, &gate.node_key);
                    if let Some(key) = self.mapper.gate_call(&gate.id).cloned() {
                        self.remember_gate(key, &gate.id);
                    }
                    BackendEvent::GateUpgraded { old, gate }
                }
                other => other,
            });
        }
        v
    }

    /// Remember gate `id` under its (session, call) key, forgetting the oldest past
    /// `MAX_CALLS`. Before, the first `MAX_CALLS` gates were kept and every later one was
    /// not: past them no recorded answer closed a card, and a long replay piled up
    /// thousands of gates shown as waiting.
    fn remember_gate(&mut self, key: GateKey, id: &str) {
        self.gates_opened += 1;
        let n = self.gates_opened;
        self.gates.insert(key.clone(), (id.to_string(), n));
        self.gate_order.push_back((key, n));
        while self.gate_order.len() > MAX_CALLS {
            let Some((old, at)) = self.gate_order.pop_front() else {
                break;
            };
            // Only the entry that was opened then: a newer card of the same call stays.
            if self.gates.get(&old).is_some_and(|(_, m)| *m == at) {
                self.gates.remove(&old);
            }
        }
    }

    /// A gate answered: it is not kept for another answer (every copy of this mapping, one
    /// per replay checkpoint, carried thousands of answered gates). Its places in
    /// `gate_order` go when that holds twice the live ones.
    fn forget_gate(&mut self, key: &GateKey, id: &str) {
        if self.gates.get(key).is_some_and(|(g, _)| g == id) {
            self.gates.remove(key);
        }
        if self.gate_order.len() > 2 * self.gates.len() + 64 {
            let gates = &self.gates;
            self.gate_order
                .retain(|(k, n)| gates.get(k).is_some_and(|(_, m)| m == n));
        }
    }

    fn observe_result(&mut self, function_id: &str, result: &Value) {
        if matches!(
            function_id,
            "approval::list-pending" | "approval::list_pending"
        ) {
            self.answers.observe_listing(result);
        }
    }
}

impl ReplayMapper for Replay {
    fn clone_box(&self) -> Box<dyn ReplayMapper> {
        Box::new(self.clone())
    }

    fn set_now(&mut self, ms: u64) {
        self.now = ms;
    }

    fn inbound(&mut self, line: &str) -> Vec<BackendEvent> {
        match frame(line) {
            Some(f) => self.inbound_value(&f),
            None => Vec::new(),
        }
    }

    /// The frame is read where it is: the reader thread that parsed it drops it.
    fn inbound_parsed(&mut self, line: &str, parsed: &mut Parsed) -> Vec<BackendEvent> {
        match parsed_mut::<Ahead>(parsed) {
            Some(a) => {
                self.mapper.fingerprint_ahead = a.fingerprint;
                let events = self.inbound_value(&a.frame);
                self.mapper.fingerprint_ahead = None;
                events
            }
            None => self.inbound(line),
        }
    }

    fn outbound(&mut self, line: &str) -> (Vec<BackendEvent>, Vec<Answered>) {
        if !mapped_outbound(line) {
            return (Vec::new(), Vec::new());
        }
        match frame(line) {
            Some(mut f) => self.outbound_value(&mut f),
            None => (Vec::new(), Vec::new()),
        }
    }

    fn outbound_parsed(
        &mut self,
        line: &str,
        parsed: &mut Parsed,
    ) -> (Vec<BackendEvent>, Vec<Answered>) {
        match parsed_mut::<Ahead>(parsed) {
            Some(a) => self.outbound_value(&mut a.frame),
            None => self.outbound(line),
        }
    }
}

/// One recorded frame as the live codec reads it: over `FRAME_BYTES` it was refused
/// unparsed, so it is here too.
fn frame(line: &str) -> Option<Value> {
    if line.len() > super::codec::FRAME_BYTES {
        return None;
    }
    serde_json::from_str(line).ok()
}

/// Whether a frame of ours may be one `outbound_value` maps: a `registertrigger` or an
/// `invokefunction`. Without an escape, its `type` reads as its text, so a line that holds
/// neither word is neither, and is not parsed: our replies to the engine's events
/// (`invocationresult`) are two frames in five of an iii recording.
fn mapped_outbound(line: &str) -> bool {
    line.contains('\\') || line.contains("invokefunction") || line.contains("registertrigger")
}

/// The background pass's parser for iii recordings: every frame is one JSON object (a frame
/// of ours that `mapped_outbound` rules out is not parsed at all).
pub fn parse_ahead(dir: Dir, line: &str) -> Option<Parsed> {
    if dir == Dir::Out && !mapped_outbound(line) {
        return None;
    }
    let frame = frame(line)?;
    // A transcript entry's fingerprint, taken here on the reader thread: hashing every
    // message body was a tenth of the mapping's work, and the mapping is the slower thread.
    // Any event whose data holds an entry's body is fingerprinted (the parser cannot tell
    // which function is the message handler); only the message handlers read it.
    let fingerprint = (dir == Dir::In
        && frame.field("type").and_then(Value::as_str) == Some("invokefunction"))
    .then(|| frame.field("data"))
    .flatten()
    .filter(|d| d.field("message").is_some() || d.field("custom").is_some())
    .map(crate::mapping::messages::fingerprint);
    Some(Box::new(Ahead { frame, fingerprint }))
}

/// What `parse_ahead` makes of a frame: the frame, and the fingerprint of the transcript
/// entry it may carry.
struct Ahead {
    frame: Value,
    fingerprint: Option<u64>,
}

impl Replay {
    /// One engine frame, parsed.
    fn inbound_value(&mut self, f: &Value) -> Vec<BackendEvent> {
        let now = self.now;
        match f.field("type").and_then(Value::as_str) {
            // Each (re)connect: the live source told the mapper, which re-read everything
            // (the reads and their results follow in the recording).
            Some("workerregistered") => {
                let mut v = Vec::new();
                if self.mapper.online() {
                    let out = self.mapper.offline();
                    v = self.flatten(out);
                }
                self.calls.clear();
                let out = self.mapper.reconnected();
                v.extend(self.flatten(out));
                v
            }
            Some("invocationresult") => {
                let id = f
                    .field("invocation_id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let Some((function_id, payload)) = self.calls.remove(id) else {
                    return Vec::new();
                };
                let out = match f.field("error") {
                    Some(e) if !e.is_null() => self.mapper.on_error(
                        &function_id,
                        &payload,
                        e.field("code").and_then(Value::as_str).unwrap_or(""),
                        e.field("message").and_then(Value::as_str).unwrap_or(""),
                        now,
                    ),
                    _ => {
                        let result = f.field("result").unwrap_or(&Value::Null);
                        self.observe_result(&function_id, result);
                        self.mapper.on_result(&function_id, &payload, result, now)
                    }
                };
                self.flatten(out)
            }
            Some("invokefunction") => {
                let handler = f.field("function_id").and_then(Value::as_str).unwrap_or("");
                let Some(trigger) = self.handlers.get(handler).cloned() else {
                    return Vec::new();
                };
                let data = f.field("data").unwrap_or(&Value::Null);
                if matches!(
                    trigger.as_str(),
                    "approval::pending-created" | "approval::pending_created"
                ) {
                    self.answers.observe_record(data);
                }
                let out = self.mapper.on_event(&trigger, data, now);
                self.flatten(out)
            }
            _ => Vec::new(),
        }
    }

    /// One frame of ours, parsed.
    fn outbound_value(&mut self, f: &mut Value) -> (Vec<BackendEvent>, Vec<Answered>) {
        let s = |k: &str| f.field(k).and_then(Value::as_str).unwrap_or("").to_string();
        match f.field("type").and_then(Value::as_str) {
            Some("registertrigger") => {
                if self.handlers.len() < MAX_CALLS {
                    self.handlers.insert(s("function_id"), s("trigger_type"));
                }
                (Vec::new(), Vec::new())
            }
            Some("invokefunction") => {
                let function_id = s("function_id");
                let invocation = s("invocation_id");
                let data = f.get_mut("data").map(Value::take).unwrap_or_default();
                let decided = self.answers.observe_call(&function_id, &data);
                if self.calls.len() < MAX_CALLS {
                    self.calls.insert(invocation, (function_id, data));
                }
                let mut events = Vec::new();
                let mut answered = Vec::new();
                if let Some(Ok((session, call, decision))) = decided {
                    let key = (session, call);
                    if let Some((id, _)) = self.gates.get(&key).cloned() {
                        // The card closes with what the wire said.
                        events.push(BackendEvent::GateAnswered {
                            id: id.clone(),
                            decision: decision.clone(),
                        });
                        answered.push(Answered {
                            gate_id: id.clone(),
                            label: decision_label(&decision),
                            decision: Some(decision),
                        });
                        self.forget_gate(&key, &id);
                    }
                }
                (events, answered)
            }
            _ => (Vec::new(), Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::{Generation, PAGE, engine_answer};
    use serde_json::json;

    /// A card upgraded with the full arguments from the transcript (`iii:s1:c1` becomes
    /// `iii:s1:c1#2`) is the one our recorded `approval::resolve` closes: before, only cards
    /// as first opened were remembered, and the upgraded one stayed waiting for the rest of
    /// the replay.
    #[test]
    fn an_upgraded_card_is_closed_by_its_recorded_answer() {
        let mut r = Replay::default();
        let mut calls = r.mapper.reconnected().calls;
        while let Some(c) = calls.pop() {
            let a = engine_answer(&c.function_id, Generation::Kebab);
            calls.extend(r.mapper.on_result(&c.function_id, &c.payload, &a, 1).calls);
        }
        r.mapper.on_result(
            "session::list",
            &json!({"order": "updated_desc", "limit": PAGE}),
            &json!({"sessions": [{"session_id": "s1", "title": "Fix the build", "status": "working"}]}),
            1,
        );
        let rec = json!({"session_id": "s1", "turn_id": "t1", "function_call_id": "c1",
            "function_id": "shell::exec", "pending_at": 1,
            "arguments_excerpt": "{\"command\":\"git st…\"}"});
        r.answers.observe_record(&rec);
        let out = r.mapper.on_event("approval::pending-created", &rec, 5);
        let opened = r.flatten(out);
        assert!(
            opened
                .iter()
                .any(|e| matches!(e, BackendEvent::GateOpen(g) if g.id == "iii:s1:c1")),
            "{opened:?}"
        );
        let out = r.mapper.on_event(
            "session::message-added",
            &json!({"session_id": "s1", "entry_id": "e1", "parent_id": null, "message": {"role": "assistant", "content": [
                {"type": "function_call", "id": "c1", "function_id": "shell::exec", "arguments": {"command": "git status"}}]}}),
            6,
        );
        let upgraded = r.flatten(out);
        let id = upgraded
            .iter()
            .find_map(|e| match e {
                BackendEvent::GateUpgraded { gate, .. } => Some(gate.id.clone()),
                _ => None,
            })
            .expect("the card takes the full arguments");
        assert_ne!(id, "iii:s1:c1");
        let (events, answered) = r.outbound_value(&mut json!({"type": "invokefunction",
            "invocation_id": "i1", "function_id": "approval::resolve",
            "data": {"session_id": "s1", "function_call_id": "c1", "decision": "allow"}}));
        assert!(
            events
                .iter()
                .any(|e| matches!(e, BackendEvent::GateAnswered { id: a, .. } if *a == id)),
            "{events:?}"
        );
        assert_eq!(answered.len(), 1);
        assert_eq!(answered[0].gate_id, id);
        // Answered, it is not kept for the copies of this mapping.
        assert!(r.gates.is_empty(), "{:?}", r.gates);
    }

    fn k(session: &str, call: &str) -> GateKey {
        (session.to_string(), call.to_string())
    }

    /// Past `MAX_CALLS` gates the newest are remembered and the oldest forgotten: before,
    /// the first `MAX_CALLS` were kept and no later card was ever closed by its answer.
    #[test]
    fn gates_past_the_cap_are_still_found_by_their_call() {
        let mut r = Replay::default();
        for i in 0..MAX_CALLS + 50 {
            r.remember_gate(k("s", &format!("c{i}")), &format!("iii:s:c{i}"));
        }
        assert!(r.gates.len() <= MAX_CALLS);
        assert!(
            !r.gates.contains_key(&k("s", "c0")),
            "the oldest is forgotten"
        );
        let last = format!("c{}", MAX_CALLS + 49);
        assert_eq!(r.gates[&k("s", &last)].0, format!("iii:s:{last}"));
        // A changed record's card replaces its call's, and outlives the old card's turn to
        // be forgotten.
        r.remember_gate(k("s", "c60"), "iii:s:c60#2");
        assert_eq!(r.gates[&k("s", "c60")].0, "iii:s:c60#2");
        for i in 0..20 {
            r.remember_gate(k("t", &format!("d{i}")), &format!("iii:t:d{i}"));
        }
        assert_eq!(r.gates[&k("s", "c60")].0, "iii:s:c60#2");
        assert!(r.gates.len() <= MAX_CALLS);
    }

    /// Look-alike calls (a call id that ends in `#2`, a session id with a `:`; their card
    /// ids differ, `mapping::gate_id_tests`) are kept apart here too: each recorded answer
    /// closes its own card, never the other's.
    #[test]
    fn look_alike_calls_are_each_closed_by_their_own_answer() {
        let mut r = Replay::default();
        r.remember_gate(k("s", "c"), "iii:s:c");
        r.remember_gate(k("s", "c#2"), "iii:s:c%232");
        r.remember_gate(k("a:b", "c"), "iii:a%3Ab:c");
        r.remember_gate(k("a", "b:c"), "iii:a:b%3Ac");
        assert_eq!(r.gates.len(), 4);
        let resolve = |session: &str, call: &str| {
            format!(
                r#"{{"type":"invokefunction","invocation_id":"i-{call}","function_id":"approval::resolve","data":{{"session_id":"{session}","function_call_id":"{call}","decision":"allow"}}}}"#
            )
        };
        let (_, answered) = r.outbound(&resolve("s", "c"));
        assert_eq!(answered.len(), 1);
        assert_eq!(answered[0].gate_id, "iii:s:c");
        assert!(
            r.gates.contains_key(&k("s", "c#2")),
            "the look-alike still waits"
        );
        let (_, answered) = r.outbound(&resolve("a", "b:c"));
        assert_eq!(answered[0].gate_id, "iii:a:b%3Ac");
        assert!(r.gates.contains_key(&k("a:b", "c")));
    }

    /// An answered gate is forgotten, with its place in the order: the copies of the mapping
    /// the replay keeps carry the gates still waiting, not every one ever answered.
    #[test]
    fn answered_gates_are_not_kept() {
        let mut r = Replay::default();
        for i in 0..5_000 {
            let call = format!("c{i}");
            r.remember_gate(k("s", &call), &format!("iii:s:{call}"));
            if i % 2 == 0 {
                r.remember_gate(k("s", &call), &format!("iii:s:{call}#2"));
            }
            if i >= 3 {
                let old = k("s", &format!("c{}", i - 3));
                let id = r.gates[&old].0.clone();
                r.forget_gate(&old, &id);
            }
        }
        // The three newest wait.
        assert!(r.gates.len() <= 3, "{}", r.gates.len());
        assert!(r.gate_order.len() <= 2 * r.gates.len() + 64 + 2);
        assert_eq!(r.gates[&k("s", "c4998")].0, "iii:s:c4998#2");
        assert_eq!(r.gates[&k("s", "c4999")].0, "iii:s:c4999");
    }

    /// The reader thread fingerprints an engine event carrying a transcript entry exactly as
    /// the mapping would, and nothing else; the mapping then takes that fingerprint and leaves
    /// none behind for the next frame.
    #[test]
    fn an_entry_is_fingerprinted_ahead_as_the_mapping_would() {
        let event = r#"{"type":"invokefunction","invocation_id":"i1","function_id":"h","data":{"session_id":"s1","entry_id":"e1","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}}"#;
        let ahead = |dir, l: &str| {
            let mut p = parse_ahead(dir, l).unwrap();
            let a = p.downcast_mut::<Ahead>().unwrap();
            (a.fingerprint, a.frame.clone())
        };
        let (fp, frame) = ahead(Dir::In, event);
        let data = frame.field("data").unwrap();
        assert_eq!(fp, Some(crate::mapping::messages::fingerprint(data)));
        let other = event.replace("\"message\"", "\"note\"");
        assert_eq!(ahead(Dir::In, &other).0, None);
        let ours = event.replace("invocation_id", "invocation_id_");
        assert_eq!(ahead(Dir::Out, &ours).0, None);
        let result = r#"{"type":"invocationresult","invocation_id":"i1","result":{"message":{}}}"#;
        assert_eq!(ahead(Dir::In, result).0, None);
        let mut r = Replay::default();
        let mut p = parse_ahead(Dir::In, event).unwrap();
        r.inbound_parsed(event, &mut p);
        assert_eq!(r.mapper.fingerprint_ahead, None);
    }

    /// A frame of ours that is not parsed (no escape, neither word) maps to nothing, as it
    /// did parsed; one with an escaped `type` is still parsed and mapped.
    #[test]
    fn frames_of_ours_left_unparsed_are_those_that_map_to_nothing() {
        let lines = [
            r#"{"type":"invocationresult","invocation_id":"i9","function_id":"switchboard::w::on-x","result":{}}"#,
            r#"{"type":"registertrigger","id":"t1","trigger_type":"session::message-added","function_id":"h1","config":{}}"#,
            r#"{"type":"invokefunction","invocation_id":"i1","function_id":"approval::resolve","data":{"session_id":"s1","function_call_id":"c1","decision":"allow"}}"#,
            r#"{"type":"invoke\u0066unction","invocation_id":"i2","function_id":"approval::resolve","data":{"session_id":"s1","function_call_id":"c2","decision":"deny"}}"#,
            r#"{"type":"ping"}"#,
            "not json",
        ];
        let (mut a, mut b) = (Replay::default(), Replay::default());
        for call in ["c1", "c2"] {
            let id = format!("iii:s1:{call}");
            a.remember_gate(k("s1", call), &id);
            b.remember_gate(k("s1", call), &id);
        }
        for l in lines {
            let (ea, na) = a.outbound(l);
            let (eb, nb) = frame(l).map_or_else(Default::default, |mut f| b.outbound_value(&mut f));
            assert_eq!(format!("{ea:?}{na:?}"), format!("{eb:?}{nb:?}"), "{l}");
            assert_eq!(
                parse_ahead(Dir::Out, l).is_some(),
                mapped_outbound(l) && frame(l).is_some(),
                "{l}"
            );
        }
        // Both resolves closed their cards, the escaped one included.
        assert!(a.gates.is_empty(), "{:?}", a.gates);
        assert!(!mapped_outbound(lines[0]) && !mapped_outbound(lines[4]));
    }
}
