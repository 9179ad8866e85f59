//! Command-line settings of the demo agent and the permission modes it accepts.

use super::Config;

/// The scripts the demo agent can play, chosen with `--demo-script NAME`. Without the flag it
/// plays `auth` (the script `switchboard demo` has always shown).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Script {
    /// Audit logging in the auth module: the full tour of every gate kind.
    Auth,
    /// A failing CSS snapshot test in a web front end.
    Web,
    /// The changelog and README of a release.
    Docs,
}

/// Every `--demo-script` name, in the order `--help`-style messages list them.
pub const SCRIPT_NAMES: [&str; 3] = ["auth", "web", "docs"];

impl Script {
    fn parse(name: &str) -> Option<Script> {
        match name {
            "auth" => Some(Script::Auth),
            "web" => Some(Script::Web),
            "docs" => Some(Script::Docs),
            _ => None,
        }
    }
}

pub(super) const PERMISSION_MODES: [&str; 6] = [
    "default",
    "acceptEdits",
    "plan",
    "bypassPermissions",
    "dontAsk",
    "auto",
];

impl Config {
    /// Reads the CLI-style arguments; unknown flags are ignored like the CLI's own. The only
    /// error is a `--demo-script` that names no script (or has no value).
    pub(super) fn from_args(args: &[String], fast: bool) -> Result<Self, String> {
        let mut cfg = Config {
            script: Script::Auth,
            fast,
            partial: false,
            permission_mode: "default".into(),
            model: "claude-sonnet-5".into(),
            session_id: None,
        };
        let mut i = 0;
        while i < args.len() {
            let arg = args[i].as_str();
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg, None),
            };
            let takes_value = matches!(
                flag,
                "--permission-mode" | "--model" | "--session-id" | "--resume" | "--demo-script"
            );
            let value = if !takes_value {
                None
            } else if inline.is_some() {
                inline
            } else {
                i += 1;
                args.get(i).cloned()
            };
            match (flag, value) {
                ("--include-partial-messages", _) => cfg.partial = true,
                ("--permission-mode", Some(v)) if PERMISSION_MODES.contains(&v.as_str()) => {
                    cfg.permission_mode = v;
                }
                ("--model", Some(v)) if !v.is_empty() => cfg.model = v,
                ("--session-id" | "--resume", Some(v)) if !v.is_empty() => {
                    cfg.session_id = Some(v);
                }
                ("--demo-script", value) => {
                    let name = value.unwrap_or_default();
                    cfg.script = Script::parse(&name).ok_or_else(|| {
                        format!(
                            "unknown --demo-script {name:?} (known: {})",
                            SCRIPT_NAMES.join(", ")
                        )
                    })?;
                }
                _ => {}
            }
            i += 1;
        }
        Ok(cfg)
    }
}
