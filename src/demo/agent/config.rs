//! Command-line settings of the demo agent and the permission modes it accepts.

use super::Config;

pub(super) const PERMISSION_MODES: [&str; 6] = [
    "default",
    "acceptEdits",
    "plan",
    "bypassPermissions",
    "dontAsk",
    "auto",
];

impl Config {
    pub(super) fn from_args(args: &[String], fast: bool) -> Self {
        let mut cfg = Config {
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
                "--permission-mode" | "--model" | "--session-id" | "--resume"
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
                _ => {}
            }
            i += 1;
        }
        cfg
    }
}
