//! One hook event, read and checked. A CLI's hook hands its event to us as it got it; the
//! session behind it is as hostile as any agent: anything not shaped like an event of the CLI
//! (not JSON, not an object, no session id, a session id or cwd that could not be one) is
//! refused with the reason, never guessed at.

use serde_json::{Map, Value};
use switchboard_backend::hooks::HookAgent;

/// The longest session id taken (Claude's and Codex's are UUIDs).
pub const SESSION_ID_MAX: usize = 128;
/// The longest path taken (cwd, transcript).
pub const PATH_MAX: usize = 4096;
/// The prefix of our recordings' own keys (`sb_session`, `sb_transcript`): an event with a
/// top-level key of that prefix is refused, so a recorded event never reads back as ours.
pub const OUR_KEYS: &str = "sb_";

/// The events the two CLIs send (Claude Code 2.1.332, Codex 0.169.0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Name {
    SessionStart,
    SessionEnd,
    UserPromptSubmit,
    PreToolUse,
    PermissionRequest,
    PermissionDenied,
    PostToolUse,
    PostToolUseFailure,
    PostToolBatch,
    Notification,
    Stop,
    StopFailure,
    SubagentStart,
    SubagentStop,
    PreCompact,
    PostCompact,
    /// One this build does not know: shown, never dropped.
    Other(String),
}

impl Name {
    pub fn parse(s: &str) -> Name {
        match s {
            "SessionStart" => Name::SessionStart,
            "SessionEnd" => Name::SessionEnd,
            "UserPromptSubmit" => Name::UserPromptSubmit,
            "PreToolUse" => Name::PreToolUse,
            "PermissionRequest" => Name::PermissionRequest,
            "PermissionDenied" => Name::PermissionDenied,
            "PostToolUse" => Name::PostToolUse,
            "PostToolUseFailure" => Name::PostToolUseFailure,
            "PostToolBatch" => Name::PostToolBatch,
            "Notification" => Name::Notification,
            "Stop" => Name::Stop,
            "StopFailure" => Name::StopFailure,
            "SubagentStart" => Name::SubagentStart,
            "SubagentStop" => Name::SubagentStop,
            "PreCompact" => Name::PreCompact,
            "PostCompact" => Name::PostCompact,
            other => Name::Other(other.to_string()),
        }
    }

    /// The events `hooks install` subscribes to, per CLI (Codex has no Notification and no
    /// failure or denial events).
    pub fn installed(agent: HookAgent) -> &'static [&'static str] {
        match agent {
            HookAgent::Claude => &[
                "SessionStart",
                "SessionEnd",
                "UserPromptSubmit",
                "PreToolUse",
                "PermissionRequest",
                "PermissionDenied",
                "PostToolUse",
                "PostToolUseFailure",
                "Notification",
                "Stop",
                "StopFailure",
                "SubagentStart",
                "SubagentStop",
                "PreCompact",
                "PostCompact",
            ],
            HookAgent::Codex => &[
                "SessionStart",
                "SessionEnd",
                "UserPromptSubmit",
                "PreToolUse",
                "PermissionRequest",
                "PostToolUse",
                "Stop",
                "SubagentStart",
                "SubagentStop",
                "PreCompact",
                "PostCompact",
            ],
        }
    }
}

/// A checked hook event. Strings are as sent: whatever draws them shows hostile characters
/// visibly.
#[derive(Clone, Debug)]
pub struct Event {
    pub name: Name,
    /// The event name as sent (for an `Other`, and the log).
    pub name_text: String,
    pub session_id: String,
    pub cwd: String,
    pub transcript_path: Option<String>,
    /// Set on events of a sub-agent (Claude); its transcript is its own.
    pub agent_id: Option<String>,
    pub agent_type: Option<String>,
    pub agent_transcript_path: Option<String>,
    pub tool_name: Option<String>,
    pub tool_input: Option<Value>,
    pub tool_use_id: Option<String>,
    pub permission_suggestions: Vec<Value>,
    pub raw: Map<String, Value>,
}

impl Event {
    /// A string field as sent, if it is one.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.raw.get(key).and_then(Value::as_str)
    }

    /// Whether this event comes from the sub-agent `agent` (`None`: the main agent).
    pub fn from_agent(&self, agent: Option<&str>) -> bool {
        self.agent_id.as_deref() == agent
    }
}

/// Read `bytes` as an event of `agent`'s hook, or why not.
pub fn parse(bytes: &[u8]) -> Result<Event, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
    if text.trim().is_empty() {
        return Err("an empty event".into());
    }
    // serde_json refuses nesting deeper than 128 levels: a deep event is an error, not a
    // stack overflow.
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(raw) = v else {
        return Err("not a JSON object".into());
    };
    if let Some(k) = raw.keys().find(|k| k.starts_with(OUR_KEYS)) {
        return Err(format!(
            "an event may not carry a key starting with {OUR_KEYS:?} ({:?})",
            switchboard_core::text::one_line(k, 40)
        ));
    }
    let name_text = match raw.get("hook_event_name") {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 64 => s.clone(),
        Some(Value::String(_)) => return Err("hook_event_name is empty or too long".into()),
        _ => return Err("no hook_event_name".into()),
    };
    let session_id = match raw.get("session_id") {
        Some(Value::String(s)) => check_session_id(s)?,
        _ => return Err("no session_id".into()),
    };
    let cwd = match raw.get("cwd") {
        Some(Value::String(s)) => check_path("cwd", s)?,
        _ => return Err("no cwd".into()),
    };
    let opt_path = |k: &str| -> Result<Option<String>, String> {
        match raw.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => check_path(k, s).map(Some),
            Some(_) => Err(format!("{k} is not a string")),
        }
    };
    let transcript_path = opt_path("transcript_path")?;
    let agent_transcript_path = opt_path("agent_transcript_path")?;
    let short = |k: &str| -> Result<Option<String>, String> {
        match raw.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.len() <= 256 => Ok(Some(s.clone())),
            Some(Value::String(_)) => Err(format!("{k} is longer than 256 bytes")),
            Some(_) => Err(format!("{k} is not a string")),
        }
    };
    let agent_id = match short("agent_id")? {
        Some(a) if a.is_empty() => None,
        Some(a) => Some(check_session_id(&a).map_err(|e| format!("agent_id: {e}"))?),
        None => None,
    };
    let agent_type = short("agent_type")?;
    let tool_name = short("tool_name")?;
    let tool_use_id = short("tool_use_id")?;
    let tool_input = raw.get("tool_input").cloned();
    let permission_suggestions = match raw.get("permission_suggestions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err("permission_suggestions is not an array".into()),
    };
    Ok(Event {
        name: Name::parse(&name_text),
        name_text,
        session_id,
        cwd,
        transcript_path,
        agent_id,
        agent_type,
        agent_transcript_path,
        tool_name,
        tool_input,
        tool_use_id,
        permission_suggestions,
        raw,
    })
}

/// A session (or agent) id: printable ASCII without `/`, spaces or quotes, at most
/// `SESSION_ID_MAX` bytes. It names a node, a file and a card; it could not be a path.
pub fn check_session_id(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= SESSION_ID_MAX
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
        && s != "."
        && s != "..";
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "session id {:?} is not an id (1 to {SESSION_ID_MAX} letters, digits, '-', '_', '.', ':')",
            switchboard_core::text::one_line(s, 60)
        ))
    }
}

/// An absolute path without NUL, at most `PATH_MAX` bytes.
fn check_path(key: &str, s: &str) -> Result<String, String> {
    if s.len() > PATH_MAX {
        return Err(format!("{key} is longer than {PATH_MAX} bytes"));
    }
    if !s.starts_with('/') || s.contains('\0') {
        return Err(format!(
            "{key} {:?} is not an absolute path",
            switchboard_core::text::one_line(s, 80)
        ));
    }
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: &str) -> Result<Event, String> {
        parse(s.as_bytes())
    }

    #[test]
    fn a_claude_permission_request_reads_whole() {
        let e = ev(r#"{"session_id":"8761-ab","transcript_path":"/h/.claude/projects/-p/8761-ab.jsonl","cwd":"/p","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"touch a"},"permission_suggestions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}],"permission_mode":"default"}"#).unwrap();
        assert_eq!(e.name, Name::PermissionRequest);
        assert_eq!(e.session_id, "8761-ab");
        assert_eq!(e.tool_name.as_deref(), Some("Bash"));
        assert_eq!(e.permission_suggestions.len(), 1);
        assert_eq!(e.str("permission_mode"), Some("default"));
        assert!(e.from_agent(None));
    }

    #[test]
    fn hostile_events_are_refused_with_a_reason() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        for (bad, why) in [
            ("", "empty"),
            ("\u{1b}[2J", "not JSON"),
            ("[1]", "not a JSON object"),
            (&deep, "not JSON"),
            (r#"{"session_id":"a","cwd":"/"}"#, "hook_event_name"),
            (r#"{"hook_event_name":"Stop","cwd":"/"}"#, "session_id"),
            (
                r#"{"hook_event_name":"Stop","session_id":"../../etc","cwd":"/"}"#,
                "not an id",
            ),
            (
                r#"{"hook_event_name":"Stop","session_id":"a b","cwd":"/"}"#,
                "not an id",
            ),
            (
                r#"{"hook_event_name":"Stop","session_id":"a","cwd":"rel"}"#,
                "absolute",
            ),
            (
                r#"{"hook_event_name":"Stop","session_id":"a","cwd":"/","transcript_path":7}"#,
                "not a string",
            ),
            (
                r#"{"hook_event_name":"Stop","session_id":"a","cwd":"/","sb_transcript":"x"}"#,
                "sb_transcript",
            ),
            (
                r#"{"hook_event_name":"Stop","session_id":"a","cwd":"/","agent_id":"x/y"}"#,
                "agent_id",
            ),
        ] {
            let e = ev(bad).unwrap_err();
            assert!(e.contains(why), "{bad:.60}: {e}");
        }
        let long_name = format!(
            r#"{{"hook_event_name":"{}","session_id":"a","cwd":"/"}}"#,
            "N".repeat(65)
        );
        for bad in [
            long_name.as_str(),
            r#"{"hook_event_name":"","session_id":"a","cwd":"/"}"#,
        ] {
            let e = ev(bad).unwrap_err();
            assert!(e.contains("hook_event_name is empty or too long"), "{e}");
        }
        let most = format!(
            r#"{{"hook_event_name":"{}","session_id":"a","cwd":"/"}}"#,
            "N".repeat(64)
        );
        assert!(ev(&most).is_ok());
        assert!(parse(b"\xff\xfe").unwrap_err().contains("UTF-8"));
        let long = "a".repeat(SESSION_ID_MAX + 1);
        assert!(check_session_id(&long).is_err());
    }

    #[test]
    fn an_unknown_event_is_kept_by_name() {
        let e = ev(r#"{"hook_event_name":"TeammateIdle","session_id":"a","cwd":"/w"}"#).unwrap();
        assert_eq!(e.name, Name::Other("TeammateIdle".into()));
    }
}
