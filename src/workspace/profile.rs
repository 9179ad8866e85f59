//! `[[session]]` profiles of config.toml: the sessions `switchboard up` starts.
//!
//! The tables arrive raw (`toml::Table`) and are checked here key by key, so one run reports
//! every problem of every profile, each as `FILE:LINE: session "NAME": key: what is wrong`,
//! before anything starts. A profile that passes becomes a typed [`SessionProfile`] with its
//! paths resolved (`~` expanded, relative paths taken from the config file's directory).

use std::path::{Path, PathBuf};

use toml::Value;

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

fn check_one(
    table: &toml::Table,
    resolve: &Resolve,
    problems: &mut Vec<Problem>,
) -> Option<SessionProfile> {
    let mut bad = |key: &str, what: String| {
        problems.push(Problem {
            line: None,
            key: key.to_string(),
            what,
        })
    };
    let string = |key: &str, bad: &mut dyn FnMut(&str, String)| -> Option<String> {
        match table.get(key)? {
            Value::String(s) => Some(s.clone()),
            v => {
                bad(key, format!("expected a string, found {}", v.type_str()));
                None
            }
        }
    };
    let boolean = |key: &str, bad: &mut dyn FnMut(&str, String)| -> Option<bool> {
        match table.get(key)? {
            Value::Boolean(b) => Some(*b),
            v => {
                bad(
                    key,
                    format!("expected true or false, found {}", v.type_str()),
                );
                None
            }
        }
    };
    let strings = |key: &str, bad: &mut dyn FnMut(&str, String)| -> Option<Vec<String>> {
        match table.get(key)? {
            Value::Array(a) if a.len() > MAX_LIST => {
                bad(key, format!("more than {MAX_LIST} entries"));
                None
            }
            Value::Array(a) => {
                let mut out = Vec::new();
                for (i, v) in a.iter().enumerate() {
                    match v {
                        Value::String(s) => out.push(s.clone()),
                        v => {
                            bad(
                                key,
                                format!("entry {} is {}, expected a string", i + 1, v.type_str()),
                            );
                            return None;
                        }
                    }
                }
                Some(out)
            }
            v => {
                bad(
                    key,
                    format!("expected an array of strings, found {}", v.type_str()),
                );
                None
            }
        }
    };

    let name = match string("name", &mut bad) {
        None if !table.contains_key("name") => {
            bad("name", "missing (every profile needs a unique name)".into());
            None
        }
        None => None,
        Some(s) => match valid_name(&s) {
            Ok(()) => Some(s),
            Err(e) => {
                bad("name", e);
                None
            }
        },
    };
    let backend = match string("backend", &mut bad) {
        None if !table.contains_key("backend") => {
            bad(
                "backend",
                format!("missing (one of {})", ProfileKind::accepted()),
            );
            None
        }
        None => None,
        Some(s) => match ProfileKind::parse(&s) {
            Some(k) => Some(k),
            None => {
                bad(
                    "backend",
                    format!("{} is not one of {}", shown(&s), ProfileKind::accepted()),
                );
                None
            }
        },
    };

    // Keys: unknown ones, and known ones this backend does not use (never silently ignored).
    for key in table.keys() {
        if COMMON_KEYS.contains(&key.as_str()) {
            continue;
        }
        let users: Vec<&str> = ProfileKind::ALL
            .into_iter()
            .filter(|k| k.keys().contains(&key.as_str()))
            .map(|k| k.label())
            .collect();
        match backend {
            Some(k) if k.keys().contains(&key.as_str()) => {}
            Some(k) if !users.is_empty() => bad(
                key,
                format!(
                    "not used by {} profiles (only {})",
                    k.label(),
                    users.join(", ")
                ),
            ),
            None if !users.is_empty() => {}
            _ => {
                let mut accepted: Vec<&str> = COMMON_KEYS.to_vec();
                match backend {
                    Some(k) => accepted.extend(k.keys()),
                    None => {
                        for x in ProfileKind::ALL.iter().flat_map(|k| k.keys()) {
                            if !accepted.contains(x) {
                                accepted.push(x);
                            }
                        }
                    }
                }
                let shown_key = shown(key);
                problems_unknown(&mut bad, key, &shown_key, &accepted);
            }
        }
    }

    let cwd = match string("cwd", &mut bad) {
        Some(s) => match resolve.path(&s).and_then(|p| readable_dir(&p).map(|()| p)) {
            Ok(p) => Some(p),
            Err(e) => {
                bad("cwd", e);
                None
            }
        },
        None if table.contains_key("cwd") => None,
        // No cwd: the directory `up` runs in, as for the one-session commands.
        None => Some(std::env::current_dir().unwrap_or_else(|_| resolve.base.clone())),
    };

    let prompt = string("prompt", &mut bad).filter(|p| {
        if p.len() > MAX_PROMPT {
            bad("prompt", format!("longer than {MAX_PROMPT} bytes"));
            return false;
        }
        true
    });

    let model = string("model", &mut bad).filter(|m| match valid_word(m) {
        Ok(()) if m.starts_with('-') => {
            bad("model", format!("{}: must not start with `-`", shown(m)));
            false
        }
        Ok(()) => true,
        Err(e) => {
            bad("model", e);
            false
        }
    });

    let permission_mode = string("permission_mode", &mut bad).filter(|m| {
        if crate::core::state::PERMISSION_MODES.contains(&m.as_str()) {
            return true;
        }
        bad(
            "permission_mode",
            format!(
                "{} is not one of {}",
                shown(m),
                crate::core::state::PERMISSION_MODES.join(", ")
            ),
        );
        false
    });

    let mut command = strings("command", &mut bad);
    if let Some(c) = &mut command {
        match check_command(c, resolve) {
            Ok(()) => {}
            Err(e) => {
                bad("command", e);
                command = None;
            }
        }
    }
    if backend == Some(ProfileKind::Acp) && !table.contains_key("command") {
        bad(
            "command",
            "missing: an acp profile needs the agent's argv, e.g. [\"claude-agent-acp\"]".into(),
        );
    }

    let mut rules = Vec::new();
    for r in strings("rules", &mut bad).unwrap_or_default() {
        match check_rules_file(&r, resolve) {
            Ok(p) => rules.push(p),
            Err(e) => bad("rules", e),
        }
    }

    let breaks = strings("breaks", &mut bad)
        .unwrap_or_default()
        .into_iter()
        .filter(|b| match valid_word(b) {
            Ok(()) => true,
            Err(e) => {
                bad("breaks", e);
                false
            }
        })
        .collect();

    let script = string("script", &mut bad).filter(|s| {
        let ok = !s.is_empty()
            && s.len() <= MAX_NAME
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            bad(
                "script",
                format!(
                    "{}: a script name is 1 to {MAX_NAME} letters, digits, `-` or `_`",
                    shown(s)
                ),
            );
        }
        ok
    });

    let gateway = if backend == Some(ProfileKind::Gateway) {
        Some(check_gateway(table, resolve, &mut bad)?)
    } else {
        None
    };
    let engine =
        string("engine", &mut bad).filter(|u| match crate::backend::iii::transport::check_url(u) {
            Ok(()) => true,
            Err(e) => {
                bad("engine", for_terminal(&e));
                false
            }
        });

    let headers = strings("headers", &mut bad)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .filter(
            |(i, h)| match crate::backend::iii::transport::Header::parse(h) {
                // The value may be a secret: the message names the entry, never its text.
                Ok(_) => true,
                Err(e) => {
                    bad("headers", format!("entry {}: {}", i + 1, for_terminal(&e)));
                    false
                }
            },
        )
        .map(|(_, h)| h)
        .collect();

    let sessions = strings("sessions", &mut bad)
        .unwrap_or_default()
        .into_iter()
        .filter(|id| match valid_word(id) {
            Ok(()) => true,
            Err(e) => {
                bad("sessions", e);
                false
            }
        })
        .collect();

    let provider = string("provider", &mut bad).filter(|p| {
        let why = if p.trim().is_empty() {
            Err("must not be empty (leave the key out for the router's default)".to_string())
        } else {
            crate::core::msg::check_provider(p)
        };
        why.map_err(|e| bad("provider", format!("{}: {e}", shown(p))))
            .is_ok()
    });

    // Offered unless a profile says `false` (the client capabilities of `initialize`).
    let withhold_fs = boolean("fs", &mut bad) == Some(false);
    let withhold_terminal = boolean("terminal", &mut bad) == Some(false);

    Some(SessionProfile {
        name: name?,
        backend: backend?,
        cwd: cwd?,
        prompt,
        model,
        permission_mode,
        command: command.unwrap_or_default(),
        rules,
        breaks,
        script,
        gateway,
        engine,
        headers,
        sessions,
        provider,
        withhold_fs,
        withhold_terminal,
    })
}

/// The gateway keys, with the checks of `switchboard gateway`'s flags; every problem reported.
fn check_gateway(
    table: &toml::Table,
    resolve: &Resolve,
    bad: &mut impl FnMut(&str, String),
) -> Option<GatewayProfile> {
    use crate::backend::gateway::session::TokenSource;
    let mut text = |key: &str, required: bool| -> Option<String> {
        match table.get(key) {
            Some(Value::String(s)) if s.trim().is_empty() => {
                bad(key, "must not be empty".into());
                None
            }
            Some(Value::String(s)) if s.chars().any(char::is_control) => {
                bad(
                    key,
                    format!("{}: control characters are not allowed", shown(s)),
                );
                None
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => {
                bad(key, format!("expected a string, found {}", v.type_str()));
                None
            }
            None if required => {
                bad(key, "missing (a gateway profile needs it)".into());
                None
            }
            None => None,
        }
    };
    let url = text("url", true);
    let workspace = text("workspace", true);
    let root = text("root", true);
    let intention = text("intention", true);
    let mode = text("mode", false);
    let token_file = text("token_file", false);
    let token_env = text("token_env", false);
    if let (Some(u), Some(w)) = (&url, &workspace)
        && let Err(e) = crate::backend::gateway::transport::channel_url(u, w)
    {
        bad("url", e);
    }
    let root =
        root.and_then(
            |r| match resolve.path(&r).and_then(|p| readable_dir(&p).map(|()| p)) {
                Ok(p) => Some(p),
                Err(e) => {
                    bad("root", e);
                    None
                }
            },
        );
    let mode = mode.unwrap_or_else(|| "ask".into());
    let mode_ok = crate::backend::gateway::validate::Mode::parse(&mode).is_some();
    if !mode_ok {
        bad(
            "mode",
            format!("{} is not one of ask, edits, full", shown(&mode)),
        );
    }
    let token = match (token_file, token_env) {
        (Some(_), Some(_)) => {
            bad(
                "token_env",
                "give the token with token_file or token_env, not both".into(),
            );
            None
        }
        (Some(f), None) => match resolve.path(&f) {
            Ok(p) => Some(("token_file", TokenSource::File(p))),
            Err(e) => {
                bad("token_file", e);
                None
            }
        },
        (None, Some(v)) => Some(("token_env", TokenSource::Env(v))),
        (None, None) => {
            if !table.contains_key("token_file") && !table.contains_key("token_env") {
                bad(
                    "token_file",
                    "missing: give the bearer token with token_file or token_env".into(),
                );
            }
            None
        }
    };
    let token = token.and_then(|(key, t)| match t.check() {
        Ok(()) => Some(t),
        Err(e) => {
            bad(key, e);
            None
        }
    });
    let url = url?;
    workspace.as_ref()?;
    if crate::backend::gateway::transport::channel_url(&url, workspace.as_deref()?).is_err()
        || !mode_ok
    {
        return None;
    }
    Some(GatewayProfile {
        url,
        workspace: workspace?,
        root: root?,
        intention: intention?,
        mode,
        token: token?,
    })
}

fn problems_unknown(
    bad: &mut impl FnMut(&str, String),
    key: &str,
    shown_key: &str,
    accepted: &[&str],
) {
    bad(
        key,
        format!("unknown key {shown_key}; accepted: {}", accepted.join(", ")),
    );
}

fn readable_dir(p: &Path) -> Result<(), String> {
    match std::fs::metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(format!("{}: no such directory", p.display()))
        }
        Err(e) => Err(format!("{}: {e}", p.display())),
        Ok(m) if !m.is_dir() => Err(format!("{}: not a directory", p.display())),
        Ok(_) => std::fs::read_dir(p)
            .map(|_| ())
            .map_err(|e| format!("{}: not readable: {e}", p.display())),
    }
}

/// The program (first word) exists: a path is resolved and must be a file, a bare name must be
/// on `$PATH`. The arguments are passed as they are, without a shell.
fn check_command(c: &mut [String], resolve: &Resolve) -> Result<(), String> {
    let Some(program) = c.first_mut() else {
        return Err("empty: give the program and its arguments".into());
    };
    if program.is_empty() {
        return Err("the program (first entry) is empty".into());
    }
    for w in c.iter() {
        if w.contains('\0') {
            return Err(format!("{}: contains a NUL byte", shown(w)));
        }
    }
    let program = &mut c[0];
    if program.contains('/') || program.starts_with('~') {
        let p = resolve.path(program)?;
        if !p.is_file() {
            return Err(format!("{}: no such file", p.display()));
        }
        *program = p.display().to_string();
    } else if find_on_path(program).is_none() {
        return Err(format!("{}: not found on $PATH", shown(program)));
    }
    Ok(())
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn check_rules_file(r: &str, resolve: &Resolve) -> Result<PathBuf, String> {
    let p = resolve.path(r)?;
    if !p.is_file() {
        return Err(format!("{}: no such file", p.display()));
    }
    let mut rules = crate::core::rules::Rules::default();
    crate::config::load_rules(&p, &mut rules).map_err(|e| e.to_string())?;
    Ok(p)
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;
