//! The ACP mapper and the core's commands: what ACP cannot carry it says so (the reducer's
//! own tests are in `crates/core/src/update/tests/`).

use switchboard_acp::mapping::Mapper;
use switchboard_core::msg::{BackendEvent, Command, HarnessSession};

#[test]
fn acp_says_it_does_not_support_the_iii_commands() {
    for c in [
        Command::EditQueued {
            entry_id: "q".into(),
            text: "t".into(),
        },
        Command::Unqueue {
            entry_id: "q".into(),
        },
        Command::NewHarnessSession(HarnessSession::default()),
    ] {
        let mut acp = Mapper::new(Default::default());
        let out = acp.command(&c);
        assert!(out.lines.is_empty());
        assert!(
            out.events.iter().any(|e| matches!(e, BackendEvent::Protocol { text, .. } if text.contains("not supported by this backend"))),
            "{:?}",
            out.events
        );
    }
}
