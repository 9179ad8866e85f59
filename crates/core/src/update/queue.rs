//! The shown session's queued messages (iii `harness::status.queued`): `u` lists them, `e`
//! puts one in the prompt where Enter saves it in place (`Command::EditQueued`), `d` twice
//! removes it (`Command::Unqueue`). The backend re-reads the queue after each change, so the
//! list always shows what the engine holds, never what we hoped it holds.

use crate::input::{KeyCode, KeyEvent};

use super::super::msg::{Command, Effect, Queue};
use super::super::state::{Focus, Overlay, QueueEdit, State};

/// A fresh read of the acting session's queue.
pub(super) fn replaced(state: &mut State, q: Queue) {
    state.queue = q;
    if !state.acting_on_shown() {
        return;
    }
    let n = state.queue.entries.len();
    if let Some(Overlay::Queue {
        cursor,
        confirm_remove,
    }) = &mut state.overlay
    {
        *cursor = (*cursor).min(n.saturating_sub(1));
        // A removal to confirm for an entry that left the queue meanwhile is void.
        if confirm_remove
            .as_ref()
            .is_some_and(|id| !state.sessions[state.selected].queue.has(id))
        {
            *confirm_remove = None;
        }
    }
}

/// `u`: the queue of the shown session.
pub(super) fn open(state: &mut State) {
    if state.queue.entries.is_empty() {
        state.status_line = Some(
            "no queued messages here (a message sent while an iii turn runs waits in its queue)"
                .into(),
        );
        return;
    }
    state.overlay = Some(Overlay::Queue {
        cursor: 0,
        confirm_remove: None,
    });
}

/// Keys of the queue view.
pub(super) fn key(
    state: &mut State,
    cursor: usize,
    confirm_remove: Option<String>,
    key: KeyEvent,
    fx: &mut Vec<Effect>,
) {
    let n = state.queue.entries.len();
    let cursor = cursor.min(n.saturating_sub(1));
    let set = |state: &mut State, cursor: usize, confirm_remove: Option<String>| {
        state.overlay = Some(Overlay::Queue {
            cursor,
            confirm_remove,
        });
    };
    let changes = matches!(
        key.code,
        KeyCode::Char('e') | KeyCode::Enter | KeyCode::Char('d') | KeyCode::Delete
    );
    if changes && state.replay.is_some() {
        state.status_line = Some("read-only replay: the queue is shown as recorded".into());
        return;
    }
    match key.code {
        KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('u') => state.overlay = None,
        KeyCode::Up | KeyCode::Char('k') => set(state, cursor.saturating_sub(1), None),
        KeyCode::Down | KeyCode::Char('j') => {
            set(state, (cursor + 1).min(n.saturating_sub(1)), None)
        }
        KeyCode::Home => set(state, 0, None),
        KeyCode::End => set(state, n.saturating_sub(1), None),
        KeyCode::Char('e') | KeyCode::Enter => edit(state, cursor, confirm_remove),
        KeyCode::Char('d') | KeyCode::Delete => {
            let Some(entry) = state.queue.entries.get(cursor) else {
                return;
            };
            let id = entry.entry_id.clone();
            if let Some(why) = state.session.offline.clone() {
                state.status_line = Some(format!(
                    "offline: {why}; the queue cannot be changed until the engine is back"
                ));
                return set(state, cursor, None);
            }
            if confirm_remove.as_deref() != Some(id.as_str()) {
                // Removing cannot be undone: it takes a second press on the same entry.
                state.status_line = Some("press d again to remove this queued message".into());
                return set(state, cursor, Some(id));
            }
            state.status_line = Some("removing the queued message…".into());
            fx.push(Effect::Send(
                state.sid(),
                Command::Unqueue {
                    entry_id: id.clone(),
                },
            ));
            set(state, cursor, None);
        }
        _ => set(state, cursor, None),
    }
}

/// `e`: the entry's text into the prompt, to be saved in place with Enter.
fn edit(state: &mut State, cursor: usize, confirm_remove: Option<String>) {
    let Some(entry) = state.queue.entries.get(cursor) else {
        return;
    };
    if !entry.exact {
        state.status_line = Some(
            "this message is too long or holds control characters to edit here (saving would replace it with what is shown); d removes it"
                .into(),
        );
        state.overlay = Some(Overlay::Queue {
            cursor,
            confirm_remove,
        });
        return;
    }
    if !state.prompt_text().trim().is_empty() && state.queue_edit.is_none() {
        state.status_line =
            Some("the prompt holds text: send it or clear it (Ctrl-U) first".into());
        state.overlay = Some(Overlay::Queue {
            cursor,
            confirm_remove,
        });
        return;
    }
    let (entry_id, text) = (entry.entry_id.clone(), entry.text.clone());
    state.prompt.clear();
    state.prompt.insert_str(&text);
    state.queue_edit = Some(QueueEdit {
        session: state.sid(),
        entry_id,
    });
    state.overlay = None;
    state.focus = Focus::Prompt;
    state.typed_since_send = true;
}

/// Enter in the prompt while a queued message is edited: save it in place. Returns false
/// when no edit is under way (the prompt sends as usual).
pub(super) fn send_edit(state: &mut State, fx: &mut Vec<Effect>) -> bool {
    let Some(edit) = state.queue_edit.take() else {
        return false;
    };
    let text = state.prompt_text();
    if edit.session != state.shown().id {
        // The edit belongs to the session it was started in: never save it into another.
        state.queue_edit = Some(edit);
        state.status_line = Some(
            "this prompt edits a queued message of another session: show that session to save it, or Esc to cancel the edit"
                .into(),
        );
        return true;
    }
    if let Some(why) = state
        .session_by_id(edit.session)
        .and_then(|s| s.session.offline.clone())
    {
        // Nothing can reach the engine: keep the edit and its text for when it is back.
        state.queue_edit = Some(edit);
        state.status_line = Some(format!(
            "offline: {why}; the queued message was not changed (your text stays in the prompt)"
        ));
        return true;
    }
    let still = state
        .session_by_id(edit.session)
        .is_some_and(|s| !s.closed && s.queue.has(&edit.entry_id));
    if !still {
        state.status_line = Some(
            "that message left the queue meanwhile (it was sent or removed); your text stays in the prompt: Enter sends it as a new message"
                .into(),
        );
        return true;
    }
    if text.trim().is_empty() {
        state.queue_edit = Some(edit);
        state.status_line =
            Some("an empty message cannot be saved: d in the queue (u) removes it".into());
        return true;
    }
    state.prompt.clear();
    state.status_line = Some("queued message saved in place".into());
    fx.push(Effect::Send(
        edit.session,
        Command::EditQueued {
            entry_id: edit.entry_id,
            text,
        },
    ));
    true
}

/// Esc in the prompt while a queued message is edited: drop the edit; the message stays as
/// it was.
pub(super) fn cancel_edit(state: &mut State) -> bool {
    if state.queue_edit.take().is_none() {
        return false;
    }
    state.prompt.clear();
    state.status_line = Some("edit cancelled: the queued message is unchanged".into());
    true
}
