//! The harness's answers as its authors' own consumer contract reads them
//! (iii-hq/harness-e2e `src/wire.rs`, whose fixtures are vendored under
//! `fixtures/iii/harness-e2e`): required fields must be there with their types; fields the
//! contract does not name are additive and ignored. An answer that breaks it is a protocol
//! error, shown and recorded, and changes no state: a wrong state is worse than a stale one.
//!
//! (The golden response schemas are stricter than the authors' own valid fixtures, e.g.
//! `harness::status` requires fields the valid fixture lacks, so they are not the test here;
//! the request schemas are, in `validate` and tests/iii_golden.rs.)

use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
#[allow(dead_code)] // Read by serde only: their presence and types are the contract.
struct Send {
    session_id: String,
    turn_id: String,
    accepted: bool,
}

/// What we read of a status report: its status word is required; the counters the contract
/// requires are typed when present (earlier harness builds and our own fake leave some out,
/// and nothing we show depends on them being there).
#[derive(Deserialize)]
#[allow(dead_code)]
struct Status {
    status: String,
    session_id: Option<String>,
    turn_id: Option<String>,
    step: Option<u64>,
    turn_count: Option<u32>,
    max_turns: Option<u32>,
    #[serde(default)]
    pending_function_calls: Vec<String>,
    #[serde(default)]
    expects_wake: bool,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct TreeNode {
    session_id: String,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Tree {
    root_session_id: String,
    sessions: Vec<TreeNode>,
    complete: bool,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Totals {
    sessions: u64,
    turns: u64,
    function_calls: u64,
    function_call_errors: u64,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Usage {
    session_id: String,
    depth: u32,
    turns: u64,
    function_calls: u64,
    function_call_errors: u64,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Metrics {
    root_session_id: String,
    complete: bool,
    totals: Totals,
    by_session: Vec<Usage>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Stop {
    stopping: bool,
}

fn check<'de, T: Deserialize<'de>>(v: &'de Value) -> Result<(), String> {
    T::deserialize(v).map(|_| ()).map_err(|e| e.to_string())
}

/// `Err(why)` when the answer of `function_id` breaks the harness contract; `Ok` for
/// functions it does not cover. `harness::status` may answer `null` (no turn yet).
pub fn check_answer(function_id: &str, result: &Value) -> Result<(), String> {
    match function_id {
        "harness::send" => check::<Send>(result),
        "harness::status" if result.is_null() => Ok(()),
        "harness::status" => check::<Status>(result),
        "harness::session-tree" => check::<Tree>(result),
        "harness::metrics" => check::<Metrics>(result),
        "harness::stop" => check::<Stop>(result),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Value {
        let path = format!(
            "{}/../../fixtures/iii/harness-e2e/contracts/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    const IDS: [(&str, &str); 5] = [
        ("send", "harness::send"),
        ("status", "harness::status"),
        ("session_tree", "harness::session-tree"),
        ("metrics", "harness::metrics"),
        ("stop", "harness::stop"),
    ];

    #[test]
    fn the_authors_valid_and_additive_answers_keep_the_contract_and_incompatible_ones_break_it() {
        for file in ["valid-responses.json", "additive-responses.json"] {
            let f = fixture(file);
            for (key, id) in IDS {
                if let Some(v) = f.get(key) {
                    assert_eq!(check_answer(id, v), Ok(()), "{file} {key}");
                }
            }
        }
        let bad = fixture("incompatible-responses.json");
        let send = check_answer("harness::send", &bad["send"]).unwrap_err();
        assert!(send.contains("accepted"), "{send}");
        let metrics = check_answer("harness::metrics", &bad["metrics"]).unwrap_err();
        assert!(
            metrics.contains("u64") || metrics.contains("integer"),
            "{metrics}"
        );
        assert_eq!(check_answer("harness::status", &Value::Null), Ok(()));
        assert!(check_answer("harness::status", &serde_json::json!({"step": 1})).is_err());
        assert!(
            check_answer(
                "harness::status",
                &serde_json::json!({"status": "running", "step": "two"})
            )
            .is_err()
        );
    }
}
