//! Gates, and a session that raises none, for this crate's unit tests.

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

/// A session that raises nothing by itself and reports every command it is sent.
pub struct Quiet {
    pub sent: tokio::sync::mpsc::UnboundedSender<switchboard_core::msg::Command>,
}

impl switchboard_backend::Backend for Quiet {
    fn kind(&self) -> switchboard_core::BackendKind {
        switchboard_core::BackendKind::Claude
    }
    fn root_name(&self) -> String {
        "main".into()
    }
    fn reply_check(&self) -> switchboard_core::state::ReplyCheck {
        switchboard_claude::session::reply_check
    }
    fn start(
        self: Box<Self>,
        _events: tokio::sync::mpsc::Sender<switchboard_core::msg::Stamped>,
        mut commands: tokio::sync::mpsc::UnboundedReceiver<switchboard_core::msg::Command>,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            while let Some(c) = commands.recv().await {
                let _ = self.sent.send(c);
            }
        })
    }
}

/// The gate id of the next answer a `Quiet` session was sent (other commands passed over).
pub async fn next_answer(
    commands: &mut tokio::sync::mpsc::UnboundedReceiver<switchboard_core::msg::Command>,
) -> String {
    loop {
        match tokio::time::timeout(std::time::Duration::from_secs(5), commands.recv())
            .await
            .expect("an answer in time")
            .expect("the session is alive")
        {
            switchboard_core::msg::Command::Answer { gate_id, .. } => return gate_id,
            _ => continue,
        }
    }
}
