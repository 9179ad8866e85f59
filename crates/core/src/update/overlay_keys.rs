//! Keys inside an overlay: pickers, the options list, the rules view, confirmations and the
//! read-only views (help, log, status, text, detail).

use crate::input::{KeyCode, KeyEvent};

use super::super::msg::Effect;
use super::super::state::{Overlay, Pick, State};
use super::new_session;
use super::quit::quit_now;
use super::workspace;

pub(super) fn open_overlay(state: &mut State, o: Overlay) {
    state.overlay_scroll = 0;
    state.overlay = Some(o);
}

pub(super) fn overlay_key(
    state: &mut State,
    overlay: Overlay,
    key: KeyEvent,
    fx: &mut Vec<Effect>,
) {
    match overlay {
        Overlay::AgentStuck => super::cancel::overlay_key(state, key, fx),
        Overlay::Inbox => workspace::inbox_key(state, key, fx),
        Overlay::NewSession(form) => new_session::new_session_key(state, form, key, fx),
        Overlay::ConfirmClose { session } => workspace::confirm_close_key(state, session, key, fx),
        Overlay::Queue {
            cursor,
            confirm_remove,
        } => super::queue::key(state, cursor, confirm_remove, key, fx),
        Overlay::ConfirmQuit => match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => {
                state.overlay = None;
                quit_now(state, fx);
            }
            KeyCode::Char('n') | KeyCode::Esc | KeyCode::Char('q') => state.overlay = None,
            _ => {}
        },
        Overlay::Picker { pick, cursor } => {
            let n = state.pick_choices(&pick).len();
            match key.code {
                KeyCode::Up | KeyCode::Char('k') => {
                    state.overlay = Some(Overlay::Picker {
                        pick,
                        cursor: cursor.saturating_sub(1),
                    })
                }
                KeyCode::Down | KeyCode::Char('j') => {
                    state.overlay = Some(Overlay::Picker {
                        pick,
                        cursor: (cursor + 1).min(n.saturating_sub(1)),
                    })
                }
                KeyCode::Enter => {
                    state.overlay = None;
                    let Some((value, label)) = state.pick_choices(&pick).get(cursor).cloned()
                    else {
                        return;
                    };
                    state.status_line =
                        Some(format!("{} → {label} (requested)", pick_name(state, &pick)));
                    let cmd = state.pick_command(&pick, value);
                    fx.push(Effect::Send(state.sid(), cmd));
                }
                KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('m') => state.overlay = None,
                _ => {}
            }
        }
        Overlay::Options { cursor } => {
            let rows = state.option_rows();
            match key.code {
                KeyCode::Up | KeyCode::Char('k') => {
                    state.overlay = Some(Overlay::Options {
                        cursor: cursor.saturating_sub(1),
                    })
                }
                KeyCode::Down | KeyCode::Char('j') => {
                    state.overlay = Some(Overlay::Options {
                        cursor: (cursor + 1).min(rows.len().saturating_sub(1)),
                    })
                }
                KeyCode::Enter => {
                    state.overlay = None;
                    if let Some((_, _, pick)) = rows.into_iter().nth(cursor) {
                        open_picker(state, pick);
                    }
                }
                KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('O') => state.overlay = None,
                _ => {}
            }
        }
        Overlay::Rules { cursor } => {
            let n = state.rules.list.len();
            if !matches!(key.code, KeyCode::Char('d') | KeyCode::Delete) {
                state.pending_delete = None;
            }
            match key.code {
                KeyCode::Up | KeyCode::Char('k') => {
                    state.overlay = Some(Overlay::Rules {
                        cursor: cursor.saturating_sub(1),
                    })
                }
                KeyCode::Down | KeyCode::Char('j') => {
                    state.overlay = Some(Overlay::Rules {
                        cursor: (cursor + 1).min(n.saturating_sub(1)),
                    })
                }
                KeyCode::Char('d') | KeyCode::Delete if cursor < n => {
                    // A saved rule is removed from its file: that takes a second press.
                    if let super::super::rules::Origin::File(path) =
                        &state.rules.list[cursor].origin
                        && state.pending_delete != Some(cursor)
                    {
                        state.status_line =
                            Some(format!("press d again to delete this rule from {path}"));
                        state.pending_delete = Some(cursor);
                        return;
                    }
                    state.pending_delete = None;
                    let rule = state.rules.list.remove(cursor);
                    state.status_line = Some(match rule.origin {
                        super::super::rules::Origin::Session => format!(
                            "rule deleted: {} (an always-allow already sent to the agent stays with it this session)",
                            rule.describe()
                        ),
                        _ => format!("rule deleted: {}", rule.describe()),
                    });
                    match (rule.origin, rule.scope) {
                        (super::super::rules::Origin::File(path), _) => {
                            fx.push(Effect::RemoveRule {
                                path,
                                spec: rule.spec,
                            })
                        }
                        (super::super::rules::Origin::Session, Some(session)) => {
                            fx.push(Effect::SessionRule {
                                session,
                                spec: rule.spec,
                                kept: false,
                            })
                        }
                        _ => {}
                    }
                    state.overlay = Some(Overlay::Rules {
                        cursor: cursor.min(n.saturating_sub(2)),
                    });
                }
                KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('R') => state.overlay = None,
                _ => {}
            }
        }
        Overlay::Help
        | Overlay::Log
        | Overlay::Status
        | Overlay::Text { .. }
        | Overlay::Detail { .. } => match key.code {
            KeyCode::Esc
            | KeyCode::Char('q')
            | KeyCode::Char('?')
            | KeyCode::Enter
            | KeyCode::Char('v') => state.overlay = None,
            KeyCode::Char('L') if overlay == Overlay::Log => state.overlay = None,
            KeyCode::Char('s') if overlay == Overlay::Status => state.overlay = None,
            KeyCode::Up
            | KeyCode::Char('k')
            | KeyCode::PageUp
            | KeyCode::Down
            | KeyCode::Char('j')
            | KeyCode::PageDown => {
                // Logs count back from the newest line; other views count down from the top.
                let step: isize = match key.code {
                    KeyCode::PageUp => 10,
                    KeyCode::PageDown => -10,
                    KeyCode::Up | KeyCode::Char('k') => 1,
                    _ => -1,
                };
                let step = if matches!(overlay, Overlay::Log) {
                    step
                } else {
                    -step
                };
                state.overlay_scroll = state.overlay_scroll.saturating_add_signed(step);
            }
            _ => {}
        },
    }
}

/// What a picker sets, in words (its option's name).
fn pick_name(state: &State, pick: &Pick) -> String {
    match pick {
        Pick::Mode => "mode".into(),
        Pick::Model => "model".into(),
        Pick::Option(id) => state
            .session
            .capabilities
            .options
            .iter()
            .find(|o| o.id == *id)
            .map_or_else(|| id.clone(), |o| o.name.clone()),
    }
}

/// Open the picker for `pick` on its current value; say so when the agent declared nothing
/// to pick from (never offer another agent's choices).
pub(super) fn open_picker(state: &mut State, pick: Pick) {
    let choices = state.pick_choices(&pick);
    if choices.is_empty() {
        state.status_line = Some(format!(
            "this agent declared no {} to choose from",
            match pick {
                Pick::Mode => "modes",
                Pick::Model => "models",
                Pick::Option(_) => "values",
            }
        ));
        return;
    }
    let cur = state.pick_current(&pick);
    let cursor = choices
        .iter()
        .position(|(v, _)| Some(v) == cur.as_ref())
        .unwrap_or(0);
    open_overlay(state, Overlay::Picker { pick, cursor });
}
