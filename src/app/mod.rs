//! The app: owns the state, runs effects, joins backend events with terminal input.

pub mod frames;
pub mod headless;
pub mod term;

use std::time::Duration;

use ratatui::Frame;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::backend::{Backend, EVENT_CHANNEL};
use crate::core::msg::Command;
use crate::core::state::Settings;
use crate::core::{Effect, Msg, State, update};
use crate::record::now_ms;
use crate::ui::theme::Theme;

/// Most backend messages applied in one turn of the terminal loop.
pub const DRAIN_MAX: usize = 1024;
/// Longest time one turn of the terminal loop spends applying backend messages, so keys are
/// read (and the screen drawn) at least this often under any flood.
pub const DRAIN_TIME: Duration = Duration::from_millis(8);

/// How long quitting waits for the backend to answer, close and stop the agent.
/// Longer than the backend's own worst case (3 s grace, SIGTERM 1 s, SIGKILL 2 s, leftovers of
/// the group 1 s); past it the runtime is dropped, which still SIGKILLs the agent's group.
pub const BACKEND_STOP_TIMEOUT: Duration = Duration::from_secs(8);

pub struct App {
    pub state: State,
    pub theme: Theme,
    commands: mpsc::UnboundedSender<Command>,
    events: mpsc::Receiver<Msg>,
    backend_task: Option<JoinHandle<()>>,
    /// Set by `Effect::Quit`: the loop ends after the backend stopped.
    pub quit: bool,
    /// Bells requested since the last flush (the terminal loop rings them).
    pub bells: u32,
    /// Something changed since the last draw.
    pub dirty: bool,
    /// Run (through `sh -c`) when a gate opens, from config.toml.
    pub notify_command: Option<String>,
    /// Texts to put on the clipboard (the terminal loop writes OSC 52).
    pub copies: Vec<String>,
    /// Texts to show in the pager (the terminal loop suspends the TUI for it).
    pub pages: Vec<String>,
}

impl App {
    /// Start `backend` and build the initial state. Must run inside a tokio runtime.
    pub fn start(backend: Box<dyn Backend>, settings: Settings, theme: Theme) -> App {
        let mut state = State::new(backend.name(), &backend.root_name(), now_ms());
        state.reply_check = backend.reply_check();
        state.settings = settings;
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let (ev_tx, ev_rx) = mpsc::channel(EVENT_CHANNEL);
        let task = backend.start(ev_tx, cmd_rx);
        App {
            state,
            theme,
            commands: cmd_tx,
            events: ev_rx,
            backend_task: Some(task),
            quit: false,
            bells: 0,
            dirty: true,
            notify_command: None,
            copies: Vec::new(),
            pages: Vec::new(),
        }
    }

    /// Apply one message and perform its effects.
    pub fn apply(&mut self, msg: Msg) {
        let effects = update(&mut self.state, msg);
        self.dirty = true;
        for e in effects {
            match e {
                Effect::Send(cmd) => {
                    if self.commands.send(cmd).is_err() {
                        self.state.status_line = Some("the backend has stopped".into());
                    }
                }
                Effect::Bell => {
                    self.bells += 1;
                    self.notify();
                }
                Effect::Quit => self.quit = true,
                Effect::Copy(text) => self.copies.push(text),
                Effect::OpenPager(text) => self.pages.push(text),
                Effect::SaveRule { path, spec } => {
                    if let Err(e) = crate::config::append_rule(std::path::Path::new(&path), &spec) {
                        self.state.status_line = Some(format!("rule not saved: {e}"));
                    }
                }
                Effect::RemoveRule { path, spec } => {
                    if let Err(e) = crate::config::remove_rule(std::path::Path::new(&path), &spec) {
                        self.state.status_line = Some(format!("rule not removed: {e}"));
                    }
                }
            }
        }
    }

    /// Wait for the next backend message (None once the backend is gone).
    pub async fn next_backend(&mut self) -> Option<Msg> {
        self.events.recv().await
    }

    /// Apply queued backend messages without waiting, up to `budget` (drain, then render).
    pub fn drain_backend(&mut self, budget: usize) {
        for _ in 0..budget {
            match self.events.try_recv() {
                Ok(m) => self.apply(m),
                Err(_) => break,
            }
        }
    }

    /// Like `drain_backend`, but also stop once `time` has passed: however fast the agent
    /// writes, the loop gets back to drawing and reading keys within one slice.
    pub fn drain_backend_for(&mut self, budget: usize, time: Duration) {
        let until = std::time::Instant::now() + time;
        for _ in 0..budget {
            if std::time::Instant::now() >= until {
                break;
            }
            match self.events.try_recv() {
                Ok(m) => self.apply(m),
                Err(_) => break,
            }
        }
    }

    /// After quitting: let the backend finish its shutdown (answers, stdin close, kill),
    /// applying its last events, bounded by `BACKEND_STOP_TIMEOUT`.
    pub async fn finish(&mut self) {
        let _ = self.commands.send(Command::Shutdown);
        let Some(task) = self.backend_task.take() else {
            return;
        };
        let deadline = tokio::time::Instant::now() + BACKEND_STOP_TIMEOUT;
        tokio::pin!(task);
        loop {
            tokio::select! {
                _ = &mut task => break,
                m = self.events.recv() => match m {
                    Some(m) => self.apply(m),
                    None => { let _ = tokio::time::timeout_at(deadline, &mut task).await; break; }
                },
                _ = tokio::time::sleep_until(deadline) => {
                    tracing::warn!("backend did not stop in time");
                    break;
                }
            }
        }
        self.drain_backend(usize::MAX);
    }

    /// The desktop notification command, detached; its failure never disturbs the UI.
    fn notify(&self) {
        let Some(cmd) = &self.notify_command else {
            return;
        };
        let message = notify_message(&self.state);
        let spawned = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .env("SWITCHBOARD_TITLE", self.title())
            .env("SWITCHBOARD_MESSAGE", message)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Ok(mut child) = spawned {
            // Reap it in the background.
            std::thread::spawn(move || child.wait());
        }
    }

    pub fn render(&self, f: &mut Frame) {
        crate::ui::render(&self.state, &self.theme, f);
    }

    /// The terminal title: pending gates stand out in a tab bar.
    pub fn title(&self) -> String {
        match self.state.gates.len() {
            0 => "switchboard".to_string(),
            n => format!("switchboard ({n} waiting)"),
        }
    }
}

/// `SWITCHBOARD_MESSAGE` for the notification command: what the newest gate is about,
/// neutralized (`^[`, `<U+202E>`), since the command may print it to a terminal or hand it to a
/// notifier that renders it.
fn notify_message(state: &State) -> String {
    let subject = state
        .gates
        .back()
        .map(crate::core::update::gate_subject)
        .unwrap_or_default();
    crate::core::text::neutralize(&subject).into_owned()
}

#[cfg(test)]
mod notify_tests {
    use super::*;

    #[test]
    fn the_notification_message_carries_no_control_character() {
        let mut s = State::new("claude", "agent", 0);
        let req = serde_json::json!({"subtype":"can_use_tool","tool_name":"Bash",
            "input":{"command":"ls \u{1b}]52;c;cGF5bG9hZA==\u{7}\u{202e}x\u{0}"}});
        s.gates.push_back(crate::core::gate::Gate {
            id: "g".into(),
            node_key: "root".into(),
            asked_by: None,
            kind: crate::backend::claude::gates::permission(&req),
            opened_ms: 0,
            default_reply: String::new(),
            reply_definition: "",
        });
        let m = notify_message(&s);
        assert!(!m.chars().any(crate::core::text::is_hostile), "{m:?}");
        assert!(m.contains("ls ^[]52;c;cGF5bG9hZA==^G<U+202E>x^@"), "{m}");
    }
}
