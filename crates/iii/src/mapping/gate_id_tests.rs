//! Card ids of held calls the engine names with look-alike text: two calls never share one,
//! and an answer resolves the call its card was for.

use serde_json::json;

use super::*;
use switchboard_core::gate::{Decision, Gate};
use switchboard_core::msg::Command;

/// A mapper online with root sessions `a`, `a:b` and `s` known.
fn online() -> Mapper {
    super::tests::online_with(json!({"sessions": [
        {"session_id": "a", "title": "A", "status": "working"},
        {"session_id": "a:b", "title": "AB", "status": "working"},
        {"session_id": "s", "title": "S", "status": "working"}]}))
}

fn hold(m: &mut Mapper, session: &str, call: &str, at: u64) -> Gate {
    let out = m.on_event(
        "approval::pending-created",
        &json!({"session_id": session, "turn_id": "t", "function_call_id": call,
            "function_id": "f", "pending_at": at}),
        at,
    );
    let g = super::tests::gates(&out);
    assert_eq!(g.len(), 1, "{session} {call}");
    g[0].clone()
}

#[test]
fn look_alike_calls_get_their_own_cards_and_answers() {
    let mut m = online();
    let pairs = [
        ("a:b", "c"),
        ("a", "b:c"),
        ("s", "c"),
        ("s", "c#2"),
        ("s", "100%"),
    ];
    let ids: Vec<String> = pairs
        .iter()
        .enumerate()
        .map(|(i, (s, c))| hold(&mut m, s, c, 2 + i as u64).id)
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    // Plain ids read as they always did.
    assert_eq!(ids[2], "iii:s:c");
    for (k, (session, call)) in pairs.iter().enumerate() {
        assert_eq!(
            m.gate_call(&ids[k]),
            Some(&(session.to_string(), call.to_string()))
        );
        assert_eq!(m.gate_open(session, call), Some(ids[k].as_str()));
    }
    // Allowing the card of `a` + `b:c` resolves exactly that call.
    let out = m.command(
        "a",
        &Command::Answer {
            gate_id: ids[1].clone(),
            decision: Decision::Option {
                option_id: OPT_ALLOW_ONCE.into(),
                name: String::new(),
                allow: true,
            },
        },
        10,
    );
    let resolve = out
        .calls
        .iter()
        .find(|c| c.function_id.starts_with("approval::"))
        .expect("the answer is sent");
    let p = &resolve.payload;
    assert_eq!(p["session_id"], "a", "{p}");
    assert_eq!(p["function_call_id"], "b:c", "{p}");
    // The look-alike still waits.
    assert_eq!(m.gate_open("a:b", "c"), Some(ids[0].as_str()));
}
