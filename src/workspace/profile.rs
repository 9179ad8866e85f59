//! `[[session]]` profiles of config.toml: the sessions `switchboard up` starts.
//!
//! The tables arrive raw (`toml::Table`) and are checked here key by key, so one run reports
//! every problem of every profile, each as `FILE:LINE: session "NAME": key: what is wrong`,
//! before anything starts. A profile that passes becomes a typed [`SessionProfile`] with its
//! paths resolved (`~` expanded, relative paths taken from the config file's directory).

use std::path::{Path, PathBuf};

use toml::Value;

mod files;
mod gateway;
mod table;

use table::check_one;

/// What a profile's `backend =` key can name: a backend, or the demo (the scripted agent, over
/// the Claude protocol). Each has a label, the keys it accepts, and a launch arm in `launch.rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileKind {
    Claude,
    Acp,
    Demo,
    Gateway,
    /// An iii engine: every root session it hosts becomes a session of the workspace.
    Iii,
}

impl ProfileKind {
    pub const ALL: [ProfileKind; 5] = [
        ProfileKind::Claude,
        ProfileKind::Acp,
        ProfileKind::Demo,
        ProfileKind::Gateway,
        ProfileKind::Iii,
    ];

    /// The word a profile's `backend =` key uses: the backend's own name, or `demo`.
    pub fn label(self) -> &'static str {
        match self {
            ProfileKind::Demo => "demo",
            other => other.backend().name(),
        }
    }

    pub fn parse(s: &str) -> Option<ProfileKind> {
        Self::ALL.into_iter().find(|k| k.label() == s)
    }

    /// The protocol its sessions speak.
    pub fn backend(self) -> crate::core::BackendKind {
        use crate::core::BackendKind;
        match self {
            ProfileKind::Claude | ProfileKind::Demo => BackendKind::Claude,
            ProfileKind::Acp => BackendKind::Acp,
            ProfileKind::Gateway => BackendKind::Gateway,
            ProfileKind::Iii => BackendKind::Iii,
        }
    }

    /// "claude, acp, demo, gateway, iii", for messages.
    pub fn accepted() -> String {
        Self::ALL.map(|k| k.label()).join(", ")
    }

    /// The keys a profile of this backend may set beyond the common ones.
    fn keys(self) -> &'static [&'static str] {
        match self {
            ProfileKind::Claude => &["model", "permission_mode", "command", "breaks"],
            ProfileKind::Acp => &["command", "fs", "terminal"],
            ProfileKind::Demo => &["breaks", "script"],
            ProfileKind::Gateway => &GATEWAY_KEYS,
            ProfileKind::Iii => &["engine", "headers", "sessions", "provider"],
        }
    }
}

/// The keys of a gateway profile: the flags of `switchboard gateway`.
const GATEWAY_KEYS: [&str; 7] = [
    "url",
    "workspace",
    "root",
    "intention",
    "mode",
    "token_file",
    "token_env",
];

/// A gateway profile's channel: what `switchboard gateway` takes as flags.
#[derive(Clone, Debug, PartialEq)]
pub struct GatewayProfile {
    /// The host's base URL (`wss://`, or `ws://` to loopback only).
    pub url: String,
    /// The gateway `workspaceId`.
    pub workspace: String,
    /// The project root served to the remote agent (an existing, readable directory).
    pub root: PathBuf,
    /// The launch intention pinned for the channel.
    pub intention: String,
    /// `ask`, `edits` or `full`.
    pub mode: String,
    pub token: crate::backend::gateway::session::TokenSource,
}

/// Keys every profile may set.
const COMMON_KEYS: [&str; 5] = ["name", "backend", "cwd", "prompt", "rules"];

/// Bounds on what a profile may hold: a name is a tree label, a prompt a first turn.
const MAX_NAME: usize = 64;
const MAX_PROMPT: usize = 64 * 1024;
const MAX_LIST: usize = 256;

/// One checked profile, paths resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionProfile {
    /// Unique; the session's root in the tree.
    pub name: String,
    pub backend: ProfileKind,
    /// An existing, readable directory.
    pub cwd: PathBuf,
    pub prompt: Option<String>,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    /// acp: the agent's argv (non-empty); claude: the binary and extra arguments (optional).
    pub command: Vec<String>,
    /// Rules files added to the global rules for this session (each exists and parses).
    pub rules: Vec<PathBuf>,
    pub breaks: Vec<String>,
    /// demo: the scripted agent's script name.
    pub script: Option<String>,
    /// gateway: the channel.
    pub gateway: Option<GatewayProfile>,
    /// iii: the engine URL (`ws://127.0.0.1:49134` when left out).
    pub engine: Option<String>,
    /// iii: handshake headers, `Name: value` (checked; values are never shown).
    pub headers: Vec<String>,
    /// iii: the root session ids to show (empty: every one).
    pub sessions: Vec<String>,
    /// iii: the provider the new-session dialog starts with for this engine (none: the
    /// router's default).
    pub provider: Option<String>,
    /// acp: `fs = false` withholds the client's file-system capability from the agent.
    pub withhold_fs: bool,
    /// acp: `terminal = false` withholds the client's terminal capability.
    pub withhold_terminal: bool,
}

impl SessionProfile {
    /// A profile with only the required parts, the rest empty.
    pub fn new(name: impl Into<String>, backend: ProfileKind, cwd: PathBuf) -> SessionProfile {
        SessionProfile {
            name: name.into(),
            backend,
            cwd,
            prompt: None,
            model: None,
            permission_mode: None,
            command: Vec::new(),
            rules: Vec::new(),
            breaks: Vec::new(),
            script: None,
            gateway: None,
            engine: None,
            headers: Vec::new(),
            sessions: Vec::new(),
            provider: None,
            withhold_fs: false,
            withhold_terminal: false,
        }
    }
}

/// How paths in profiles resolve: `~` from `home`, relative paths from `base` (the config
/// file's directory, so a profile means the same wherever `up` runs).
#[derive(Clone, Debug)]
pub struct Resolve {
    pub home: Option<PathBuf>,
    pub base: PathBuf,
}

impl Resolve {
    /// `$HOME` and the directory of `config_file`.
    pub fn for_file(config_file: &Path) -> Resolve {
        let base = config_file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("."));
        Resolve {
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            base,
        }
    }

    /// `~` and `~/x` expanded, relative paths joined to `base`. `~user` is not supported.
    pub fn path(&self, s: &str) -> Result<PathBuf, String> {
        let p = if s == "~" || s.starts_with("~/") {
            let home = self
                .home
                .as_ref()
                .ok_or("cannot expand `~`: $HOME is not set")?;
            match s.strip_prefix("~/") {
                Some(rest) => home.join(rest),
                None => home.clone(),
            }
        } else if s.starts_with('~') {
            return Err(format!("{}: only `~` and `~/…` are expanded", shown(s)));
        } else {
            PathBuf::from(s)
        };
        Ok(if p.is_relative() {
            self.base.join(p)
        } else {
            p
        })
    }
}

/// The result of checking every `[[session]]` table.
#[derive(Debug, Default)]
pub struct Checked {
    /// The profiles without problems, in file order.
    pub profiles: Vec<SessionProfile>,
    /// Every problem, rendered `FILE:LINE: session "NAME": key: what is wrong`, in file order.
    pub problems: Vec<String>,
    /// The line of each good profile's `[[session]]` header, by name (for later messages).
    pub lines: std::collections::HashMap<String, usize>,
}

/// One problem before it is rendered.
struct Problem {
    line: Option<usize>,
    key: String,
    what: String,
}

/// Check every `[[session]]` table of `file` (whose text is `text`).
pub fn check(file: &Path, text: &str, tables: &[toml::Table], resolve: &Resolve) -> Checked {
    let mut out = Checked::default();
    // name → (table number, line) of its first use.
    let mut seen: Vec<(String, usize, Option<usize>)> = Vec::new();
    for (n, table) in tables.iter().enumerate() {
        let line_of = |key: Option<&str>| {
            crate::config::line_of_array_key(text, "session", n, key)
                .or_else(|| crate::config::line_of_array_key(text, "session", n, None))
        };
        let mut problems = Vec::new();
        let profile = check_one(table, resolve, &mut problems);
        let name = match table.get("name") {
            Some(Value::String(s)) if valid_name(s).is_ok() => Some(s.clone()),
            _ => None,
        };
        if let Some(name) = &name {
            if let Some((_, first, first_line)) = seen.iter().find(|(s, _, _)| s == name) {
                let at = first_line
                    .map(|l| format!(", line {l}"))
                    .unwrap_or_default();
                problems.push(Problem {
                    line: None,
                    key: "name".into(),
                    what: format!(
                        "{} is already the name of [[session]] #{}{at}; names must be unique",
                        shown(name),
                        first + 1
                    ),
                });
            } else {
                seen.push((name.clone(), n, line_of(Some("name"))));
            }
        }
        let who = match &name {
            Some(s) => format!("session {}", shown(s)),
            None => format!("[[session]] #{}", n + 1),
        };
        let mut rendered: Vec<(usize, String)> = problems
            .into_iter()
            .map(|p| {
                let line = p.line.or_else(|| line_of(Some(&p.key)));
                let at = line.map(|l| format!(":{l}")).unwrap_or_default();
                let msg = format!("{}{at}: {who}: {}: {}", file.display(), p.key, p.what);
                (line.unwrap_or(0), for_terminal(&msg))
            })
            .collect();
        rendered.sort_by_key(|(l, _)| *l);
        if rendered.is_empty()
            && let Some(p) = profile
        {
            if let Some(l) = line_of(None) {
                out.lines.insert(p.name.clone(), l);
            }
            out.profiles.push(p);
        }
        out.problems.extend(rendered.into_iter().map(|(_, s)| s));
    }
    out
}

/// A value from the file, quoted and escaped for a message (never raw: it may hold escapes),
/// cut to a readable length.
fn shown(s: &str) -> String {
    let cut: String = s.chars().take(80).collect();
    if cut.len() < s.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}

/// A message made safe to print: every hostile character visible (`^[`, `<U+202E>`), one
/// line, and bounded (a path or a key can be as long as the file allows).
fn for_terminal(msg: &str) -> String {
    const MAX: usize = 360;
    let one = crate::core::text::neutralize(msg).replace('\n', "^J");
    if one.chars().count() <= MAX {
        return one;
    }
    let mut cut: String = one.chars().take(MAX).collect();
    cut.push('…');
    cut
}

fn valid_name(s: &str) -> Result<(), String> {
    if s.trim().is_empty() {
        return Err("must not be empty".into());
    }
    if s.chars().count() > MAX_NAME {
        return Err(format!("longer than {MAX_NAME} characters"));
    }
    if s.chars().any(char::is_control) || crate::core::text::neutralize(s) != s {
        return Err("must be printable text (no control or bidirectional characters)".into());
    }
    Ok(())
}

/// A word handed to an agent as an argument or shown in the tree: one line, printable.
fn valid_word(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.chars().any(char::is_control) || crate::core::text::neutralize(s) != s {
        return Err(format!("{}: control characters are not allowed", shown(s)));
    }
    Ok(())
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;
