//! Keys outside the gate card: focus, panes, prompt, paste and the mouse. Overlays take their
//! keys in `overlay_keys.rs`; interrupting and quitting are in `quit.rs`.

use crate::input::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};

use super::super::msg::{Command, Effect};
use super::super::state::{Focus, Overlay, Pick, State};
use super::super::transcript::ItemKind;
use super::gate_keys;
use super::new_session;
use super::overlay_keys::{open_overlay, open_picker, overlay_key};
use super::quit::{interrupt, request_quit};
use super::view;
use super::workspace;

pub(super) fn on_key(state: &mut State, key: KeyEvent, fx: &mut Vec<Effect>) {
    if key.kind == KeyEventKind::Release {
        return;
    }
    let key = translate(state, key);
    state.status_line = None;
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    // Global chords work everywhere, even inside editors.
    match key.code {
        KeyCode::Char('c') if ctrl => return interrupt(state, fx),
        KeyCode::Char('d') if ctrl => return request_quit(state, fx),
        // Ctrl-\ (dtach's detach key); terminals without the kitty protocol send it as
        // Ctrl-4 (0x1c).
        KeyCode::Char('\\' | '4') if ctrl => return detach(state, fx),
        KeyCode::Char('n') if ctrl && state.overlay.is_none() => {
            return new_session::open_new_session(state);
        }
        _ => {}
    }
    if let Some(overlay) = state.overlay.clone() {
        return overlay_key(state, overlay, key, fx);
    }
    if view::search_editing_key(state, key) {
        return;
    }
    if key.code == KeyCode::Char('f') && ctrl {
        return view::start_search(state, true);
    }
    if state.focus == Focus::Gate && gate_keys::editor_open(state) {
        return gate_keys::on_key(state, key, fx);
    }
    match key.code {
        KeyCode::Tab => return cycle_focus(state, true),
        KeyCode::BackTab => return cycle_focus(state, false),
        _ => {}
    }
    if state.focus == Focus::Prompt {
        return prompt_key(state, key, fx);
    }
    // Single-letter commands outside any text input.
    match key.code {
        KeyCode::Char('q') => return request_quit(state, fx),
        KeyCode::Char('?') => return open_overlay(state, Overlay::Help),
        KeyCode::Char('L') => return open_overlay(state, Overlay::Log),
        KeyCode::Char('s') => {
            return open_overlay(state, Overlay::Status);
        }
        KeyCode::Char('m') => return open_picker(state, Pick::Mode),
        KeyCode::Char('O') => {
            if state.option_rows().is_empty() {
                state.status_line = Some("this agent declared no session options".into());
                return;
            }
            return open_overlay(state, Overlay::Options { cursor: 0 });
        }
        KeyCode::Char('g') => return workspace::jump_to_oldest(state),
        KeyCode::Char('I') => return workspace::open_inbox(state),
        KeyCode::Char('u') => return super::queue::open(state),
        KeyCode::Char('/') => return view::start_search(state, false),
        KeyCode::Char('R') if state.focus != Focus::Gate => {
            return open_overlay(state, Overlay::Rules { cursor: 0 });
        }
        // `i` works on a gate card too: it uses no `i`, and typing must never fall into it.
        KeyCode::Char('i') => {
            if state.session.abilities.prompt {
                state.focus = Focus::Prompt;
            } else {
                state.status_line = Some(no_prompt_here(state));
            }
            return;
        }
        _ => {}
    }
    if view::key(state, key, fx) {
        return;
    }
    // Session commands outside a card (a card's letters answer it).
    if state.focus != Focus::Gate {
        match key.code {
            KeyCode::Char('x') => return workspace::request_close(state, fx),
            KeyCode::Char('X') => return workspace::restart(state, fx),
            KeyCode::Char(']') => return workspace::cycle(state, true),
            KeyCode::Char('[') => return workspace::cycle(state, false),
            KeyCode::Char('z') if state.focus == Focus::Tree => {
                return workspace::toggle_collapse(state);
            }
            _ => {}
        }
    }
    match state.focus {
        Focus::Tree => tree_key(state, key),
        Focus::Transcript => transcript_key(state, key),
        Focus::Gate => gate_keys::on_key(state, key, fx),
        Focus::Prompt => {}
    }
}

/// `[keys]` overrides: the key the user pressed as the key it stands for.
pub(super) fn translate(state: &State, mut key: KeyEvent) -> KeyEvent {
    if let KeyCode::Char(c) = key.code
        && !typing(state)
        && !key.modifiers.contains(KeyModifiers::CONTROL)
        && let Some(&to) = state.keymap.get(&c)
    {
        key.code = KeyCode::Char(to);
    }
    // A remapped chord (`new_session = "ctrl-t"`) stands for its default chord.
    if let KeyCode::Char(c) = key.code
        && key.modifiers.contains(KeyModifiers::CONTROL)
        && let Some(&to) = super::super::keymap::ctrl_char(c).and_then(|k| state.keymap.get(&k))
        && let Some(letter) = super::super::keymap::ctrl_letter(to)
    {
        key.code = KeyCode::Char(letter);
    }
    key
}

/// True when `key`, in `state`, would go to no gate even with a card focused: a global chord
/// (interrupt, quit, detach, new session), an overlay other than the inbox (the quit
/// question, help), the search line, focus moves and the commands `on_key` takes before a
/// card's letters. A host judges the other keys of a client whose screen showed the gates
/// against what it showed (a key meant for one gate must never answer another); these pass
/// whatever changed. The focus itself is not asked: a card gone since the frame moved it,
/// and the key was still meant for that card. Mirrors `on_key`'s order; when unsure it says
/// false (the key is judged).
pub fn leaves_gates_alone(state: &State, key: KeyEvent) -> bool {
    if key.kind == KeyEventKind::Release {
        return true;
    }
    let key = translate(state, key);
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Char('c' | 'd' | '\\' | '4') if ctrl => return true,
        KeyCode::Char('n') if ctrl && state.overlay.is_none() => return true,
        _ => {}
    }
    match &state.overlay {
        Some(Overlay::Inbox) => return false,
        Some(_) => return true,
        None => {}
    }
    if state.search.as_ref().is_some_and(|s| s.editing) {
        return true;
    }
    if key.code == KeyCode::Char('f') && ctrl {
        return true;
    }
    if state.focus == Focus::Gate && gate_keys::editor_open(state) {
        return false;
    }
    matches!(
        key.code,
        KeyCode::Tab
            | KeyCode::BackTab
            | KeyCode::Char('q' | '?' | 'L' | 's' | 'm' | 'O' | 'g' | 'I' | 'u' | '/' | 'i')
    )
}

/// True when a character key is text for an input (prompt, search query, any gate editor:
/// deny message, edited input, rule, raw reply, form field, Other answer) rather than a
/// command. `[keys]` overrides apply to commands only: typed text keeps the key pressed.
fn typing(state: &State) -> bool {
    match &state.overlay {
        // The dialog's text fields and the batch deny message are typed text.
        Some(Overlay::NewSession(form)) => {
            return form.field != super::super::state::NewSessionField::Choice;
        }
        // The inbox's own keys (Space, =, u, y, n) are never translated.
        Some(Overlay::Inbox) => return true,
        // Other overlays take keys before any input and have no text field of their own.
        Some(_) => return false,
        None => {}
    }
    state.focus == Focus::Prompt
        || state.search.as_ref().is_some_and(|s| s.editing)
        || (state.focus == Focus::Gate && gate_keys::editor_open(state))
}

fn cycle_focus(state: &mut State, forward: bool) {
    let mut order = vec![Focus::Tree, Focus::Transcript];
    if !state.gates.is_empty() {
        order.push(Focus::Gate);
    }
    if state.session.abilities.prompt {
        order.push(Focus::Prompt);
    }
    let i = order.iter().position(|f| *f == state.focus).unwrap_or(0);
    let n = order.len();
    state.focus = order[if forward {
        (i + 1) % n
    } else {
        (i + n - 1) % n
    }];
    if state.focus == Focus::Gate && state.active().is_none() {
        state.active_gate = state.gates.front().map(|g| g.id.clone());
    }
}

fn prompt_key(state: &mut State, key: KeyEvent, fx: &mut Vec<Effect>) {
    let newline = key
        .modifiers
        .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT);
    match key.code {
        KeyCode::Enter if !newline => {
            send_prompt(state, fx);
            state.typed_since_send = false;
        }
        KeyCode::Enter => {
            state.prompt.insert_newline();
            state.typed_since_send = true;
        }
        KeyCode::Esc => {
            super::queue::cancel_edit(state);
            state.focus = Focus::Transcript;
            state.typed_since_send = false;
        }
        // Ctrl-U clears the line (as in a shell), not the text widget's undo.
        KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => {
            state.prompt.delete_line_by_head();
            state.typed_since_send = true;
        }
        _ => {
            state.prompt.input(key);
            state.typed_since_send = true;
        }
    }
}

fn send_prompt(state: &mut State, fx: &mut Vec<Effect>) {
    if super::queue::send_edit(state, fx) {
        return;
    }
    let text = state.prompt_text();
    if text.trim().is_empty() {
        return;
    }
    if state.session.exited.is_some() {
        state.status_line = Some("the agent has exited; nothing can be sent".into());
        return;
    }
    state.prompt.clear();
    let at = state.now_ms;
    state.tree.nodes[0]
        .transcript
        .push(ItemKind::User { text: text.clone() }, at);
    state.selected_node = 0;
    state.scroll_back = 0;
    state.selected_item = None;
    fx.push(Effect::Send(state.sid(), Command::Prompt(text)));
}

pub(super) fn on_paste(state: &mut State, text: &str) {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    // An open dialog takes the paste into its own text field (one line), or drops it: it
    // never lands in the prompt hidden behind.
    match &mut state.overlay {
        Some(Overlay::NewSession(form)) => {
            let line = text.lines().next().unwrap_or("");
            if let Some(t) = form.text_mut()
                && t.len() + line.len() <= 4_096
            {
                t.push_str(line);
            }
            return;
        }
        Some(Overlay::Inbox) => {
            if let Some(m) = state.inbox.deny_message.as_mut()
                && m.len() + text.len() <= 2_000
            {
                m.push_str(&text.replace('\n', " "));
            }
            return;
        }
        Some(_) => return,
        None => {}
    }
    if state.focus == Focus::Gate && gate_keys::editor_open(state) {
        gate_keys::paste(state, &text);
    } else if state.session.abilities.prompt {
        state.focus = Focus::Prompt;
        if !state.prompt.insert_str(&text) {
            state.status_line = Some(format!(
                "the prompt holds at most {} KiB: the rest of the paste was not taken",
                crate::text_field::MAX_BYTES >> 10
            ));
        }
    } else {
        state.status_line = Some(no_prompt_here(state));
    }
}

pub(super) fn on_mouse(state: &mut State, m: MouseEvent) {
    if state.overlay.is_some() {
        return;
    }
    let at = (m.column, m.row);
    let tree = state.view.tree_area;
    let transcript = state.view.transcript_area;
    let in_tree = tree.contains(at.0, at.1);
    match m.kind {
        MouseEventKind::ScrollUp | MouseEventKind::ScrollDown if in_tree => {
            let up = m.kind == MouseEventKind::ScrollUp;
            let code = if up { KeyCode::Up } else { KeyCode::Down };
            tree_key(state, KeyEvent::new(code, KeyModifiers::NONE));
        }
        // The wheel acts on the pane under the pointer only.
        MouseEventKind::ScrollUp | MouseEventKind::ScrollDown
            if !transcript.contains(at.0, at.1) => {}
        MouseEventKind::ScrollUp => state.scroll_back = state.scroll_back.saturating_add(3),
        MouseEventKind::ScrollDown => {
            state.scroll_back = state.view.drawn_scroll_back.saturating_sub(3);
            if state.scroll_back == 0 {
                state.selected_item = None;
            }
        }
        MouseEventKind::Down(crate::input::MouseButton::Left) => {
            if in_tree {
                let row = (m.row - tree.y) as usize;
                let hit = state.view.tree_rows.get(row).copied();
                // The rows are from the last draw: keep only a node that still exists.
                if let Some((i, n)) = hit
                    && state
                        .sessions
                        .get(i)
                        .is_some_and(|s| n < s.tree.nodes.len())
                {
                    if i != state.selected {
                        state.select_session(i, n);
                    } else if n != state.selected_node {
                        state.selected_node = n;
                        state.selected_item = None;
                        state.scroll_back = 0;
                    }
                    state.focus = Focus::Tree;
                }
            } else if transcript.contains(at.0, at.1) {
                let row = (m.row - transcript.y) as usize;
                // The rows are from the last draw: the node may have changed since.
                let len = state.tree.nodes[state.selected_node].transcript.len();
                let item = state.view.item_rows.get(row).copied().filter(|i| *i < len);
                if let Some(i) = item {
                    // A second click on the selected item expands or collapses it.
                    let again = state.selected_item == Some(i) && state.focus == Focus::Transcript;
                    let node = state.selected_node;
                    let t = &mut state.tree.nodes[node].transcript;
                    if again
                        && let Some(it) = t.items.get(i)
                        && it.kind.expandable()
                    {
                        t.set_expanded(i, !it.expanded);
                    }
                    state.selected_item = Some(i);
                    state.focus = Focus::Transcript;
                }
            }
        }
        _ => {}
    }
}

fn tree_key(state: &mut State, key: KeyEvent) {
    // Positions, not the list: a move costs the tree's depth, not its size.
    let here = (state.selected, state.selected_node);
    let pos = workspace::row_index(state, here).unwrap_or(0);
    let last = workspace::row_count(state).saturating_sub(1);
    let new = match key.code {
        KeyCode::Up | KeyCode::Char('k') => pos.saturating_sub(1),
        KeyCode::Down | KeyCode::Char('j') => (pos + 1).min(last),
        KeyCode::Home => 0,
        KeyCode::End => last,
        KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') => {
            state.focus = Focus::Transcript;
            return;
        }
        _ => return,
    };
    if let Some((i, node)) = workspace::rows_from(state, new).next()
        && (i, node) != here
    {
        if i == state.selected {
            state.selected_node = node;
            state.selected_item = None;
            state.scroll_back = 0;
        } else {
            state.select_session(i, node);
        }
    }
}

fn transcript_key(state: &mut State, key: KeyEvent) {
    let len = state.tree.nodes[state.selected_node].transcript.len();
    let page = (state.view.transcript_height.max(2) as usize) - 1;
    match key.code {
        KeyCode::Up | KeyCode::Char('k') => {
            // An empty transcript has nothing to select.
            state.selected_item = match state.selected_item {
                Some(i) => Some(i.saturating_sub(1)),
                None => len.checked_sub(1),
            };
        }
        KeyCode::Down | KeyCode::Char('j') => {
            state.selected_item = match state.selected_item {
                Some(i) if i + 1 < len => Some(i + 1),
                _ => None,
            };
            if state.selected_item.is_none() {
                state.scroll_back = 0;
            }
        }
        KeyCode::Enter | KeyCode::Char(' ') => {
            let (node, sel) = (state.selected_node, state.selected_item);
            let t = &mut state.tree.nodes[node].transcript;
            if let Some(i) = sel
                && let Some(item) = t.items.get(i)
                && item.kind.expandable()
            {
                t.set_expanded(i, !item.expanded);
            }
        }
        KeyCode::PageUp => {
            state.selected_item = None;
            state.scroll_back = state.view.drawn_scroll_back + page;
        }
        KeyCode::PageDown => {
            state.selected_item = None;
            state.scroll_back = state.view.drawn_scroll_back.saturating_sub(page);
        }
        KeyCode::Home => {
            state.selected_item = None;
            state.scroll_back = usize::MAX / 2;
        }
        KeyCode::End | KeyCode::Esc => {
            if key.code == KeyCode::Esc {
                state.search = None;
            }
            state.selected_item = None;
            state.scroll_back = 0;
        }
        KeyCode::Left | KeyCode::Char('h') => state.focus = Focus::Tree,
        _ => {}
    }
}

/// What `i` (or a paste) says on a session that takes no prompt.
fn no_prompt_here(state: &State) -> String {
    if state.pending_total() == 0 {
        "this session takes no prompt from here: it shows another party's calls".into()
    } else {
        "this session takes no prompt from here: answer its cards (g opens the oldest)".into()
    }
}

/// The detach key: an attached client leaves its host running; a workspace that lives in this
/// terminal says how to get one.
fn detach(state: &mut State, fx: &mut Vec<Effect>) {
    if state.hosted.is_some() {
        fx.push(Effect::Detach);
    } else {
        state.status_line = Some(
            "nothing to detach from: this workspace lives in this terminal \
             (start it with --name NAME to keep it running without one)"
                .into(),
        );
    }
}
