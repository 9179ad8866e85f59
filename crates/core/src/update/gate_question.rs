//! Keys on a question card: moving between options and pages, choosing, typing "Other", and
//! confirming each page until the answers go out.

use crate::input::{KeyCode, KeyEvent};

use super::super::gate::{Decision, join_answer};
use super::super::msg::Effect;
use super::super::state::{Editor, EditorPurpose, GateUi, State};
use super::decide::answer;
use super::gate_card::{active_ui_mut, open_editor};

/// A question page without options is answered by typing: its answer field opens at once.
fn free_text_page(ui: &mut GateUi, q: &super::super::gate::Question) {
    if ui.editor.is_none()
        && q.questions
            .get(ui.page)
            .is_some_and(|s| s.options.is_empty())
    {
        let text = ui.other.get(ui.page).cloned().unwrap_or_default();
        ui.editor = Some(Editor::new(EditorPurpose::Other, &text));
    }
}

pub(super) fn question_key(
    state: &mut State,
    id: &str,
    q: &super::super::gate::Question,
    key: KeyEvent,
    fx: &mut Vec<Effect>,
) {
    let Some(ui) = active_ui_mut(state) else {
        return;
    };
    let page = ui.page.min(q.questions.len().saturating_sub(1));
    let spec = &q.questions[page];
    let other_row = spec.options.len();
    match key.code {
        KeyCode::Up | KeyCode::Char('k') => ui.cursor = ui.cursor.saturating_sub(1),
        KeyCode::Down | KeyCode::Char('j') => ui.cursor = (ui.cursor + 1).min(other_row),
        KeyCode::Left | KeyCode::Char('h') => {
            ui.page = page.saturating_sub(1);
            ui.cursor = 0;
            free_text_page(ui, q);
        }
        KeyCode::Right | KeyCode::Char('l') => {
            ui.page = (page + 1).min(q.questions.len() - 1);
            ui.cursor = 0;
            free_text_page(ui, q);
        }
        KeyCode::Char(c @ '1'..='9') => {
            let i = (c as usize) - ('1' as usize);
            if i < other_row {
                ui.cursor = i;
                toggle(ui, page, spec.multi, i);
            }
        }
        KeyCode::Char(' ') => {
            if ui.cursor == other_row {
                let text = ui.other[page].clone();
                if spec.multi && !text.is_empty() {
                    ui.other_on[page] = !ui.other_on[page];
                } else {
                    open_editor(state, EditorPurpose::Other, &text);
                }
            } else {
                let c = ui.cursor;
                toggle(ui, page, spec.multi, c);
            }
        }
        KeyCode::Enter => {
            if ui.cursor == other_row && !(spec.multi && ui.other_on[page]) {
                let text = ui.other[page].clone();
                return open_editor(state, EditorPurpose::Other, &text);
            }
            if !spec.multi && ui.cursor < other_row {
                let c = ui.cursor;
                toggle(ui, page, false, c);
            }
            confirm_page(state, id, q, page, fx);
        }
        KeyCode::Esc => fx.extend(answer(
            state,
            id,
            Decision::Deny {
                message: "The user declined to answer.".into(),
                interrupt: false,
            },
        )),
        KeyCode::Char('T') if q.own_terminal.is_some() => {
            fx.extend(super::decide::hand_back(state, id))
        }
        _ => {}
    }
}

fn toggle(ui: &mut GateUi, page: usize, multi: bool, i: usize) {
    ui.error = None;
    if multi {
        ui.chosen[page][i] = !ui.chosen[page][i];
    } else {
        ui.chosen[page].iter_mut().for_each(|c| *c = false);
        ui.chosen[page][i] = true;
        ui.other_on[page] = false;
    }
}

/// Enter on a page: check it has an answer, then go to the next unconfirmed page or submit.
pub(super) fn confirm_page(
    state: &mut State,
    id: &str,
    q: &super::super::gate::Question,
    page: usize,
    fx: &mut Vec<Effect>,
) {
    let Some(ui) = active_ui_mut(state) else {
        return;
    };
    let answer_of = |ui: &GateUi, p: usize| {
        let other = ui.other_on[p].then(|| ui.other[p].as_str());
        join_answer(&q.questions[p], &ui.chosen[p], other)
    };
    if answer_of(ui, page).is_empty() {
        ui.error = Some(if q.questions[page].multi {
            "choose at least one option (Space toggles), or type Other".into()
        } else {
            "choose an option".into()
        });
        return;
    }
    ui.confirmed[page] = true;
    ui.error = None;
    match (0..q.questions.len()).find(|p| !ui.confirmed[*p]) {
        Some(next) => {
            ui.page = next;
            ui.cursor = 0;
            free_text_page(ui, q);
        }
        None => {
            let answers = q
                .questions
                .iter()
                .enumerate()
                .map(|(p, spec)| (spec.question.clone(), answer_of(ui, p)))
                .collect();
            fx.extend(answer(state, id, Decision::Answer { answers }));
        }
    }
}
