//! The replay's keys and mouse: playback, stepping, gate jumps and speed; live navigation
//! otherwise, with everything that would answer a gate or change the workspace refused.

use super::{Player, SPEEDS};
use crate::core::input::{KeyCode, KeyEvent, KeyModifiers};
use crate::core::state::{Focus, Overlay};
use crate::core::{Msg, update};

/// The replay's own keys, for `?`: its binding table, then what the live keys do here.
fn replay_keys() -> String {
    let none = std::collections::HashMap::new();
    let mut out = String::new();
    for (keys, desc) in crate::core::bindings::help_rows(&none, &crate::core::bindings::REPLAY) {
        out.push_str(&format!("{keys:<10} {desc}\n"));
    }
    out.push_str(
        "\nTab, arrows, Enter, PgUp/PgDn, / search, v detail and f focus work as live;
nothing is ever sent: gate cards show the recorded answer instead of keys.
A workspace manifest plays every session's recording merged by time: ] [ and g
cross sessions, and the inspector names the session of each frame.",
    );
    out
}

impl Player {
    /// A mouse event: navigation as live (nothing answers in a replay).
    pub fn mouse(&mut self, m: crate::core::input::MouseEvent) {
        let before = self.feeder.state.shown().id;
        let _ = update(&mut self.feeder.state, Msg::Mouse(m));
        self.follow_selection(before);
    }

    pub fn key(&mut self, key: KeyEvent) {
        let before = self.feeder.state.shown().id;
        self.on_key(key);
        self.follow_selection(before);
    }

    fn on_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if key.code == KeyCode::Esc && self.seeking() {
            // The view never left the frame it showed: cancelling just stops the work.
            self.job = None;
            self.feeder.state.status_line = Some("seek cancelled".into());
            self.prepare_step_back();
            return;
        }
        let state = &mut self.feeder.state;
        // The inspector follows the frame: stepping keys work behind it.
        let stepping = matches!(key.code, KeyCode::Char('.') | KeyCode::Char(','));
        if state.overlay.is_some()
            && !(stepping && matches!(state.overlay, Some(Overlay::Text { .. })))
        {
            // The inbox lists and opens the recorded gates; its marks and batch answers would
            // answer them in the replayed state.
            let inbox_nav = matches!(
                key.code,
                KeyCode::Esc
                    | KeyCode::Char('q' | 'I' | 'j' | 'k')
                    | KeyCode::Up
                    | KeyCode::Down
                    | KeyCode::Home
                    | KeyCode::End
                    | KeyCode::Enter
            );
            if matches!(state.overlay, Some(Overlay::Inbox)) && !inbox_nav {
                state.status_line = Some("read-only replay: the inbox only shows gates".into());
                return;
            }
            let _ = update(state, Msg::Key(key));
            return;
        }
        match key.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('d') | KeyCode::Char('c') if ctrl => self.quit = true,
            KeyCode::Char(' ') => {
                if self.feeder.pos >= self.total() {
                    self.seek(0);
                }
                self.playing = !self.playing;
                self.sync_view();
            }
            KeyCode::Char('.') => {
                self.playing = false;
                self.go(self.feeder.pos + 1);
            }
            KeyCode::Char(',') => {
                self.playing = false;
                self.go(self.feeder.pos.saturating_sub(1));
            }
            KeyCode::Char(']') => {
                self.playing = false;
                // Show the next gate open: apply up to and including its frame.
                let pos = self.feeder.pos;
                let (next, done) = {
                    let ix = self.index.lock().expect("index lock");
                    (ix.gate_frames.iter().find(|&&i| i >= pos).copied(), ix.done)
                };
                match next {
                    Some(i) => self.go_to_gate(i + 1),
                    None if done < self.total() => {
                        self.feeder.state.status_line = Some(format!(
                            "still indexing gates ({}%)",
                            done * 100 / self.total().max(1)
                        ))
                    }
                    None => self.feeder.state.status_line = Some("no later gate".into()),
                }
            }
            KeyCode::Char('[') => {
                self.playing = false;
                let pos = self.feeder.pos;
                let prev = {
                    let ix = self.index.lock().expect("index lock");
                    ix.gate_frames.iter().rev().find(|&&i| i + 1 < pos).copied()
                };
                match prev {
                    Some(i) => self.go_to_gate(i + 1),
                    None => self.feeder.state.status_line = Some("no earlier gate".into()),
                }
            }
            KeyCode::Char('+') | KeyCode::Char('=') => {
                self.speed = (self.speed + 1).min(SPEEDS.len() - 1);
                self.sync_view();
            }
            KeyCode::Char('-') => {
                self.speed = self.speed.saturating_sub(1);
                self.sync_view();
            }
            KeyCode::Home => {
                self.playing = false;
                self.seek(0);
            }
            KeyCode::End => {
                self.playing = false;
                self.go(self.total());
            }
            KeyCode::Char('?') => {
                self.feeder.state.overlay_scroll = 0;
                self.feeder.state.overlay = Some(Overlay::Text {
                    title: " replay keys (Esc closes) ".into(),
                    body: replay_keys(),
                });
            }
            KeyCode::Char('i') => {
                let o = self.inspector();
                self.feeder.state.overlay_scroll = 0;
                self.feeder.state.overlay = Some(o);
            }
            // Live, Esc on a card declines a question or cancels a dialog or elicitation: in a
            // replay it only leaves the card.
            KeyCode::Esc if state.focus == Focus::Gate => state.focus = Focus::Transcript,
            // The permission-mode picker would ask the agent for a change.
            KeyCode::Char('m') => {
                state.status_line = Some("read-only replay: no permission mode to change".into())
            }
            // Closing, restarting or starting a session would change the recorded workspace.
            KeyCode::Char('x' | 'X') if state.focus != Focus::Gate => {
                state.status_line = Some("read-only replay: sessions stay as recorded".into())
            }
            KeyCode::Char('n') if ctrl => {
                state.status_line = Some("read-only replay: no session to start".into())
            }
            _ => {
                // Everything else navigates; nothing may answer a gate or send a prompt.
                let nav = matches!(
                    key.code,
                    KeyCode::Tab
                        | KeyCode::BackTab
                        | KeyCode::Up
                        | KeyCode::Down
                        | KeyCode::Left
                        | KeyCode::Right
                        | KeyCode::PageUp
                        | KeyCode::PageDown
                        | KeyCode::Esc
                );
                let read_only = matches!(state.focus, Focus::Gate | Focus::Prompt);
                if nav || !read_only {
                    let _ = update(state, Msg::Key(key));
                }
                if state.focus == Focus::Prompt {
                    state.focus = Focus::Tree;
                }
            }
        }
    }
}
