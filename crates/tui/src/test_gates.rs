//! Gates for this crate's unit tests.

use switchboard_core::gate::Gate;

/// A Claude permission request to run `command` in Bash, as gate `id` of the root node.
pub fn bash_permission(id: &str, command: &str) -> Gate {
    let req = serde_json::json!({"subtype":"can_use_tool","tool_name":"Bash",
        "input":{"command":command}});
    Gate {
        id: id.into(),
        node_key: "root".into(),
        asked_by: None,
        kind: switchboard_claude::gates::permission(&req),
        opened_ms: 0,
        default_reply: String::new(),
        reply_definition: "",
    }
}
