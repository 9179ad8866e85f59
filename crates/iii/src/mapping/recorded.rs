//! Decisions read back from recorded calls, for replay and validate: what an outgoing
//! `approval::resolve` (after an `approval::approve-always`, or not) means as a `Decision`,
//! in the same canonical form the mapper's answers reduce to, so a recording can prove the
//! wire said what the human decided.

use std::collections::{HashMap, HashSet, VecDeque};

use super::json::Field;
use serde_json::Value;

use super::gates::{
    Act, OPT_ALLOW_ALWAYS, OPT_ALLOW_ONCE, OPT_FS_ALWAYS, OPT_FS_SESSION, act_of, decode_record,
};
use super::json::{id_field, str_field};
use switchboard_core::gate::Decision;

fn option(id: &str, name: &str) -> Decision {
    Decision::Option {
        option_id: id.into(),
        name: name.into(),
        allow: true,
    }
}

/// The canonical form of a decision the human made on a card (`fs`: a filesystem-access
/// card); `None` when it sends nothing (the call stays held) or does not apply.
pub fn canonical_decision(d: &Decision, fs: bool) -> Option<Decision> {
    match act_of(d, fs) {
        Act::Allow { always: true, .. } => Some(option(OPT_ALLOW_ALWAYS, "Allow always")),
        Act::Allow {
            duration: Some("session"),
            ..
        } => Some(option(OPT_FS_SESSION, "Allow for this session")),
        Act::Allow {
            duration: Some("always"),
            ..
        } => Some(option(OPT_FS_ALWAYS, "Allow always (persist the root)")),
        Act::Allow { .. } => Some(option(OPT_ALLOW_ONCE, "Allow once")),
        Act::Deny(reason) => Some(Decision::Deny {
            message: reason,
            interrupt: false,
        }),
        Act::Hold | Act::Unsupported => None,
    }
}

/// The decision an `approval::resolve` payload means; `always`: an `approval::approve-always`
/// for the same session and function preceded it. `Err` says what is malformed.
pub fn decision_of_resolve(payload: &Value, always: bool) -> Result<Decision, String> {
    for k in ["session_id", "function_call_id"] {
        if id_field(payload, k).is_none() {
            return Err(format!("approval::resolve without a valid `{k}`"));
        }
    }
    match str_field(payload, "decision") {
        // `grant_scope`: the older gate's name for `access_duration` (same words).
        Some("allow") => match payload
            .field("access_duration")
            .or_else(|| payload.field("grant_scope"))
        {
            None => Ok(if always {
                option(OPT_ALLOW_ALWAYS, "Allow always")
            } else {
                option(OPT_ALLOW_ONCE, "Allow once")
            }),
            Some(Value::String(d)) => match d.as_str() {
                "once" => Ok(option(OPT_ALLOW_ONCE, "Allow once")),
                "session" => Ok(option(OPT_FS_SESSION, "Allow for this session")),
                "always" => Ok(option(OPT_FS_ALWAYS, "Allow always (persist the root)")),
                other => Err(format!(
                    "approval::resolve `access_duration` {:?} is not once|session|always",
                    switchboard_core::text::truncate(other, 40)
                )),
            },
            Some(_) => Err("approval::resolve `access_duration` is not a string".into()),
        },
        Some("deny") => Ok(Decision::Deny {
            message: str_field(payload, "reason").unwrap_or("").to_string(),
            interrupt: false,
        }),
        Some(other) => Err(format!(
            "approval::resolve `decision` {:?} is not allow|deny",
            switchboard_core::text::truncate(other, 40)
        )),
        None => Err("approval::resolve without a `decision`".into()),
    }
}

/// Reads a recording in order: held-call records (events and listings) tell which function
/// a call is, approve-always calls are remembered, and each resolve yields its decision.
#[derive(Clone, Debug, Default)]
pub struct RecordedAnswers {
    /// (session, call) → function id, for the latest `MAX_RECORDS` held calls (a resolve
    /// follows its record closely); the oldest is forgotten first.
    functions: HashMap<(String, String), String>,
    order: VecDeque<(String, String)>,
    always: HashSet<(String, String)>,
}

/// Held-call records remembered for the resolves that follow them.
const MAX_RECORDS: usize = 10_000;

impl RecordedAnswers {
    /// A pushed `approval::pending-created` payload, or one record of a listing.
    pub fn observe_record(&mut self, record: &Value) {
        if let Ok(r) = decode_record(record) {
            let key = (r.session, r.call);
            if self.functions.insert(key.clone(), r.function_id).is_none() {
                self.order.push_back(key);
            }
            while self.order.len() > MAX_RECORDS {
                if let Some(old) = self.order.pop_front() {
                    self.functions.remove(&old);
                }
            }
        }
    }

    /// An `approval::list-pending` result.
    pub fn observe_listing(&mut self, result: &Value) {
        for r in result
            .field("pending")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            self.observe_record(r);
        }
    }

    /// An outgoing call: `Some((session_id, function_call_id, decision))` for a resolve.
    pub fn observe_call(
        &mut self,
        function_id: &str,
        payload: &Value,
    ) -> Option<Result<(String, String, Decision), String>> {
        match function_id {
            "approval::approve-always" | "approval::approve_always" => {
                if let (Some(s), Some(f)) = (
                    id_field(payload, "session_id"),
                    id_field(payload, "function_id"),
                ) && self.always.len() < 100_000
                {
                    self.always.insert((s.to_string(), f.to_string()));
                }
                None
            }
            "approval::resolve" => {
                let s = id_field(payload, "session_id").unwrap_or("").to_string();
                let c = id_field(payload, "function_call_id")
                    .unwrap_or("")
                    .to_string();
                let always = self
                    .functions
                    .get(&(s.clone(), c.clone()))
                    .is_some_and(|f| self.always.contains(&(s.clone(), f.clone())));
                Some(decision_of_resolve(payload, always).map(|d| (s, c, d)))
            }
            "harness::function::resolve" => Some(Err(
                "harness::function::resolve sent: switchboard must never call it".into(),
            )),
            _ => None,
        }
    }
}
