//! The new-session dialog (Ctrl-N): a profile, an ACP agent by command line, or a new
//! harness session on a live iii engine (model, provider, title, allow-list, first message).

use crate::input::{KeyCode, KeyEvent, KeyModifiers};

use super::super::msg::{Command, Effect, HarnessSession, NewSession};
use super::super::state::{NewSessionField, NewSessionForm, Overlay, State};

/// Ctrl-N: the new-session dialog, on the first profile.
pub(super) fn open_new_session(state: &mut State) {
    let cwd = state
        .profiles
        .first()
        .map(|p| p.cwd.clone())
        .or_else(|| state.session.cwd.clone())
        .unwrap_or_default();
    state.overlay = Some(Overlay::NewSession(NewSessionForm {
        cursor: 0,
        field: NewSessionField::Choice,
        command: String::new(),
        cwd,
        prompt: String::new(),
        engine: None,
        model: String::new(),
        provider: String::new(),
        title: String::new(),
        allow: String::new(),
    }));
}

/// Keys of the new-session dialog: ↑/↓ pick, Tab moves between fields, Enter starts, Esc
/// cancels.
pub(super) fn new_session_key(
    state: &mut State,
    mut form: NewSessionForm,
    key: KeyEvent,
    fx: &mut Vec<Effect>,
) {
    let profiles = state.profiles.len();
    let hosts = state.harness_hosts().len();
    let fields: &[NewSessionField] = if form.harness(profiles).is_some() {
        &[
            NewSessionField::Choice,
            NewSessionField::Model,
            NewSessionField::Provider,
            NewSessionField::Title,
            NewSessionField::Allow,
            NewSessionField::Prompt,
        ]
    } else if form.is_command(profiles) {
        &[
            NewSessionField::Choice,
            NewSessionField::Command,
            NewSessionField::Cwd,
            NewSessionField::Prompt,
        ]
    } else {
        &[
            NewSessionField::Choice,
            NewSessionField::Cwd,
            NewSessionField::Prompt,
        ]
    };
    let at = fields.iter().position(|f| *f == form.field).unwrap_or(0);
    match key.code {
        KeyCode::Esc => {
            state.overlay = None;
            return;
        }
        KeyCode::Tab | KeyCode::Down if form.field != NewSessionField::Choice => {
            form.field = fields[(at + 1) % fields.len()]
        }
        KeyCode::Tab => form.field = fields[(at + 1) % fields.len()],
        KeyCode::BackTab => form.field = fields[(at + fields.len() - 1) % fields.len()],
        KeyCode::Up if form.field == NewSessionField::Choice => {
            form.cursor = form.cursor.saturating_sub(1);
            pick_profile(state, &mut form);
        }
        KeyCode::Down if form.field == NewSessionField::Choice => {
            form.cursor = (form.cursor + 1).min(profiles + hosts);
            pick_profile(state, &mut form);
        }
        KeyCode::Up => form.field = fields[(at + fields.len() - 1) % fields.len()],
        KeyCode::Enter if form.harness(profiles).is_some() => {
            return start_harness(state, form, fx);
        }
        KeyCode::Enter => {
            let req = if form.is_command(profiles) {
                if form.command.trim().is_empty() {
                    state.status_line = Some("type the ACP agent's command line".into());
                    form.field = NewSessionField::Command;
                    state.overlay = Some(Overlay::NewSession(form));
                    return;
                }
                NewSession {
                    profile: None,
                    command_line: Some(form.command.clone()),
                    cwd: form.cwd.clone(),
                    prompt: form.prompt.clone(),
                    resume: None,
                }
            } else {
                NewSession {
                    profile: Some(state.profiles[form.cursor].name.clone()),
                    command_line: None,
                    cwd: form.cwd.clone(),
                    prompt: form.prompt.clone(),
                    resume: None,
                }
            };
            state.overlay = None;
            fx.push(Effect::StartSession(req));
            return;
        }
        KeyCode::Backspace => {
            if let Some(t) = form.text_mut() {
                t.pop();
            }
        }
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
            if let Some(t) = form.text_mut()
                && t.len() < 4_096
            {
                t.push(c);
            }
        }
        _ => {}
    }
    state.overlay = Some(Overlay::NewSession(form));
}

/// Moving to a profile fills in its working directory; moving to a harness choice names
/// its engine session and fills in the provider of the profile that engine came from (shown,
/// so what is sent is what the dialog says; clearing it leaves the choice to the router).
fn pick_profile(state: &State, form: &mut NewSessionForm) {
    if let Some(p) = state.profiles.get(form.cursor) {
        form.cwd = p.cwd.clone();
    }
    let before = form.engine;
    form.engine = form
        .harness(state.profiles.len())
        .and_then(|i| state.harness_hosts().get(i).map(|(id, _)| *id));
    // Only a move to another engine replaces the provider: one typed for this engine stays.
    if let Some(engine) = form.engine.filter(|e| Some(*e) != before) {
        form.provider = state
            .sessions
            .iter()
            .find(|s| s.id == engine)
            .and_then(|s| s.profile.as_ref())
            .and_then(|name| state.profiles.iter().find(|p| &p.name == name))
            .and_then(|p| p.provider.clone())
            .unwrap_or_default();
    }
}

/// Enter on a harness choice: ask that engine's source for a new session. It is not a new
/// process: the session appears in the tree when the engine reports it.
fn start_harness(state: &mut State, mut form: NewSessionForm, fx: &mut Vec<Effect>) {
    let live = form
        .engine
        .and_then(|id| state.harness_hosts().into_iter().find(|(h, _)| *h == id))
        .map(|(id, url)| (id, url.to_string()));
    let Some((engine, url)) = live else {
        state.status_line =
            Some("that iii engine is not live now (reconnecting or closed): try again".into());
        state.overlay = Some(Overlay::NewSession(form));
        return;
    };
    let missing = if form.model.trim().is_empty() {
        Some((
            NewSessionField::Model,
            "a new harness session needs a model".to_string(),
        ))
    } else if let Err(e) = super::super::msg::check_provider(form.provider.trim()) {
        Some((NewSessionField::Provider, format!("the provider {e}")))
    } else if form.prompt.trim().is_empty() {
        Some((
            NewSessionField::Prompt,
            "type the session's first message".into(),
        ))
    } else {
        None
    };
    if let Some((field, why)) = missing {
        state.status_line = Some(why);
        form.field = field;
        state.overlay = Some(Overlay::NewSession(form));
        return;
    }
    let (allow, dropped) = super::super::msg::split_allow(&form.allow);
    state.overlay = None;
    let mut note = format!(
        "asked {} for a new harness session: it appears when the engine reports it",
        super::super::text::neutralize(&url)
    );
    if !dropped.is_empty() {
        note.push_str(&format!(
            " (left out of its allow-list, human-only or not an exact id: {})",
            dropped.join(", ")
        ));
    }
    state.status_line = Some(note);
    fx.push(Effect::Send(
        engine,
        Command::NewHarnessSession(HarnessSession {
            model: form.model.trim().to_string(),
            provider: Some(form.provider.trim().to_string()).filter(|p| !p.is_empty()),
            title: form.title.trim().to_string(),
            allow,
            message: form.prompt.clone(),
        }),
    ));
}
