//! The lines of an adopted session's recording (backend `adopted`), besides the header:
//!
//! - `in`, `{"sb_session":{"agent":"claude","session_id":"…","cwd":"…"}}`: first, which
//!   session this is;
//! - `in`, a hook event exactly as the CLI wrote it (events carrying a top-level key that
//!   starts with `sb_` are refused live, so one can never read back as ours);
//! - `in`, `{"sb_transcript":"main"|"agent:<id>","line":"…"}`: a line of a transcript file,
//!   exactly as read;
//! - `out`, `{"gate":"h-1","stdout":"…"}`: what the waiting hook printed, exactly;
//! - `out`, `{"gate":"h-1","pass":"why"}`: the hook printed nothing (the CLI's own prompt took
//!   the request: handed back, answered there, its hook gone, switchboard stopped);
//! - `note`: refusals and remarks.

use serde_json::{Value, json};
use switchboard_backend::hooks::{HookAgent, HookReply};

use super::mapping::TailKey;

/// A recording's `in` line.
#[derive(Debug, PartialEq)]
pub enum In {
    Session {
        agent: HookAgent,
        session_id: String,
        cwd: String,
    },
    Transcript {
        key: TailKey,
        line: String,
    },
    /// A hook event's text (checked again as live checked it).
    Event,
    /// Our envelope, unreadable.
    Broken(String),
}

/// A recording's `out` line: the one final answer of a gate's hook.
#[derive(Debug, PartialEq)]
pub struct Answer {
    pub gate: String,
    /// `Some`: the hook printed this; `None`: it printed nothing (why).
    pub stdout: Option<String>,
    pub why: Option<String>,
}

pub fn session(agent: HookAgent, session_id: &str, cwd: &str) -> String {
    json!({"sb_session": {"agent": agent.name(), "session_id": session_id, "cwd": cwd}}).to_string()
}

pub fn transcript(key: &TailKey, line: &str) -> String {
    json!({"sb_transcript": key.name(), "line": line}).to_string()
}

pub fn answer(gate: &str, reply: &HookReply) -> Option<String> {
    match reply {
        HookReply::Accepted => None,
        HookReply::Decision(s) => Some(json!({"gate": gate, "stdout": s}).to_string()),
        HookReply::Pass(why) => Some(json!({"gate": gate, "pass": why}).to_string()),
    }
}

/// Read an `in` line.
pub fn parse_in(line: &str) -> In {
    // Ours start with our key; an event never does (refused live).
    let ours = line.starts_with("{\"sb_session\"") || line.starts_with("{\"sb_transcript\"");
    if !ours {
        return In::Event;
    }
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return In::Broken("an sb_ line that is not JSON".into());
    };
    if let Some(s) = v.get("sb_session") {
        let get = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_string);
        return match (
            get("agent").as_deref().and_then(HookAgent::from_name),
            get("session_id"),
            get("cwd"),
        ) {
            (Some(agent), Some(session_id), Some(cwd)) => In::Session {
                agent,
                session_id,
                cwd,
            },
            _ => In::Broken("an sb_session line without agent, session_id and cwd".into()),
        };
    }
    match (
        v.get("sb_transcript")
            .and_then(Value::as_str)
            .and_then(TailKey::parse),
        v.get("line").and_then(Value::as_str),
    ) {
        (Some(key), Some(line)) => In::Transcript {
            key,
            line: line.to_string(),
        },
        _ => In::Broken("an sb_transcript line without a file key and a line".into()),
    }
}

/// Read an `out` line.
pub fn parse_out(line: &str) -> Option<Answer> {
    let v: Value = serde_json::from_str(line).ok()?;
    let gate = v.get("gate")?.as_str()?.to_string();
    let stdout = v.get("stdout").and_then(Value::as_str).map(str::to_string);
    let why = v.get("pass").and_then(Value::as_str).map(str::to_string);
    if stdout.is_none() == why.is_none() {
        return None;
    }
    Some(Answer { gate, stdout, why })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_reads_back() {
        let s = session(HookAgent::Codex, "s-1", "/w");
        assert_eq!(
            parse_in(&s),
            In::Session {
                agent: HookAgent::Codex,
                session_id: "s-1".into(),
                cwd: "/w".into()
            }
        );
        let t = transcript(&TailKey::Agent("a1".into()), "{\"x\":\"\\u001b\"}\n");
        assert_eq!(
            parse_in(&t),
            In::Transcript {
                key: TailKey::Agent("a1".into()),
                line: "{\"x\":\"\\u001b\"}\n".into()
            }
        );
        assert_eq!(parse_in(r#"{"hook_event_name":"Stop"}"#), In::Event);
        assert!(matches!(parse_in("{\"sb_transcript\":1}"), In::Broken(_)));
        let a = answer("h-2", &HookReply::Decision("{\"a\":1}".into())).unwrap();
        assert_eq!(
            parse_out(&a),
            Some(Answer {
                gate: "h-2".into(),
                stdout: Some("{\"a\":1}".into()),
                why: None
            })
        );
        let p = answer("h-3", &HookReply::Pass("handed back".into())).unwrap();
        assert_eq!(parse_out(&p).unwrap().why.as_deref(), Some("handed back"));
        assert!(answer("h-3", &HookReply::Accepted).is_none());
        assert!(parse_out(r#"{"gate":"h","stdout":"x","pass":"y"}"#).is_none());
    }
}
