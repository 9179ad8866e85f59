//! The built-in scripted agent behind `switchboard demo`, and the sessions of the demo workspace.
pub mod agent;

/// One session of the demo workspace (`switchboard demo --sessions 3`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DemoSession {
    /// The session's name, shown as its tree root; unique in the workspace.
    pub name: String,
    /// The `--demo-script` the agent plays, or `None` for the main script (`switchboard demo`).
    pub script: Option<String>,
    /// The first prompt sent to the session.
    pub prompt: String,
}

impl DemoSession {
    /// The arguments to add to the demo agent's command line (after `demo-agent`) so it plays
    /// this session's script.
    pub fn agent_args(&self) -> Vec<String> {
        match &self.script {
            Some(script) => vec!["--demo-script".into(), script.clone()],
            None => Vec::new(),
        }
    }
}

/// The three sessions of the demo workspace, in the order they are opened. Started together they
/// hold several gates at once within seconds: `web` and `docs` both ask to run the identical
/// `npm test` (the inbox's "all identical"), and every session has a question and a sub-agent's
/// gate.
pub fn demo_workspace() -> Vec<DemoSession> {
    let session = |name: &str, script: Option<&str>, prompt: &str| DemoSession {
        name: name.into(),
        script: script.map(str::to_string),
        prompt: prompt.into(),
    };
    vec![
        session("auth", None, "Add audit logging to the auth module."),
        session(
            "web",
            Some("web"),
            "The Button snapshot test fails since the theme update; fix it.",
        ),
        session(
            "docs",
            Some("docs"),
            "Update the changelog and README for the 2.4.0 release.",
        ),
    ]
}
