//! Unit tests of the ACP mapper: method routing, id tables, paths, spellings.

use super::*;
use std::path::Path;
use switchboard_core::msg::Command;

fn ready() -> Mapper {
    let mut m = Mapper::new(AcpOptions {
        cwd: PathBuf::from("/w/p"),
        ..AcpOptions::default()
    });
    m.initialize_line();
    m.on_line(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{},"_meta":{"checkfu.capabilities":{"steer":"native"}}}}"#);
    m.on_line(r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}"#);
    assert!(m.ready());
    m
}

#[test]
fn unknown_methods_get_method_not_found_and_ids_do_not_collide() {
    let mut m = ready();
    let out = m.command(&Command::Prompt("hi".into()));
    assert!(out.lines[0].contains("\"id\":3"));
    // The agent's own id 3 is a different request.
    let out = m.on_line(r#"{"jsonrpc":"2.0","id":3,"method":"x/unknown","params":{}}"#);
    assert!(out.lines[0].contains("-32601"), "{:?}", out.lines);
    assert!(m.turn_running());
    m.on_line(r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#);
    assert!(!m.turn_running());
}

#[test]
fn paths_outside_cwd_are_refused() {
    let m = ready();
    assert!(m.within_cwd(Path::new("/w/p/a/../b.txt")).is_ok());
    assert!(m.within_cwd(Path::new("/w/p/../q/b.txt")).is_err());
    assert!(m.within_cwd(Path::new("rel.txt")).is_err());
    assert!(m.within_cwd(Path::new("/w/pq")).is_err());
}

#[test]
fn a_request_with_an_unusable_id_is_answered_with_id_null() {
    let mut m = ready();
    for bad in [r#"{"k":1}"#, "[2]", "true", "3.5"] {
        let out = m.on_line(&format!(
            r#"{{"jsonrpc":"2.0","id":{bad},"method":"fs/read_text_file","params":{{"sessionId":"s1","path":"/w/p/a"}}}}"#
        ));
        assert_eq!(out.lines.len(), 1, "{bad}: exactly one answer");
        let v: Value = serde_json::from_str(&out.lines[0]).unwrap();
        assert_eq!(v["id"], Value::Null, "{bad}");
        assert_eq!(v["error"]["code"], -32600, "{bad}");
        assert!(out.actions.iter().all(|a| matches!(a, Action::Note(_))));
        assert!(matches!(
            out.events.as_slice(),
            [BackendEvent::Protocol {
                level: Level::Error,
                ..
            }]
        ));
    }
}

#[test]
fn a_duplicate_pending_id_is_shown_recorded_and_not_answered() {
    let mut m = ready();
    m.command(&Command::Prompt("go".into()));
    let req = r#"{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1","title":"rm x"},"options":[{"optionId":"a","name":"Allow","kind":"allow_once"}]}}"#;
    assert!(matches!(
        m.on_line(req).events.last(),
        Some(BackendEvent::GateOpen(_))
    ));
    let out = m.on_line(req);
    assert!(
        out.lines.is_empty(),
        "no answer of its own: {:?}",
        out.lines
    );
    assert!(out.events.iter().any(|e| matches!(e,
        BackendEvent::Protocol { level: Level::Error, text } if text.contains("duplicate id"))));
    assert!(
        out.actions
            .iter()
            .any(|a| matches!(a, Action::Note(n) if n.starts_with("duplicate-id")))
    );
    // The first is still the one pending, answered once.
    assert_eq!(m.pending_gates(), vec!["acp:7".to_string()]);
    let out = m.command(&Command::Answer {
        gate_id: "acp:7".into(),
        decision: switchboard_core::gate::Decision::Allow {
            updated_input: None,
            always: false,
        },
    });
    assert_eq!(out.lines.len(), 1);
}

#[test]
fn a_terminal_wait_stays_in_flight_until_answered_so_a_reused_id_gets_no_answer() {
    let mut m = ready();
    let wait = r#"{"jsonrpc":"2.0","id":9,"method":"terminal/wait_for_exit","params":{"sessionId":"s1","terminalId":"term-1"}}"#;
    let out = m.on_line(wait);
    assert!(matches!(
        out.actions.as_slice(),
        [Action::WaitForExit { .. }]
    ));
    // The same id again, as another wait or as a gate: shown and recorded, never answered
    // (the answer would land on the waiting request).
    let perm = r#"{"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t9","title":"rm x"},"options":[{"optionId":"a","name":"Allow","kind":"allow_once"}]}}"#;
    for again in [wait, perm] {
        let out = m.on_line(again);
        assert!(out.lines.is_empty(), "{:?}", out.lines);
        assert!(
            out.actions
                .iter()
                .all(|a| matches!(a, Action::Note(n) if n.starts_with("duplicate-id"))),
            "{:?}",
            out.actions
        );
        assert!(!out.actions.is_empty());
        assert!(m.pending_gates().is_empty());
    }
    // Once the session sent the answer, the id may be used again.
    m.waited(&json!(9));
    assert!(matches!(
        m.on_line(wait).actions.as_slice(),
        [Action::WaitForExit { .. }]
    ));
    // A waiter still running on exit gets its one answer.
    let lines = m.waiting_answers();
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains("\"id\":9"), "{lines:?}");
    assert_eq!(m.waiting(), 0);
}

#[test]
fn cancelled_spellings_normalise() {
    assert_eq!(normalise_disposition("canceled"), "cancelled");
    assert_eq!(normalise_disposition("cancelled"), "cancelled");
    assert_eq!(normalise_disposition("failed"), "failed");
}

#[test]
fn our_cancel_closes_permissions_as_cancelled_not_withdrawn() {
    let mut m = ready();
    m.command(&Command::Prompt("go".into()));
    let out = m.on_line(
        r#"{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1","title":"rm x"},"options":[{"optionId":"a","name":"Allow","kind":"allow_once"},{"optionId":"r","name":"Reject","kind":"reject_once"}]}}"#,
    );
    assert!(
        out.events
            .iter()
            .any(|e| matches!(e, BackendEvent::GateOpen(_)))
    );
    let out = m.command(&Command::Interrupt);
    assert!(
        out.lines
            .iter()
            .any(|l| l.contains("\"cancelled\"") && l.contains("\"id\":7")),
        "{:?}",
        out.lines
    );
    assert!(
        out.events.iter().any(|e| matches!(
            e,
            BackendEvent::GateClosed {
                decision: switchboard_core::gate::Decision::Cancelled,
                ..
            }
        )),
        "{:?}",
        out.events
    );
    assert!(
        !out.events
            .iter()
            .any(|e| matches!(e, BackendEvent::GateWithdrawn { .. }))
    );
}

/// A long session keeps the views of its recent and running tool calls, not of every call: a
/// running call is never forgotten, however old.
#[test]
fn settled_tool_calls_are_forgotten_past_the_cap_running_ones_never() {
    let mut m = ready();
    let call = |m: &mut Mapper, id: &str, status: &str| {
        m.on_line(&format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{{"sessionUpdate":"tool_call","toolCallId":"{id}","title":"t {id}","status":"{status}"}}}}}}"#
        ));
    };
    call(&mut m, "long", "in_progress");
    for n in 0..3 * tools::TOOL_CAP {
        call(&mut m, &format!("c{n}"), "completed");
    }
    assert!(m.tools.len() <= tools::TOOL_CAP + 1, "{}", m.tools.len());
    assert!(m.tools.contains_key("long"));
    assert!(
        m.tools
            .contains_key(&format!("c{}", 3 * tools::TOOL_CAP - 1))
    );
    assert!(!m.tools.contains_key("c0"));
    assert_eq!(m.tool_order.len(), m.tools.len());
    // The running call still reads its title when it completes.
    let out = m.on_line(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"long","status":"completed"}}}"#);
    assert!(format!("{:?}", out.events).contains("t long"));
    // A call of an earlier turn that never said it ended is forgotten in a later one.
    call(&mut m, "stale", "in_progress");
    m.command(&Command::Prompt("next".into()));
    for n in 0..2 * tools::TOOL_CAP {
        call(&mut m, &format!("d{n}"), "completed");
    }
    assert!(!m.tools.contains_key("stale"));
    assert!(m.tools.len() <= tools::TOOL_CAP + 1, "{}", m.tools.len());
}

/// An agent that never answers `session/load` does not hold the session for ever: past the
/// deadline a new session starts, said so, and the late answer opens nothing. A prompt
/// typed meanwhile says it waits.
#[test]
fn an_unanswered_session_load_gives_way_to_a_new_session() {
    let mut m = Mapper::new(AcpOptions {
        cwd: PathBuf::from("/w/p"),
        ..AcpOptions::default()
    });
    m.resume_session("old-1", false);
    m.now = 1_000;
    m.initialize_line();
    let out = m.on_line(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}"#);
    assert!(out.lines[0].contains("session/load"), "{:?}", out.lines);
    assert_eq!(m.load_deadline(), Some(1_000 + load::LOAD_PATIENCE_MS));
    let out = m.command(&Command::Prompt("hi".into()));
    assert!(
        out.lines.is_empty(),
        "not sent before the session: {:?}",
        out.lines
    );
    assert!(
        format!("{:?}", out.events).contains("held until the session is ready"),
        "{:?}",
        out.events
    );
    // Not yet.
    m.now = 1_000 + load::LOAD_PATIENCE_MS - 1;
    assert!(m.load_overdue().lines.is_empty());
    m.now = 1_000 + load::LOAD_PATIENCE_MS;
    let out = m.load_overdue();
    assert!(
        out.lines.iter().any(|l| l.contains("session/new")),
        "{:?}",
        out.lines
    );
    assert!(
        format!("{:?}", out.events).contains("no answer within"),
        "{:?}",
        out.events
    );
    assert_eq!(m.load_deadline(), None);
    // The late answer to the load is not taken for the session.
    m.on_line(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
    assert!(!m.ready());
    let out = m.on_line(r#"{"jsonrpc":"2.0","id":3,"result":{"sessionId":"new-1"}}"#);
    assert!(m.ready());
    assert!(
        out.lines.iter().any(|l| l.contains("session/prompt")),
        "the queued prompt goes: {:?}",
        out.lines
    );
}
