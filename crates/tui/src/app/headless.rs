//! The app without a terminal: a `TestBackend` screen and keys fed by the caller. Tests and
//! the screenshot generator drive the very same `App` (reducer, effects, backend) as the TUI.

use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use switchboard_core::input::{KeyCode, KeyEvent, KeyModifiers};

use super::App;
use crate::ui::theme::Theme;
use switchboard_backend::Backend;
use switchboard_core::Msg;
use switchboard_core::state::{Settings, State};

pub struct Headless {
    pub app: App,
    pub terminal: Terminal<TestBackend>,
}

impl Headless {
    /// Start `backend` with a `w`×`h` screen. Needs a tokio runtime.
    pub fn start(backend: Box<dyn Backend>, w: u16, h: u16) -> Headless {
        let mut app = App::start(backend, Settings::default(), Theme::dark());
        app.apply(Msg::Resize(w, h));
        let terminal = Terminal::new(TestBackend::new(w, h)).expect("TestBackend never fails");
        Headless { app, terminal }
    }

    pub fn state(&self) -> &State {
        &self.app.state
    }

    /// Apply backend messages until `pred` holds. Panics after `timeout` with `what` and the
    /// current screen, so a failing test says what it waited for and what it saw.
    pub async fn wait_until(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&State) -> bool,
    ) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            self.app.drain_backend(usize::MAX);
            if pred(&self.app.state) {
                return;
            }
            match tokio::time::timeout_at(deadline, self.app.next_backend()).await {
                Ok(Some(m)) => self.app.apply(m),
                Ok(None) => {
                    if pred(&self.app.state) {
                        return;
                    }
                    panic!("backend ended while waiting for {what}\n{}", self.screen());
                }
                Err(_) => panic!(
                    "timed out after {timeout:?} waiting for {what}\n{}",
                    self.screen()
                ),
            }
        }
    }

    pub fn key(&mut self, code: KeyCode) {
        self.app
            .apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    }

    pub fn ctrl(&mut self, c: char) {
        self.app.apply(Msg::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::CONTROL,
        )));
    }

    /// Type `text` one character at a time (as key presses, not a paste).
    pub fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c));
        }
    }

    /// Draw the current state and return the screen buffer.
    pub fn draw(&mut self) -> &ratatui::buffer::Buffer {
        self.app
            .draw(&mut self.terminal)
            .expect("TestBackend never fails");
        self.terminal.backend().buffer()
    }

    /// Draw the current state and return the screen as text lines.
    pub fn screen(&mut self) -> String {
        crate::ui::buffer_text(self.draw())
    }

    /// Quit like a user (Ctrl-D, confirming when gates are pending) and wait for the backend
    /// to answer what is pending and stop the agent.
    pub async fn quit(&mut self) {
        self.ctrl('d');
        if self.app.state.overlay.is_some() {
            self.key(KeyCode::Char('y'));
        }
        self.app.finish().await;
    }
}
