//! Settle time (issue 38): a card's answer keys act only once that card, as it is now, has
//! been on this terminal's screen for `Settings::settle_ms`. Browsers ignore input on a
//! permission prompt for a moment after it appears for the same reason: a `y` typed for the
//! card that stood there a moment ago (answered from another terminal, pushed aside by a new
//! gate, or `g y` typed as one chord) must not answer one the owner has not read.
//!
//! The edge measures it, per terminal, from the frame that terminal drew: the local loop
//! (`app::term`) and each host client (`host::client`) keep one `Settle`. The reducer only
//! says which keys answer (`update::answers_gate`) and what to show when one was held
//! (`Msg::Held`); it reads no clock and no frame.

use std::time::{Duration, Instant};

use switchboard_core::State;
use switchboard_core::input::KeyEvent;
use switchboard_core::state::{Focus, GateRef, Overlay};

/// What a frame showed that an answer key would act on. Two frames showing equal `Card`s
/// showed the same card: its keys stay settled across them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Card {
    /// The gate the card shows (the selected session's active gate).
    gate: Option<GateRef>,
    /// Keys went to it: the card focused, or the inbox open (`g` focusing a card counts as
    /// a new card: its keys were the prompt's a moment ago).
    on_gates: bool,
    /// The inbox is open over this many gate openings and closings: a batch `y` acts on
    /// the list as drawn.
    inbox: Option<u64>,
    /// Inputs other terminals made on the shared card (host clients; 0 locally): a card
    /// whose highlight or editor someone else moved is a changed card.
    others: u64,
}

impl Card {
    pub fn of(state: &State, others: u64) -> Card {
        let s = state.shown();
        let inbox = matches!(state.overlay, Some(Overlay::Inbox));
        Card {
            gate: s.active_gate.as_ref().map(|id| GateRef {
                session: s.id,
                id: id.clone(),
            }),
            // A card under another overlay (help, the log) is not on screen.
            on_gates: (state.focus == Focus::Gate && state.overlay.is_none()) || inbox,
            inbox: inbox.then(|| state.gate_changes()),
            others,
        }
    }
}

/// One terminal's card and when its frames began showing it.
#[derive(Debug, Default)]
pub struct Settle {
    shown: Option<(Card, Instant)>,
}

impl Settle {
    /// A frame showing `card` was drawn at `at`; returns since when this card has been on
    /// screen (`at` when it is new).
    pub fn drawn(&mut self, card: Card, at: Instant) -> Instant {
        match &self.shown {
            Some((c, since)) if *c == card => *since,
            _ => {
                self.shown = Some((card, at));
                at
            }
        }
    }

    /// Whether `key`, arriving at `now`, must be held: it would answer a card (`answers_gate`)
    /// that is not the one last drawn, or one drawn less than `state.settings.settle_ms`
    /// ago. `others` as for `Card::of`.
    pub fn holds(&self, state: &State, key: KeyEvent, others: u64, now: Instant) -> bool {
        let settle = state.settings.settle_ms;
        if settle == 0 || !switchboard_core::update::answers_gate(state, key) {
            return false;
        }
        holds_since(self.since(&Card::of(state, others)), settle, now)
    }

    /// Since when `card` has been on screen, if it is the one last drawn.
    pub fn since(&self, card: &Card) -> Option<Instant> {
        self.shown
            .as_ref()
            .filter(|(c, _)| c == card)
            .map(|(_, t)| *t)
    }
}

/// A key at `now` on a card on screen since `since` (None: never drawn) is held.
pub fn holds_since(since: Option<Instant>, settle_ms: u64, now: Instant) -> bool {
    since.is_none_or(|t| now.saturating_duration_since(t) < Duration::from_millis(settle_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_core::input::{KeyCode, KeyModifiers};
    use switchboard_core::msg::BackendEvent;
    use switchboard_core::{BackendKind, Msg, update};

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    fn open(s: &mut State, id: &str) {
        let sid = s.sid();
        let _ = update(
            s,
            Msg::Backend {
                session: sid,
                at_ms: 0,
                event: BackendEvent::GateOpen(Box::new(crate::test_gates::bash_permission(
                    id, "ls",
                ))),
            },
        );
    }

    #[test]
    fn answer_keys_wait_for_the_card_they_act_on_navigation_never_does() {
        let mut s = State::new(BackendKind::Claude, "one", 0);
        open(&mut s, "g1");
        let _ = update(&mut s, Msg::Key(key(KeyCode::Char('g'))));
        assert_eq!(s.focus, Focus::Gate);
        let t0 = Instant::now();
        let mut settle = Settle::default();
        // Never drawn: held whatever the time.
        assert!(settle.holds(&s, key(KeyCode::Char('y')), 0, t0));
        settle.drawn(Card::of(&s, 0), t0);
        let soon = t0 + Duration::from_millis(100);
        let later = t0 + Duration::from_millis(300);
        for k in [
            KeyCode::Char('y'),
            KeyCode::Char('n'),
            KeyCode::Char('a'),
            KeyCode::Char('e'),
            KeyCode::Char('1'),
            KeyCode::Enter,
        ] {
            assert!(settle.holds(&s, key(k), 0, soon), "{k:?}");
            assert!(!settle.holds(&s, key(k), 0, later), "{k:?}");
        }
        for k in [
            KeyCode::Down,
            KeyCode::Char('j'),
            KeyCode::PageDown,
            KeyCode::Char(']'),
            KeyCode::Tab,
            KeyCode::Char('?'),
        ] {
            assert!(!settle.holds(&s, key(k), 0, soon), "{k:?}");
        }
        // Another terminal acted on the shared card: a new card for this one.
        assert!(settle.holds(&s, key(KeyCode::Char('y')), 1, later));
        // A frame showing the same card keeps its time; another gate starts it again.
        assert_eq!(settle.drawn(Card::of(&s, 0), later), t0);
        open(&mut s, "g2");
        assert_eq!(settle.drawn(Card::of(&s, 0), later), t0, "g1 still shown");
        let _ = update(&mut s, Msg::Key(key(KeyCode::Char(']'))));
        assert_eq!(
            settle.drawn(Card::of(&s, 0), later),
            later,
            "g2 is a new card"
        );
        // 0: off.
        s.settings.settle_ms = 0;
        assert!(!settle.holds(&s, key(KeyCode::Char('y')), 0, t0));
    }

    #[test]
    fn the_inbox_batch_keys_wait_for_the_list_they_act_on() {
        let mut s = State::new(BackendKind::Claude, "one", 0);
        open(&mut s, "g1");
        let _ = update(&mut s, Msg::Key(key(KeyCode::Char('I'))));
        let t0 = Instant::now();
        let mut settle = Settle::default();
        settle.drawn(Card::of(&s, 0), t0);
        let later = t0 + Duration::from_millis(400);
        assert!(!settle.holds(&s, key(KeyCode::Char('y')), 0, later));
        assert!(!settle.holds(&s, key(KeyCode::Down), 0, t0));
        // A gate opened under the open inbox: the list changed.
        open(&mut s, "g2");
        assert!(settle.holds(&s, key(KeyCode::Char('y')), 0, later));
        assert!(settle.holds(&s, key(KeyCode::Char('n')), 0, later));
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    /// `g y` typed as one chord: `g` takes the keyboard from the tree to the card, so the `y`
    /// is on a card this terminal never drew with its keys on it, however long the gate
    /// has waited.
    #[test]
    fn g_then_y_is_held_however_old_the_gate() {
        let mut s = State::new(BackendKind::Claude, "one", 0);
        open(&mut s, "g1");
        s.focus = Focus::Tree;
        let t0 = Instant::now();
        let mut settle = Settle::default();
        settle.drawn(Card::of(&s, 0), t0);
        let later = t0 + Duration::from_millis(400);
        let _ = update(&mut s, Msg::Key(key(KeyCode::Char('g'))));
        assert_eq!(s.focus, Focus::Gate);
        assert!(settle.holds(&s, key(KeyCode::Char('y')), 0, later));
        settle.drawn(Card::of(&s, 0), later);
        let settled = later + Duration::from_millis(400);
        assert!(!settle.holds(&s, key(KeyCode::Char('y')), 0, settled));
    }

    /// Ctrl with a card's letter answers as the letter does, so it waits as the letter does;
    /// a card under another overlay (help) is not on screen; an editor open on a new card
    /// sends or declines only once the card settled, while typing into it is never held.
    #[test]
    fn ctrl_letters_hidden_cards_and_open_editors_wait_too() {
        let mut s = State::new(BackendKind::Claude, "one", 0);
        open(&mut s, "g1");
        let _ = update(&mut s, Msg::Key(key(KeyCode::Char('g'))));
        let t0 = Instant::now();
        let soon = t0 + Duration::from_millis(100);
        let later = t0 + Duration::from_millis(400);
        let mut settle = Settle::default();
        settle.drawn(Card::of(&s, 0), t0);
        assert!(settle.holds(&s, ctrl('y'), 0, soon));
        assert!(settle.holds(&s, ctrl('a'), 0, soon));
        assert!(!settle.holds(&s, ctrl('y'), 0, later));
        // Help drawn over the card: the card was not on screen.
        let _ = update(&mut s, Msg::Key(key(KeyCode::Char('?'))));
        assert!(s.overlay.is_some());
        let mut hidden = Settle::default();
        hidden.drawn(Card::of(&s, 0), t0);
        let _ = update(&mut s, Msg::Key(key(KeyCode::Esc)));
        assert!(s.overlay.is_none());
        assert!(hidden.holds(&s, key(KeyCode::Char('y')), 0, later));
        // `n` opens the deny editor on the card.
        let _ = update(&mut s, Msg::Key(key(KeyCode::Char('n'))));
        assert!(s.active_ui().is_some_and(|u| u.editor.is_some()));
        for k in [KeyCode::Enter, KeyCode::Esc] {
            assert!(settle.holds(&s, key(k), 0, soon), "{k:?}");
            assert!(!settle.holds(&s, key(k), 0, later), "{k:?}");
        }
        assert!(settle.holds(&s, ctrl('s'), 0, soon));
        assert!(!settle.holds(&s, key(KeyCode::Char('x')), 0, soon));
    }
}
