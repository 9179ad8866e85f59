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
