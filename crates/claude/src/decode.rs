//! Reading a recorded reply body back as a decision: the inverse of `encode::body`, used by
//! replay (to show what was decided) and by `validate` (decision fidelity).

use serde_json::Value;

use super::encode::Pending;
use switchboard_core::gate::Decision;

/// The decision a recorded reply expresses, or `None` when our UI has no such answer (only
/// the raw editor could send it).
pub fn decision(pending: &Pending, body: &Value) -> Option<Decision> {
    let s = |k: &str| body.get(k).and_then(Value::as_str);
    Some(match pending {
        Pending::Permission { input, .. } => match s("behavior")? {
            "allow" => {
                let updated = body.get("updatedInput").cloned();
                Decision::Allow {
                    updated_input: updated.filter(|u| u != input),
                    always: body.get("updatedPermissions").is_some(),
                }
            }
            "deny" => Decision::Deny {
                message: s("message").unwrap_or("").to_string(),
                interrupt: body
                    .get("interrupt")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            },
            _ => return None,
        },
        Pending::Question { input } => match s("behavior")? {
            "allow" => {
                let answers = body.get("updatedInput")?.get("answers")?.as_object()?;
                // In question order, as the UI produces them.
                let order: Vec<String> = input
                    .get("questions")
                    .and_then(Value::as_array)
                    .map(|qs| {
                        qs.iter()
                            .filter_map(|q| q.get("question").and_then(Value::as_str))
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                let mut list: Vec<(String, String)> = order
                    .iter()
                    .filter_map(|q| {
                        answers.get(q).map(|a| {
                            (
                                q.clone(),
                                a.as_str()
                                    .map(str::to_string)
                                    .unwrap_or_else(|| a.to_string()),
                            )
                        })
                    })
                    .collect();
                for (k, v) in answers {
                    if !order.contains(k) {
                        list.push((
                            k.clone(),
                            v.as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| v.to_string()),
                        ));
                    }
                }
                Decision::Answer { answers: list }
            }
            "deny" => Decision::Deny {
                message: s("message").unwrap_or("").to_string(),
                interrupt: body
                    .get("interrupt")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            },
            _ => return None,
        },
        Pending::Breakpoint => {
            let obj = body.as_object()?;
            if obj.is_empty() {
                Decision::Continue
            } else if s("decision") == Some("block") {
                Decision::Block {
                    reason: s("reason").unwrap_or("").to_string(),
                }
            } else {
                return None;
            }
        }
        Pending::Dialog => match s("behavior")? {
            "completed" => Decision::DialogComplete {
                result: body.get("result").cloned().unwrap_or(Value::Null),
            },
            // The cowork-harness shape: same meaning, other words.
            "ok" => Decision::DialogComplete {
                result: body.get("choice").cloned().unwrap_or(Value::Null),
            },
            "cancelled" => Decision::DialogCancel,
            _ => return None,
        },
        Pending::Elicitation => match s("action")? {
            "accept" => Decision::ElicitAccept {
                content: body.get("content").cloned().unwrap_or(Value::Null),
            },
            "decline" => Decision::ElicitDecline,
            "cancel" => Decision::ElicitCancel,
            _ => return None,
        },
    })
}
