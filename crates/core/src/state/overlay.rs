//! The overlays over the main layout and what they hold: the new-session dialog's form, the
//! profiles it offers, a queued message being edited.

use crate::tree::NodeId;

use super::session::Pick;
use crate::session_id::SessionId;

/// A full-screen or floating view over the main layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Overlay {
    Help,
    Log,
    Status,
    /// A value for the agent's mode (`m`), one of its options, or its model (Enter sets it).
    Picker {
        pick: Pick,
        cursor: usize,
    },
    /// `O`: the agent's session options with their values; Enter opens one's picker.
    Options {
        cursor: usize,
    },
    ConfirmQuit,
    /// The agent ignored a cancel past the grace period: stop it or keep waiting.
    AgentStuck,
    /// A read-only text view (the replay frame inspector).
    Text {
        title: String,
        body: String,
    },
    /// The active approval rules, with origin and hits; `d` deletes the highlighted one.
    Rules {
        cursor: usize,
    },
    /// `v`: a transcript item or the active gate, full screen and scrollable.
    Detail {
        node: NodeId,
        item: Option<usize>,
    },
    /// `I`: every pending gate of every session, oldest first, with batch triage.
    Inbox,
    /// Ctrl-N: start a session from a profile or an ACP command line.
    NewSession(NewSessionForm),
    /// `x` on a session with pending gates: closing answers them as quitting does.
    ConfirmClose {
        session: SessionId,
    },
    /// `u`: the shown session's queued messages; `e` edits one, `d` twice removes it.
    Queue {
        cursor: usize,
        /// The entry whose removal awaits a second `d`.
        confirm_remove: Option<String>,
    },
}

/// A queued message being edited in the prompt: Enter saves it (`Command::EditQueued`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueEdit {
    pub session: SessionId,
    pub entry_id: String,
}

/// The new-session dialog's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSessionForm {
    /// Highlighted choice: a profile, then an ACP agent by command line, then a new harness
    /// session on each live iii engine.
    pub cursor: usize,
    pub field: NewSessionField,
    pub command: String,
    pub cwd: String,
    pub prompt: String,
    /// The engine session of the highlighted harness choice (kept by id, so a list that
    /// changes under the dialog never sends to another engine).
    pub engine: Option<SessionId>,
    pub model: String,
    /// Empty: none is sent (the router's default). Filled from the engine's profile, if any.
    pub provider: String,
    pub title: String,
    /// Allowed functions, comma separated.
    pub allow: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewSessionField {
    Choice,
    Command,
    Cwd,
    Prompt,
    Model,
    Provider,
    Title,
    Allow,
}

impl NewSessionForm {
    /// Whether the highlighted choice is the ACP command line (after every profile).
    pub fn is_command(&self, profiles: usize) -> bool {
        self.cursor == profiles
    }

    /// Which harness choice is highlighted (they follow the command line), if one is.
    pub fn harness(&self, profiles: usize) -> Option<usize> {
        self.cursor.checked_sub(profiles + 1)
    }

    pub fn text_mut(&mut self) -> Option<&mut String> {
        match self.field {
            NewSessionField::Choice => None,
            NewSessionField::Command => Some(&mut self.command),
            NewSessionField::Cwd => Some(&mut self.cwd),
            NewSessionField::Prompt => Some(&mut self.prompt),
            NewSessionField::Model => Some(&mut self.model),
            NewSessionField::Provider => Some(&mut self.provider),
            NewSessionField::Title => Some(&mut self.title),
            NewSessionField::Allow => Some(&mut self.allow),
        }
    }
}

/// A profile the new-session dialog offers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfileChoice {
    pub name: String,
    pub backend: String,
    pub cwd: String,
    /// iii: the provider a new harness session on this profile's engine starts with.
    pub provider: Option<String>,
}
