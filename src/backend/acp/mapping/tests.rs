//! Unit tests of the ACP mapper: method routing, id tables, paths, spellings.

use super::*;
use crate::core::msg::Command;
use std::path::Path;

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
                decision: crate::core::gate::Decision::Cancelled,
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
