//! Cards of adopted sessions (issue 36): a Codex card offers only what Codex takes, `T`
//! hands any adopted card back to its own terminal, and quitting never decides one.

use super::*;
use crate::gate::OwnTerminal;

/// The card the adopted sessions' `gates::gate` builds for Codex's `PermissionRequest` hook
/// on Bash `{"command": "rm x", "description": "tidy"}`: no always, no edit, its own terminal
/// waiting on it.
fn codex_rm(id: &str) -> Gate {
    let mut card = bash_card("rm x");
    card.input = json!({"command": "rm x", "description": "tidy"}).to_string();
    card.description = Some("tidy".into());
    card.suggestions = Vec::new();
    card.always_allowed = false;
    card.editable = false;
    card.own_terminal = Some(OwnTerminal {
        shows: "Codex shows only \"Running hook\" there, no prompt of its own, until this is \
                answered here or handed back (Esc there stops the turn)"
            .into(),
        interrupt: false,
    });
    Gate {
        opened_ms: 0,
        ..gate(
            id,
            "root",
            GateKind::Permission(card),
            json!({"behavior": "allow"}),
            "AllowBody|DenyBody",
        )
    }
}

/// The card the adopted sessions' `gates::gate` builds for Claude's `PermissionRequest` hook
/// on `AskUserQuestion` with `questions_input()`: Claude's own dialog shows it too.
fn claude_question(id: &str) -> Gate {
    let input = questions_input();
    Gate {
        opened_ms: 0,
        ..gate(
            id,
            "root",
            GateKind::Question(Question {
                questions: qspecs(&input),
                malformed: None,
                own_terminal: Some(OwnTerminal {
                    shows: "Claude shows its own dialog there too: whichever answer comes \
                            first is the one"
                        .into(),
                    interrupt: true,
                }),
            }),
            json!({"behavior": "allow", "updatedInput": input}),
            "AllowBody|DenyBody",
        )
    }
}

#[test]
fn a_codex_card_takes_only_what_codex_takes() {
    let mut s = st();
    open(&mut s, codex_rm("h-1"));
    // No always, no edit, no deny-and-stop: each key does nothing.
    for c in ['a', 'e', 'N'] {
        assert_eq!(ch(&mut s, c), vec![], "{c}");
        assert_eq!(s.gates.len(), 1, "{c}");
        assert!(editor_purpose(&s).is_none(), "{c}");
    }
    let fx = ch(&mut s, 'T');
    assert_eq!(
        fx,
        answer_fx(
            "h-1",
            Decision::OwnTerminal {
                why: "handed to its own terminal".into()
            }
        )
    );
    assert_eq!(
        last_audit(&s, 0),
        (
            "handed to its own terminal: Bash `rm x`".to_string(),
            Tone::Neutral
        )
    );
    // Allow once and deny with a message stay.
    open(&mut s, codex_rm("h-2"));
    ch(&mut s, 'n');
    typ(&mut s, "not now");
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        answer_fx(
            "h-2",
            Decision::Deny {
                message: "not now".into(),
                interrupt: false
            }
        )
    );
}

#[test]
fn a_claude_question_is_handed_back_with_t_and_quitting_decides_nothing() {
    let mut s = st();
    let q = claude_question("h-1");
    open(&mut s, q);
    assert_eq!(
        ch(&mut s, 'T'),
        answer_fx(
            "h-1",
            Decision::OwnTerminal {
                why: "handed to its own terminal".into()
            }
        )
    );
    // What a quit sends an adopted card: nothing (its own prompt decides), never a deny.
    let g = codex_rm("h-2");
    assert_eq!(
        Decision::on_exit(&g.kind),
        Decision::OwnTerminal {
            why: "left to its own terminal (switchboard stopped)".into()
        }
    );
    assert!(matches!(
        Decision::on_exit(&bash("x", "ls").kind),
        Decision::Deny { .. }
    ));
}
