//! The backend registry: the one place a `BackendKind` becomes its backend's pieces, for the
//! layers that serve every backend alike (replay, validate, the player's frame view). Adding a
//! backend is a variant in `core::BackendKind` and an arm in each function here; the compiler
//! lists every place that must learn it. Elsewhere a backend is an enum, never a string
//! (`tests/crate_walls.rs` checks no backend name is compared outside this file and the enum).

use serde_json::Value;

use crate::backend::{acp, adopt, claude, gateway, iii};
use crate::core::BackendKind;
use crate::core::state::ReplyCheck;
use crate::record::Dir;
use crate::record::check::Rules;
use crate::replay::mapper::{Parser, ReplayMapper};

/// The check a hand-written reply to a gate of this backend must pass (as live).
pub fn reply_check(kind: BackendKind) -> ReplyCheck {
    match kind {
        BackendKind::Claude => claude::session::reply_check,
        BackendKind::Acp => acp::session::reply_check,
        BackendKind::Iii => iii::session::reply_check,
        BackendKind::Gateway => gateway::session::reply_check,
        BackendKind::Adopted => adopt::source::reply_check,
    }
}

/// The mapping that reads this backend's recordings: the live mapping itself, or (gateway,
/// iii) the replay adapter over it.
pub fn replay_mapper(kind: BackendKind) -> Box<dyn ReplayMapper> {
    match kind {
        BackendKind::Claude => Box::new(claude::mapping::Mapper::new(&[])),
        BackendKind::Acp => Box::new(acp::mapping::Mapper::replaying(None)),
        BackendKind::Iii => Box::<iii::replay::Replay>::default(),
        BackendKind::Gateway => Box::<gateway::replay::Replay>::default(),
        BackendKind::Adopted => Box::<adopt::replay::Replay>::default(),
    }
}

/// The parser replay's background pass runs on its reader thread, ahead of this backend's
/// mapping, when it has one (Claude's lines mostly take its live fast paths, which read and
/// map in one go).
pub fn parser(kind: BackendKind) -> Option<Parser> {
    match kind {
        BackendKind::Acp => Some(acp::replay::parse_ahead),
        BackendKind::Iii => Some(iii::replay::parse_ahead),
        BackendKind::Gateway => Some(gateway::replay::parse_ahead),
        BackendKind::Claude | BackendKind::Adopted => None,
    }
}

/// The validation check for a recording of this backend.
pub fn rules(kind: BackendKind) -> Box<dyn Rules> {
    match kind {
        BackendKind::Claude => Box::new(claude::validate::Ledger::default()),
        BackendKind::Acp => Box::new(acp::validate::Check::new()),
        BackendKind::Iii => Box::new(iii::validate::Check::new()),
        BackendKind::Gateway => Box::new(crate::record::check::Whole::new(
            gateway::recording::validate,
        )),
        BackendKind::Adopted => Box::new(adopt::validate::Check::new()),
    }
}

/// What the player's frame view says of one recorded frame: valid or not against the
/// backend's codec or schema.
pub fn frame_verdict(kind: BackendKind, dir: Dir, text: &str, parsed: Option<&Value>) -> String {
    match (kind, dir, parsed) {
        (_, Dir::Err | Dir::Note, Some(_)) => {
            "not a control frame (the schema covers the control channel)".into()
        }
        (_, Dir::Err | Dir::Note, None) => "not JSON".into(),
        (BackendKind::Acp, _, _) => acp::validate::verdict(dir, text),
        (BackendKind::Adopted, Dir::In, _) => match adopt::recorded::parse_in(text) {
            adopt::recorded::In::Event => match adopt::event::parse(text.as_bytes()) {
                Ok(e) => format!("valid (hook event {})", e.name_text),
                Err(e) => format!("INVALID: {e}"),
            },
            adopt::recorded::In::Broken(why) => format!("INVALID: {why}"),
            _ => "valid (switchboard's own line: the session, a transcript line)".into(),
        },
        (BackendKind::Adopted, Dir::Out, _) => match adopt::recorded::parse_out(text) {
            Some(a) if a.stdout.is_some() => format!("valid (the hook of {} printed this)", a.gate),
            Some(a) => format!("valid (the hook of {} printed nothing)", a.gate),
            None => "INVALID: not a gate's answer".into(),
        },
        (BackendKind::Iii, _, _) => match iii::codec::decode(text) {
            Ok(m) => format!("valid (iii frame: {})", m.kind()),
            Err(e) => format!("INVALID: {e}"),
        },
        (BackendKind::Claude | BackendKind::Gateway, _, None) => "not JSON".into(),
        (BackendKind::Claude | BackendKind::Gateway, Dir::Out, Some(_)) => {
            match claude::schema::validate_claude_outbound_line(text) {
                Ok(()) => "valid (schema: outbound line)".to_string(),
                Err(e) => format!("INVALID: {e}"),
            }
        }
        (BackendKind::Claude | BackendKind::Gateway, Dir::In, Some(v))
            if matches!(
                v.get("type").and_then(Value::as_str),
                Some("control_request" | "control_cancel_request")
            ) =>
        {
            match claude::schema::validate_claude("Message", v) {
                Ok(()) => "valid (schema: Message)".to_string(),
                Err(e) => format!("INVALID: {e}"),
            }
        }
        (BackendKind::Claude | BackendKind::Gateway, Dir::In, Some(_)) => {
            "not a control frame (the schema covers the control channel)".into()
        }
    }
}
