//! Driving the reducer in tests: keys, a backend event to the first session, the open editor,
//! the effect that answers a gate, the last rows. The core's own tests use it, and so do the
//! backends' tests that drive the reducer with their own parts (through the `test-hooks`
//! feature, which only dev-dependencies enable: never in the release binary).

use crate::gate::{Decision, Gate};
use crate::input::{KeyCode, KeyEvent, KeyModifiers};
use crate::msg::{BackendEvent, Command, Effect};
use crate::state::{EditorPurpose, SessionId, State};
use crate::transcript::{ItemKind, Tone};
use crate::{BackendKind, Msg, update};

/// A fresh workspace of one Claude session named `main`.
pub fn st() -> State {
    State::new(BackendKind::Claude, "main", 0)
}

/// `event` from the first session's backend, at 1 s.
pub fn ev(s: &mut State, event: BackendEvent) -> Vec<Effect> {
    update(
        s,
        Msg::Backend {
            session: SessionId::FIRST,
            at_ms: 1_000,
            event,
        },
    )
}

/// The first session's backend opens gate `g`.
pub fn open(s: &mut State, g: Gate) -> Vec<Effect> {
    ev(s, BackendEvent::GateOpen(Box::new(g)))
}

pub fn press(s: &mut State, code: KeyCode) -> Vec<Effect> {
    update(s, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

pub fn ch(s: &mut State, c: char) -> Vec<Effect> {
    press(s, KeyCode::Char(c))
}

pub fn chord(s: &mut State, c: char, mods: KeyModifiers) -> Vec<Effect> {
    update(s, Msg::Key(KeyEvent::new(KeyCode::Char(c), mods)))
}

pub fn ctrl(s: &mut State, c: char) -> Vec<Effect> {
    chord(s, c, KeyModifiers::CONTROL)
}

/// Type text key by key; no key may produce an effect.
pub fn typ(s: &mut State, text: &str) {
    for c in text.chars() {
        assert_eq!(ch(s, c), vec![], "typing {c:?} produced effects");
    }
}

/// Delete everything in the open editor with Backspace (lines join as the cursor backs up).
pub fn clear_editor(s: &mut State) {
    let n = editor_text(s).chars().count();
    for _ in 0..n + 1 {
        press(s, KeyCode::Backspace);
    }
    assert_eq!(editor_text(s), "");
}

pub fn editor_text(s: &State) -> String {
    s.active_ui()
        .and_then(|ui| ui.editor.as_ref())
        .map(|e| e.area.lines().join("\n"))
        .expect("an editor is open")
}

pub fn editor_purpose(s: &State) -> Option<EditorPurpose> {
    s.active_ui()
        .and_then(|ui| ui.editor.as_ref())
        .map(|e| e.purpose)
}

pub fn ui_error(s: &State) -> Option<String> {
    s.active_ui().and_then(|ui| ui.error.clone())
}

/// The effect of answering gate `id` of the first session with `decision`.
pub fn answer_fx(id: &str, decision: Decision) -> Vec<Effect> {
    vec![Effect::Send(
        SessionId::FIRST,
        Command::Answer {
            gate_id: id.into(),
            decision,
        },
    )]
}

/// The last row of `node`'s transcript.
pub fn last(s: &State, node: usize) -> &ItemKind {
    &s.tree.nodes[node]
        .transcript
        .items
        .last()
        .expect("the transcript has rows")
        .kind
}

pub fn last_audit(s: &State, node: usize) -> (String, Tone) {
    match last(s, node) {
        ItemKind::Audit { text, tone } => (text.clone(), *tone),
        other => panic!("last row is not an audit row: {other:?}"),
    }
}
