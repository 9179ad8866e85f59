//! An agent that ignores a cancel: the grace period, the prompt, stop and keep waiting.

use super::*;
use crate::Msg;

fn tick(s: &mut State, ms: u64) -> Vec<Effect> {
    update(s, Msg::Tick(ms))
}

fn cancelled_at_1s(s: &mut State) {
    running(s, true);
    tick(s, 1_000);
    assert_eq!(
        ctrl(s, 'c'),
        vec![Effect::Send(
            crate::state::SessionId::FIRST,
            Command::Interrupt
        )]
    );
}

#[test]
fn no_turn_end_within_the_grace_asks_to_stop_the_agent() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    cancelled_at_1s(&mut s);
    tick(&mut s, 10_999);
    assert!(!s.cancel_stuck, "still within the 10 s grace");
    assert_ne!(s.overlay, Some(Overlay::AgentStuck));
    tick(&mut s, 11_000);
    assert!(s.cancel_stuck);
    assert_eq!(s.overlay, Some(Overlay::AgentStuck));
    let hint = crate::update::cancel::footer_hint(&s).unwrap();
    assert!(hint.contains("not responding"), "{hint}");
    // `s` stops it: the pending gate is answered as on quit, then the backend shuts down.
    let fx = ch(&mut s, 's');
    let mut want = answer_fx(
        "g1",
        Decision::Deny {
            message: "switchboard exited".into(),
            interrupt: false,
        },
    );
    want.push(Effect::Send(
        crate::state::SessionId::FIRST,
        Command::Shutdown,
    ));
    assert_eq!(fx, want);
    assert!(s.gates.is_empty());
    assert_eq!(s.overlay, None);
    assert!(!s.cancel_stuck);
    assert!(!s.quitting, "the window stays open");
}

#[test]
fn keep_waiting_asks_again_after_another_grace() {
    let mut s = st();
    s.settings.cancel_grace_ms = 2_000;
    cancelled_at_1s(&mut s);
    tick(&mut s, 3_000);
    assert_eq!(s.overlay, Some(Overlay::AgentStuck));
    assert_eq!(ch(&mut s, 'w'), vec![]);
    assert_eq!(s.overlay, None);
    assert!(!s.cancel_stuck);
    tick(&mut s, 4_500);
    assert!(!s.cancel_stuck);
    tick(&mut s, 5_000);
    assert!(s.cancel_stuck);
    // Ctrl-C while stuck asks again instead of sending another cancel.
    s.overlay = None;
    assert_eq!(ctrl(&mut s, 'c'), vec![]);
    assert_eq!(s.overlay, Some(Overlay::AgentStuck));
}

#[test]
fn a_turn_end_clears_the_watch() {
    let mut s = st();
    cancelled_at_1s(&mut s);
    tick(&mut s, 5_000);
    ev(&mut s, BackendEvent::Turn(TurnState::Idle));
    assert_eq!(s.cancel_sent_ms, None);
    tick(&mut s, 60_000);
    assert!(!s.cancel_stuck);
    assert_eq!(s.overlay, None);
    assert!(crate::update::cancel::footer_hint(&s).is_none());
}

/// The watch runs after every step on the sessions with a cancel out, whichever session the
/// step was for: another session's event that moves the clock past the grace raises it.
#[test]
fn another_sessions_event_past_the_grace_raises_the_watch() {
    let mut s = st();
    cancelled_at_1s(&mut s);
    let other = s.add_session(crate::BackendKind::Claude, "other");
    let _ = update(
        &mut s,
        Msg::Backend {
            session: other,
            at_ms: 11_000,
            event: BackendEvent::Item {
                node: None,
                op: ItemOp::Push(ItemKind::User { text: "x".into() }),
            },
        },
    );
    assert!(s.cancel_stuck, "the first session's grace is over");
    assert!(!s.sessions[1].cancel_stuck, "the other never cancelled");
    assert_eq!(s.overlay, Some(Overlay::AgentStuck));
}
