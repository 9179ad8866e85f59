//! Applying a message: the reducer's effects performed (commands sent, the manifest told,
//! bells and the notification command, clipboard, pager, rules file, new sessions).

use super::App;
use switchboard_core::msg::{BackendEvent, Command};
use switchboard_core::state::SessionId;
use switchboard_core::{Effect, Msg, State, update};
use switchboard_record::now_ms;

impl App {
    /// Apply one message and perform its effects.
    pub fn apply(&mut self, msg: Msg) {
        if let (
            Some(o),
            Msg::Backend {
                session,
                event: BackendEvent::Recording(path),
                ..
            },
        ) = (self.observer.as_mut(), &msg)
        {
            let r = o.session_recording(*session, path);
            self.observed(r);
        }
        // What a session needs to come back after a crash, as its agent says it.
        if let (Some(o), Msg::Backend { session, event, .. }) = (self.observer.as_mut(), &msg) {
            let told = match event {
                BackendEvent::Session(p) if p.session_id.is_some() => {
                    Some((p.session_id.as_deref(), None))
                }
                BackendEvent::Capabilities(c) => c
                    .extra
                    .iter()
                    .find(|(k, _)| k == "loadSession")
                    .map(|(_, v)| (None, Some(v == "true"))),
                _ => None,
            };
            if let Some((agent_session, load)) = told {
                let r = o.session_resume(*session, None, agent_session, load);
                self.observed(r);
            }
        }
        // A gate the backend closed itself (an ACP cancel) is a decision too, by the backend.
        let by_backend = match &msg {
            Msg::Backend {
                session,
                event: BackendEvent::GateClosed { id, decision },
                ..
            } if self
                .state
                .session_by_id(*session)
                .is_some_and(|s| s.gate(id).is_some()) =>
            {
                Some((*session, id.clone(), decision.clone()))
            }
            _ => None,
        };
        let effects = update(&mut self.state, msg);
        self.dirty = true;
        if let Some(errs) = self.observer.as_mut().map(|o| o.take_errors()) {
            for e in errs {
                self.observed(Err(e));
            }
        }
        if let (Some((sid, id, d)), Some(o)) = (by_backend, self.observer.as_mut()) {
            let r = o.decision(sid, &id, &d, "backend", now_ms());
            self.observed(r);
        }
        // Who decided, for the manifest: the reducer notes a rule, a covering approval or a
        // batch just before the answer; quitting and closing answer then shut down.
        let quitting = effects.contains(&Effect::Quit);
        let mut by: std::collections::HashMap<SessionId, &'static str> = Default::default();
        for e in &effects {
            if let Effect::Send(sid, Command::Shutdown) = e {
                by.insert(*sid, if quitting { "quit" } else { "close" });
            }
        }
        for e in effects {
            match e {
                Effect::Send(session, cmd) => {
                    if let Command::Note(n) = &cmd {
                        for (prefix, who) in [
                            ("rule: ", "rule"),
                            ("covered: ", "covered"),
                            ("batch: ", "batch"),
                            ("close: ", "close"),
                        ] {
                            if n.starts_with(prefix) {
                                by.insert(session, who);
                            }
                        }
                    }
                    if let (Some(_), Command::Answer { gate_id, .. }) = (&self.state.hosted, &cmd) {
                        self.answered.push(switchboard_core::state::GateRef {
                            session,
                            id: gate_id.clone(),
                        });
                    }
                    if let (Some(o), Command::Answer { gate_id, decision }) =
                        (self.observer.as_mut(), &cmd)
                    {
                        let who = by.get(&session).copied().unwrap_or("human");
                        let r = o.decision(session, gate_id, decision, who, now_ms());
                        self.observed(r);
                    }
                    let sent = self
                        .sources
                        .iter()
                        .find(|s| s.session == session)
                        .is_some_and(|s| s.commands.send(cmd).is_ok());
                    if !sent {
                        self.state.status_line = Some("the backend has stopped".into());
                    }
                }
                Effect::Bell => {
                    self.bells += 1;
                    if self.notify_on_bell {
                        self.notify(&notify_message(&self.state));
                    }
                }
                Effect::Quit => self.quit = true,
                Effect::Copy(text) => self.copies.push(text),
                Effect::OpenPager(text) => self.pages.push(text),
                Effect::SaveRule { path, spec } => {
                    let r = match self.rule_file {
                        Some(f) => (f.append)(std::path::Path::new(&path), &spec),
                        None => Err("no rules file in this run".into()),
                    };
                    if let Err(e) = r {
                        self.state.status_line = Some(format!("rule not saved: {e}"));
                    }
                }
                // Rules for one session only go into the manifest, for a resume (and a
                // deleted one out of it).
                Effect::SessionRule {
                    session,
                    spec,
                    kept,
                } => {
                    if let Some(o) = self.observer.as_mut() {
                        let r = if kept {
                            o.session_rule(session, &spec)
                        } else {
                            o.session_rule_removed(session, &spec)
                        };
                        self.observed(r);
                    }
                }
                Effect::RemoveRule { path, spec } => {
                    let r = match self.rule_file {
                        Some(f) => (f.remove)(std::path::Path::new(&path), &spec),
                        None => Err("no rules file in this run".into()),
                    };
                    if let Err(e) = r {
                        self.state.status_line = Some(format!("rule not removed: {e}"));
                    }
                }
                Effect::StartSession(req) => self.start_requested(&req),
                // The host reads it for the client whose key this was.
                Effect::Detach => self.detach = true,
            }
        }
    }

    fn start_requested(&mut self, req: &switchboard_core::msg::NewSession) {
        let Some(launch) = self.launcher.as_mut() else {
            self.state.status_line = Some("new sessions need `switchboard up` profiles".into());
            return;
        };
        match launch(req) {
            Ok(super::Launched {
                name,
                backend,
                rules,
                profile,
            }) => {
                let id = self.add_session(&name, backend, rules);
                if let Some(p) = profile {
                    self.remember_profile(id, p);
                }
                if let Some(i) = self.state.index_of(id) {
                    self.state.sessions[i].profile = req.profile.clone();
                    self.state.select_session(i, 0);
                }
                self.state.status_line = Some(format!(
                    "started session {}",
                    switchboard_core::text::neutralize(&name)
                ));
            }
            Err(e) => self.state.status_line = Some(format!("cannot start the session: {e}")),
        }
    }

    /// The desktop notification command, detached, told `message`; its failure never
    /// disturbs the UI.
    pub fn notify(&self, message: &str) {
        let Some(cmd) = &self.notify_command else {
            return;
        };
        let mut c = std::process::Command::new("sh");
        // The owner's own command: their environment, less any secret we read.
        switchboard_backend::child_env::scrub(&mut c, false);
        let spawned = c
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
}

/// `SWITCHBOARD_MESSAGE` for the notification command: what the newest gate is about,
/// neutralized (`^[`, `<U+202E>`), since the command may print it to a terminal or hand it to a
/// notifier that renders it.
pub fn notify_message(state: &State) -> String {
    let subject = state
        .inbox()
        .last()
        .map(|(_, i, g)| {
            let what = switchboard_core::update::gate_subject(g);
            if state.sessions.len() > 1 {
                format!("{}: {what}", state.sessions[*i].name())
            } else {
                what
            }
        })
        .unwrap_or_default();
    switchboard_core::text::neutralize(&subject).into_owned()
}

#[cfg(test)]
mod notify_tests {
    use super::*;

    #[test]
    fn the_notification_message_carries_no_control_character() {
        let mut s = State::new(switchboard_core::BackendKind::Claude, "agent", 0);
        s.gates.push_back(crate::test_gates::bash_permission(
            "g",
            "ls \u{1b}]52;c;cGF5bG9hZA==\u{7}\u{202e}x\u{0}",
        ));
        let m = notify_message(&s);
        assert!(!m.chars().any(switchboard_core::text::is_hostile), "{m:?}");
        assert!(m.contains("ls ^[]52;c;cGF5bG9hZA==^G<U+202E>x^@"), "{m}");
    }
}

#[cfg(test)]
#[path = "observer_tests.rs"]
mod observer_tests;
