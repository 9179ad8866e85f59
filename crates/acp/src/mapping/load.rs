//! Resuming an ACP session by its id: `session/load` when the agent declared `loadSession`,
//! else a new session and a row that says this agent cannot resume. The agent replays the
//! loaded session's history as `session/update` notifications before it answers; when the
//! transcript already holds that history (from the recording, before the crash) the replay is
//! counted, not drawn twice.

use serde_json::{Value, json};

use super::{Mapper, Ours, Out};
use crate::codec::{self, Frame, schema};
use switchboard_core::text::sanitize;
use switchboard_core::transcript::Level;

/// A session to load instead of starting one.
#[derive(Clone, Debug, Default)]
pub(super) struct Load {
    id: String,
    /// The history is already in the transcript: count the agent's replay of it.
    quiet: bool,
    /// `session/load` is sent, and no prompt of ours since: what the agent says of the
    /// session's past until then is its replay (gemini-cli replays after its answer).
    loading: bool,
    /// Notifications replayed while loading.
    replayed: u64,
    /// When `session/load` was sent (live), for its deadline.
    sent_ms: Option<u64>,
}

/// How long an agent may take to answer `session/load` (it replays the whole history
/// first): past it, the session is not left waiting for ever; a new one starts, said so.
pub const LOAD_PATIENCE_MS: u64 = 120_000;

impl Mapper {
    /// Resume session `id` (the agent's own id) instead of starting a new one. `quiet`: the
    /// transcript already shows its history.
    pub fn resume_session(&mut self, id: &str, quiet: bool) {
        self.load = Some(Load {
            id: id.to_string(),
            quiet,
            ..Load::default()
        });
    }

    /// A recorded `session/load` was sent (replay).
    pub(super) fn start_loading(&mut self) {
        if let Some(l) = self.load.as_mut() {
            l.loading = true;
        }
    }

    /// After `initialize`: load the session to resume when the agent can, else a new one.
    pub(super) fn start_session(&mut self, can_load: bool, out: &mut Out) {
        let Some(load) = self.load.as_mut() else {
            return self.new_session(out);
        };
        let id = load.id.clone();
        if !can_load {
            self.load = None;
            out.system(
                "resume",
                format!(
                    "this agent cannot resume a session (it does not declare loadSession): \
                     {} is not loaded; a new session starts",
                    sanitize(&id)
                ),
            );
            return self.new_session(out);
        }
        load.loading = true;
        load.sent_ms = Some(self.now);
        let params = json!({
            "sessionId": id,
            "cwd": self.opts.cwd.display().to_string(),
            "mcpServers": []
        });
        let line = self.request("session/load", params, Ours::LoadSession(id.clone()));
        out.lines.push(line);
        out.system("resume", format!("loading session {}", sanitize(&id)));
    }

    /// `session/load` answered: the session goes on under its id.
    pub(super) fn session_loaded(&mut self, id: &str, result: &Value, out: &mut Out) {
        if let Err(e) = codec::typed::<schema::LoadSessionResponse>(result) {
            out.protocol(
                Level::Warn,
                format!("session/load result outside the ACP types: {e}"),
            );
        }
        if let Some(l) = self.load.as_ref().filter(|l| l.quiet && l.replayed > 0) {
            out.system(
                "resume",
                format!(
                    "the agent replayed {} update(s) of the session's past (the transcript shows it as recorded)",
                    l.replayed
                ),
            );
        }
        self.session_ready(id.to_string(), result, "resumed", out);
    }

    /// `session/load` failed: a new session instead, said so.
    pub(super) fn load_failed(&mut self, id: &str, what: &str, out: &mut Out) {
        self.load = None;
        out.protocol(
            Level::Error,
            format!(
                "session/load {} failed: {what}; a new session starts",
                sanitize(id)
            ),
        );
        self.new_session(out);
    }

    /// When the `session/load` in flight stops being waited for, if one is.
    pub fn load_deadline(&self) -> Option<u64> {
        let l = self.load.as_ref().filter(|l| l.loading)?;
        Some(l.sent_ms? + LOAD_PATIENCE_MS)
    }

    /// The agent let `session/load` go unanswered past its deadline: the request is given up
    /// (a late answer is then one to a request we no longer track) and a new session starts.
    pub fn load_overdue(&mut self) -> Out {
        let mut out = Out::default();
        if self.load_deadline().is_none_or(|d| self.now < d) {
            return out;
        }
        let id = self.load.as_ref().map(|l| l.id.clone()).unwrap_or_default();
        self.ours
            .retain(|_, o| !matches!(o, Ours::LoadSession(l) if *l == id));
        self.load_failed(
            &id,
            &format!("no answer within {} s", LOAD_PATIENCE_MS / 1000),
            &mut out,
        );
        out
    }

    /// A history update the agent replays while loading, when the transcript already shows
    /// that history: counted and not drawn again (the recording keeps the line).
    pub(super) fn replayed_quietly(&mut self, line: &str) -> bool {
        let Some(l) = self.load.as_mut().filter(|l| l.loading && l.quiet) else {
            return false;
        };
        let Frame::Notification { method, params } = codec::parse(line) else {
            return false;
        };
        // The conversation's past only: commands, modes and usage still count.
        let kind = params
            .pointer("/update/sessionUpdate")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let past = matches!(
            kind,
            "user_message_chunk"
                | "agent_message_chunk"
                | "agent_thought_chunk"
                | "tool_call"
                | "tool_call_update"
                | "plan"
        );
        // Only the loaded session's: an update of another is not its history.
        let of_it = params.get("sessionId").and_then(Value::as_str) == Some(l.id.as_str());
        if method == "session/update" && past && of_it {
            l.replayed += 1;
            return true;
        }
        false
    }

    /// Our first prompt on the resumed session: what the agent says from now on is new.
    pub(super) fn prompting(&mut self) {
        self.load = None;
    }
}

#[cfg(test)]
mod tests {
    use super::super::AcpOptions;
    use super::*;
    use std::path::PathBuf;
    use switchboard_core::msg::{BackendEvent, Command};
    use switchboard_core::transcript::ItemOp;

    fn resuming(load_session: bool, quiet: bool) -> (Mapper, Out) {
        let mut m = Mapper::new(AcpOptions {
            cwd: PathBuf::from("/w/p"),
            ..AcpOptions::default()
        });
        m.resume_session("s-old", quiet);
        m.initialize_line();
        let out = m.on_line(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"protocolVersion":1,"agentCapabilities":{{"loadSession":{load_session}}}}}}}"#
        ));
        (m, out)
    }

    fn texts(out: &Out) -> Vec<String> {
        out.events
            .iter()
            .filter_map(|e| match e {
                BackendEvent::Item {
                    op: ItemOp::Push(k),
                    ..
                } => Some(k.full_text()),
                _ => None,
            })
            .collect()
    }

    const REPLAYED: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-old","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"PINEAPPLE."}}}}"#;

    #[test]
    fn an_agent_that_can_load_is_asked_to_and_its_replay_is_not_drawn_twice() {
        let (mut m, out) = resuming(true, true);
        let sent: Value = serde_json::from_str(&out.lines[0]).unwrap();
        assert_eq!(sent["method"], "session/load");
        assert_eq!(sent["params"]["sessionId"], "s-old");
        assert_eq!(sent["params"]["cwd"], "/w/p");
        assert!(m.on_line(REPLAYED).events.is_empty(), "counted, not drawn");
        // Commands still count while loading.
        let cmds = m.on_line(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-old","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"plan","description":"p"}]}}}"#);
        assert!(!cmds.events.is_empty(), "not swallowed");
        let out = m.on_line(r#"{"jsonrpc":"2.0","id":2,"result":{"modes":null}}"#);
        assert!(m.ready());
        assert_eq!(m.session_id(), Some("s-old"));
        let shown = texts(&out).join("\n");
        assert!(shown.contains("replayed 1 update"), "{shown}");
        assert!(shown.contains("resumed s-old"), "{shown}");
        // gemini-cli replays after its answer: still the past until our first prompt.
        assert!(m.on_line(REPLAYED).events.is_empty());
        let p = m.command(&Command::Prompt("go on".into()));
        assert!(p.lines[0].contains("session/prompt"));
        assert!(
            !m.on_line(REPLAYED).events.is_empty(),
            "new output is drawn"
        );
    }

    #[test]
    fn without_loaded_history_the_replay_is_the_transcript() {
        let (mut m, _) = resuming(true, false);
        assert!(!m.on_line(REPLAYED).events.is_empty());
    }

    #[test]
    fn an_agent_that_cannot_load_gets_a_new_session_and_the_row_says_so() {
        let (_, out) = resuming(false, true);
        let sent: Value = serde_json::from_str(&out.lines[0]).unwrap();
        assert_eq!(sent["method"], "session/new");
        let shown = texts(&out).join("\n");
        assert!(shown.contains("cannot resume a session"), "{shown}");
    }

    #[test]
    fn a_failed_load_starts_a_new_session_and_says_why() {
        let (mut m, _) = resuming(true, true);
        let out = m.on_line(
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"Resource not found"}}"#,
        );
        let sent: Value = serde_json::from_str(&out.lines[0]).unwrap();
        assert_eq!(sent["method"], "session/new");
        let all = format!("{:?}", out.events);
        assert!(all.contains("session/load s-old failed"), "{all}");
        assert!(!m.on_line(REPLAYED).events.is_empty(), "no longer loading");
    }

    #[test]
    fn without_a_session_to_resume_nothing_changes() {
        let mut m = Mapper::new(AcpOptions::default());
        m.initialize_line();
        let out = m.on_line(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}"#);
        assert!(out.lines[0].contains("session/new"));
    }
}
