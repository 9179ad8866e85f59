//! The prompt line: sending, pasting into an editor, the mode picker, usage.

use super::*;

// ---- prompt

#[test]
fn sending_a_prompt() {
    let mut s = st();
    assert_eq!(
        press(&mut s, KeyCode::Enter),
        vec![],
        "an empty prompt sends nothing"
    );
    typ(&mut s, "first linex");
    press(&mut s, KeyCode::Backspace);
    update(
        &mut s,
        crate::Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT)),
    );
    typ(&mut s, "second");
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Send(
            crate::state::SessionId::FIRST,
            Command::Prompt("first line\nsecond".into())
        )]
    );
    assert_eq!(
        last(&s, 0),
        &ItemKind::User {
            text: "first line\nsecond".into()
        }
    );
    assert_eq!(s.prompt_text(), "");
    assert_eq!(s.focus, Focus::Prompt);
    // A paste lands in the prompt.
    update(&mut s, crate::Msg::Paste("pasted\r\ntext".into()));
    assert_eq!(s.prompt_text(), "pasted\ntext");
}

#[test]
fn paste_goes_into_an_open_gate_editor() {
    let mut s = st();
    open(&mut s, bash("g1", "touch x"));
    ch(&mut s, 'n');
    update(&mut s, crate::Msg::Paste("two\nlines".into()));
    assert_eq!(
        editor_text(&s),
        "two lines",
        "one-line editors flatten pastes"
    );
    assert_eq!(s.prompt_text(), "");
}

#[test]
fn mode_picker_sends_set_mode_from_the_modes_the_agent_declared_only() {
    use crate::msg::Capabilities;
    use crate::state::Pick;
    let mut s = st();
    press(&mut s, KeyCode::Esc);
    // Nothing declared yet: nothing offered (never another agent's modes).
    ch(&mut s, 'm');
    assert_eq!(s.overlay, None);
    assert!(s.status_line.as_deref().unwrap().contains("no modes"));
    ev(
        &mut s,
        BackendEvent::Capabilities(Capabilities {
            modes: vec!["default".into(), "acceptEdits".into()],
            ..Capabilities::default()
        }),
    );
    ch(&mut s, 'm');
    assert_eq!(
        s.overlay,
        Some(Overlay::Picker {
            pick: Pick::Mode,
            cursor: 0
        })
    );
    ch(&mut s, 'j');
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Send(
            crate::state::SessionId::FIRST,
            Command::SetMode("acceptEdits".into())
        )]
    );
    assert_eq!(s.overlay, None);
}

/// An agent that declares its modes and models as session options (opencode, codex-acp): `m`
/// offers its mode option's values and sets them with `session/set_config_option`; `O` lists
/// every option and picks any of them.
#[test]
fn config_options_drive_m_and_the_options_picker() {
    use crate::msg::{Capabilities, ConfigOption};
    use crate::state::Pick;
    let mut s = st();
    press(&mut s, KeyCode::Esc);
    let select = |id: &str, cat: &str, cur: &str, vals: &[&str]| ConfigOption {
        id: id.into(),
        name: id.into(),
        category: Some(cat.into()),
        current: cur.into(),
        choices: vals
            .iter()
            .map(|v| (v.to_string(), v.to_uppercase()))
            .collect(),
        ..ConfigOption::default()
    };
    ev(
        &mut s,
        BackendEvent::Capabilities(Capabilities {
            options: vec![
                select("agent", "mode", "plan", &["build", "plan"]),
                select("llm", "model", "a", &["a", "b", "c"]),
            ],
            ..Capabilities::default()
        }),
    );
    ch(&mut s, 'm');
    // It starts on the current value.
    assert_eq!(
        s.overlay,
        Some(Overlay::Picker {
            pick: Pick::Mode,
            cursor: 1
        })
    );
    ch(&mut s, 'k');
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Send(
            crate::state::SessionId::FIRST,
            Command::SetConfig {
                id: "agent".into(),
                value: "build".into()
            }
        )]
    );
    ch(&mut s, 'O');
    assert_eq!(s.overlay, Some(Overlay::Options { cursor: 0 }));
    ch(&mut s, 'j');
    press(&mut s, KeyCode::Enter);
    assert_eq!(
        s.overlay,
        Some(Overlay::Picker {
            pick: Pick::Option("llm".into()),
            cursor: 0
        })
    );
    ch(&mut s, 'j');
    ch(&mut s, 'j');
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Send(
            crate::state::SessionId::FIRST,
            Command::SetConfig {
                id: "llm".into(),
                value: "c".into()
            }
        )]
    );
}

#[test]
fn usage_accumulates() {
    let mut s = st();
    for _ in 0..2 {
        ev(
            &mut s,
            BackendEvent::Usage {
                input_tokens: 100,
                output_tokens: 20,
                cost_usd: 0.5,
            },
        );
    }
    assert_eq!(s.session.input_tokens, 200);
    assert_eq!(s.session.output_tokens, 40);
    assert_eq!(s.session.turns, 2);
    assert_eq!(s.tree.nodes[0].tokens, 240);
    assert!((s.session.cost_usd - 1.0).abs() < 1e-9);
}

/// Issue 22 item 1: a session that takes no prompt (a remote agent's channel) never has the
/// prompt's focus: keys reach the panes from the first frame, `i` and Tab say or skip it,
/// a paste is refused, and `g` opens its card with no other key first.
#[test]
fn a_session_without_a_prompt_never_takes_the_prompts_focus() {
    let mut s = st();
    assert_eq!(s.focus, Focus::Prompt);
    ev(
        &mut s,
        BackendEvent::Abilities(crate::msg::Abilities::calls_only(
            "a remote agent's channel".into(),
        )),
    );
    assert_eq!(s.focus, Focus::Transcript, "no prompt box: no prompt focus");
    ch(&mut s, 'i');
    assert_eq!(s.focus, Focus::Transcript);
    assert!(
        s.status_line
            .as_deref()
            .unwrap()
            .contains("takes no prompt")
    );
    for _ in 0..4 {
        press(&mut s, KeyCode::Tab);
        assert_ne!(s.focus, Focus::Prompt);
    }
    update(&mut s, crate::Msg::Paste("rm -rf /".into()));
    assert!(s.prompt_text().is_empty());
    // A card that arrives while the person reads elsewhere: `g` then `y`.
    s.focus = Focus::Tree;
    open(&mut s, bash("g1", "touch x"));
    s.focus = Focus::Tree;
    ch(&mut s, 'g');
    assert_eq!(s.focus, Focus::Gate);
    let fx = ch(&mut s, 'y');
    assert_eq!(
        fx,
        answer_fx(
            "g1",
            Decision::Allow {
                updated_input: None,
                always: false
            }
        )
    );
}
