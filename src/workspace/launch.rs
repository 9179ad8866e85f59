//! How a session is built from a profile: the claude, acp and demo backends, their recording
//! and their rules. Shared by `switchboard up`, the one-session subcommands (`claude`, `acp`,
//! `demo`) and the new-session dialog. Nothing here starts a process: a [`SourceSpec`] is
//! started by the app, so every profile can be built (and refused) before any agent runs.

use std::path::{Path, PathBuf};

use crate::backend::Backend;
use crate::backend::acp::session::{AcpBackend, AcpConfig};
use crate::backend::claude::session::{ClaudeBackend, ClaudeConfig};
use crate::backend::gateway::session::{GatewayBackend, GatewayConfig};
use crate::backend::iii::session::{IiiBackend, IiiConfig};
use crate::config::ClaudeDefaults;
use crate::core::rules::Rules;

use super::profile::{ProfileKind, SessionProfile};

/// One session source, ready to start.
pub struct SourceSpec {
    /// The tree root name (the profile name).
    pub name: String,
    pub backend: Box<dyn Backend>,
    /// The profile's own rules, added to the global ones for this session.
    pub rules: Rules,
    pub recording: Option<PathBuf>,
    /// The profile it was built from, to restart it later.
    pub profile: Option<SessionProfile>,
}

/// What every launch shares.
#[derive(Clone, Debug, Default)]
pub struct LaunchContext {
    /// config.toml `[claude]`: bin, model, mode and breaks used when a profile leaves them out.
    pub claude: ClaudeDefaults,
    /// Record the session (to a new file in the recordings dir, or to `record_to`).
    pub record: bool,
    /// `--record FILE` of a one-session subcommand.
    pub record_to: Option<PathBuf>,
    /// claude: `--resume SESSION_ID`, to restart a closed session or resume one after a
    /// crash; acp: `session/load` of it; demo: its scripted agent's session id.
    pub resume: Option<String>,
    /// Resuming after a crash: the transcript already shows the session's history (from its
    /// recording), so an ACP agent's replay of it is counted, not drawn twice.
    pub history_shown: bool,
}

/// What only the one-session subcommands can ask for, beyond a profile.
#[derive(Clone, Debug, Default)]
pub struct CliExtras {
    /// claude: arguments after `--`, passed after the protocol flags.
    pub claude_args: Vec<String>,
    /// acp: `--builtin-tools`.
    pub builtin_tools: Option<Vec<String>>,
    /// acp: `--output-schema`, parsed.
    pub output_schema: Option<serde_json::Value>,
}

/// The first prompt of the demo when none is given.
pub const DEMO_PROMPT: &str = "Add audit logging to the auth module.";

/// Build the source of one profile.
pub fn launch(profile: &SessionProfile, cx: &LaunchContext) -> Result<SourceSpec, String> {
    build(profile, cx, None)
}

/// Build the source of a one-session subcommand: the profile it describes plus `extras`.
/// Its root keeps the backend's own name, as before profiles existed.
pub fn launch_cli(
    profile: &SessionProfile,
    cx: &LaunchContext,
    extras: &CliExtras,
) -> Result<SourceSpec, String> {
    let mut spec = build(profile, cx, Some(extras))?;
    spec.name = spec.backend.root_name();
    Ok(spec)
}

/// A session from an ACP command line typed in the new-session dialog, split like a shell
/// would (quotes, backslashes) but never run through one.
pub fn adhoc_acp(
    command_line: &str,
    cwd: &Path,
    prompt: Option<String>,
    cx: &LaunchContext,
) -> Result<SourceSpec, String> {
    let argv = shlex::split(command_line)
        .ok_or("the command line has an unclosed quote or a trailing backslash")?;
    let Some(program) = argv.first() else {
        return Err("type the agent's command line".into());
    };
    if argv.iter().any(|w| w.contains('\0')) {
        return Err("the command line contains a NUL byte".into());
    }
    if !cwd.is_dir() {
        return Err(format!("{}: not a directory", cwd.display()));
    }
    let name = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "acp".into());
    let mut p = SessionProfile::new(
        crate::core::text::neutralize(&name).into_owned(),
        ProfileKind::Acp,
        cwd.to_path_buf(),
    );
    p.command = argv;
    p.prompt = prompt.filter(|t| !t.trim().is_empty());
    launch(&p, cx)
}

fn build(
    p: &SessionProfile,
    cx: &LaunchContext,
    extras: Option<&CliExtras>,
) -> Result<SourceSpec, String> {
    let mut rules = Rules::default();
    for file in &p.rules {
        crate::config::load_rules(file, &mut rules).map_err(|e| e.to_string())?;
    }
    let recording = recording(p.backend, cx);
    let backend: Box<dyn Backend> = match p.backend {
        ProfileKind::Claude => Box::new(ClaudeBackend {
            config: claude_config(p, cx, extras, recording.clone())?,
        }),
        ProfileKind::Demo => Box::new(ClaudeBackend {
            config: demo_config(p, cx, recording.clone())?,
        }),
        ProfileKind::Acp => Box::new(AcpBackend {
            config: acp_config(p, cx, extras, recording.clone())?,
        }),
        ProfileKind::Gateway => {
            Box::new(GatewayBackend::new(gateway_config(p, recording.clone())?))
        }
        ProfileKind::Iii => Box::new(IiiBackend::new(iii_config(p, recording.clone())?)),
    };
    Ok(SourceSpec {
        name: p.name.clone(),
        backend,
        rules,
        recording,
        // Extras live only on the command line: a restart would silently lose them.
        profile: extras
            .is_none_or(|e| {
                e.claude_args.is_empty() && e.builtin_tools.is_none() && e.output_schema.is_none()
            })
            .then(|| p.clone()),
    })
}

/// The recording file: none, the one asked for, or a new one named for the backend (never
/// for the profile: a name is free text, a file name must not be).
fn recording(kind: ProfileKind, cx: &LaunchContext) -> Option<PathBuf> {
    cx.record.then(|| {
        cx.record_to
            .clone()
            .unwrap_or_else(|| crate::paths::new_recording_path(kind.label()))
    })
}

/// What claude and the demo share: where, the first prompt, the recording, and the session
/// state frames that give an authoritative idle/running signal.
fn base(p: &SessionProfile, record: Option<PathBuf>) -> ClaudeConfig {
    ClaudeConfig {
        cwd: p.cwd.clone(),
        prompt: p.prompt.clone(),
        record,
        env: vec![(
            "CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS".into(),
            Some("1".into()),
        )],
        ..ClaudeConfig::default()
    }
}

const CLAUDE_MISSING: &str = "the `claude` CLI was not found.\n\
     Install it with `npm install -g @anthropic-ai/claude-code`, or point to it with ";

fn claude_config(
    p: &SessionProfile,
    cx: &LaunchContext,
    extras: Option<&CliExtras>,
    record: Option<PathBuf>,
) -> Result<ClaudeConfig, String> {
    let flag = p.command.first().map(PathBuf::from);
    let Some(program) = resolve_claude(flag.as_deref(), cx.claude.bin.as_deref()) else {
        return Err(match extras {
            Some(_) => format!("{CLAUDE_MISSING}--claude-bin PATH (or $SWITCHBOARD_CLAUDE_BIN)."),
            None => format!(
                "session {:?}: {CLAUDE_MISSING}`command = [\"PATH\"]` in the profile, \
                 `[claude] bin` in config.toml or $SWITCHBOARD_CLAUDE_BIN.",
                p.name
            ),
        });
    };
    let mut extra_args: Vec<String> = p.command.iter().skip(1).cloned().collect();
    if let Some(e) = extras {
        extra_args.extend(e.claude_args.iter().cloned());
    }
    Ok(ClaudeConfig {
        program,
        model: p.model.clone().or_else(|| cx.claude.model.clone()),
        permission_mode: p
            .permission_mode
            .clone()
            .or_else(|| cx.claude.permission_mode.clone()),
        resume: cx.resume.clone(),
        breaks: if p.breaks.is_empty() {
            cx.claude.breaks.clone()
        } else {
            p.breaks.clone()
        },
        extra_args,
        ..base(p, record)
    })
}

/// The demo runs our own executable as the scripted agent, exactly like `switchboard demo`.
fn demo_config(
    p: &SessionProfile,
    cx: &LaunchContext,
    record: Option<PathBuf>,
) -> Result<ClaudeConfig, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?;
    let mut prefix_args = vec!["demo-agent".to_string()];
    if let Some(s) = &p.script {
        prefix_args.push("--demo-script".into());
        prefix_args.push(s.clone());
    }
    let mut base = base(p, record);
    // A resumed conversation goes on where it was: no first prompt again.
    if base.prompt.is_none() && cx.resume.is_none() {
        base.prompt = Some(DEMO_PROMPT.into());
    }
    Ok(ClaudeConfig {
        program: exe,
        prefix_args,
        resume: cx.resume.clone(),
        breaks: if p.breaks.is_empty() {
            vec!["Grep".to_string()]
        } else {
            p.breaks.clone()
        },
        ..base
    })
}

fn acp_config(
    p: &SessionProfile,
    cx: &LaunchContext,
    extras: Option<&CliExtras>,
    record: Option<PathBuf>,
) -> Result<AcpConfig, String> {
    let mut argv = p.command.iter();
    let Some(program) = argv.next() else {
        return Err("give the agent command after `--`".into());
    };
    Ok(AcpConfig {
        program: PathBuf::from(program),
        args: argv.cloned().collect(),
        cwd: p.cwd.clone(),
        prompt: p.prompt.clone(),
        builtin_tools: extras.and_then(|e| e.builtin_tools.clone()),
        output_schema: extras.and_then(|e| e.output_schema.clone()),
        record,
        env: Vec::new(),
        withhold_fs: p.withhold_fs,
        withhold_terminal: p.withhold_terminal,
        resume: cx.resume.clone(),
        history_shown: cx.history_shown,
    })
}

/// A gateway profile's channel, like `switchboard gateway` builds it from its flags.
fn gateway_config(p: &SessionProfile, record: Option<PathBuf>) -> Result<GatewayConfig, String> {
    use crate::backend::gateway::session::TokenSource;
    use crate::backend::gateway::{engine::Pinned, journal::Journal, tools::extra, validate::Mode};
    let g = p
        .gateway
        .as_ref()
        .ok_or_else(|| format!("session {:?}: the gateway keys are missing", p.name))?;
    let mode = Mode::parse(&g.mode).ok_or_else(|| {
        format!(
            "session {:?}: mode {:?}: use ask, edits or full",
            p.name, g.mode
        )
    })?;
    let token = g
        .token
        .read()
        .map_err(|e| format!("session {:?}: token: {e}", p.name))?;
    let extra_tools = extra::load(&crate::config::config_file())
        .map_err(|e| format!("config.toml [[gateway.tool]]: {e}"))?;
    let token_var = match &g.token {
        TokenSource::Env(v) => Some(v.as_str()),
        TokenSource::File(_) => None,
    };
    let exec_env = crate::backend::gateway::tools::env::load(&gateway_env()?, token_var)?;
    Ok(GatewayConfig {
        url: g.url.clone(),
        root: g.root.clone(),
        pinned: Pinned {
            workspace_id: g.workspace.clone(),
            intention: g.intention.clone(),
            mode,
            extra_tools,
        },
        token,
        journal: Journal::default_path(&g.workspace),
        record,
        exec_env,
    })
}

/// The engine URL when a profile or `switchboard iii` leaves it out.
pub const III_ENGINE: &str = "ws://127.0.0.1:49134";

/// An iii profile: the engine, its headers (parsed again here: the profile kept the text so
/// it can be restarted), the root sessions shown.
fn iii_config(p: &SessionProfile, record: Option<PathBuf>) -> Result<IiiConfig, String> {
    let url = p.engine.clone().unwrap_or_else(|| III_ENGINE.into());
    crate::backend::iii::transport::check_url(&url)?;
    let mut headers = Vec::new();
    let mut argv = vec![
        "switchboard".to_string(),
        "iii".into(),
        "--engine".into(),
        url.clone(),
    ];
    for h in &p.headers {
        headers.push(crate::backend::iii::transport::Header::parse(h)?);
        argv.push("--header".into());
        argv.push(h.clone());
    }
    for id in &p.sessions {
        argv.push("--session".into());
        argv.push(id.clone());
    }
    Ok(IiiConfig {
        url,
        headers,
        sessions: p.sessions.clone(),
        record,
        argv,
    })
}

/// `--claude-bin` (or a profile's `command`), else `$SWITCHBOARD_CLAUDE_BIN`, else config.toml
/// `[claude] bin`, else `claude` on PATH.
pub fn resolve_claude(flag: Option<&Path>, config: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = flag {
        if p.components().count() == 1 && !p.is_file() {
            // A bare name in a profile's `command`: looked up on PATH like a shell would.
            return on_path(p.as_os_str());
        }
        return p.is_file().then(|| p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("SWITCHBOARD_CLAUDE_BIN").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    if let Some(p) = config {
        return p.is_file().then(|| p.to_path_buf());
    }
    on_path("claude".as_ref())
}

fn on_path(name: &std::ffi::OsStr) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The `[gateway] env` list of `config.toml` (empty when the file or the key is absent): the
/// variables the owner lets the channel's commands see.
pub fn gateway_env() -> Result<Vec<String>, String> {
    crate::config::load_config()
        .map(|c| c.gateway.env)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx() -> LaunchContext {
        LaunchContext {
            claude: ClaudeDefaults {
                bin: None,
                model: Some("opus".into()),
                permission_mode: Some("plan".into()),
                breaks: vec!["Edit".into()],
            },
            record: false,
            record_to: None,
            resume: Some("sess-1".into()),
            history_shown: false,
        }
    }

    #[test]
    fn claude_profiles_take_the_defaults_they_leave_out() {
        let exe = std::env::current_exe().unwrap();
        let mut p = SessionProfile::new("api", ProfileKind::Claude, PathBuf::from("/"));
        p.command = vec![exe.display().to_string(), "--verbose".into()];
        let c = claude_config(&p, &cx(), None, None).unwrap();
        assert_eq!(c.program, exe);
        assert_eq!(c.model.as_deref(), Some("opus"));
        assert_eq!(c.permission_mode.as_deref(), Some("plan"));
        assert_eq!(c.breaks, vec!["Edit"]);
        assert_eq!(c.resume.as_deref(), Some("sess-1"));
        assert_eq!(c.extra_args, vec!["--verbose"]);
        let args = c.args();
        let at = args.iter().position(|a| a == "--resume").unwrap();
        assert_eq!(args[at + 1], "sess-1");
        p.model = Some("sonnet".into());
        p.breaks = vec!["Bash".into()];
        let c = claude_config(&p, &cx(), None, None).unwrap();
        assert_eq!(c.model.as_deref(), Some("sonnet"));
        assert_eq!(c.breaks, vec!["Bash"]);
        p.command = vec!["/no/such/claude".into()];
        let e = claude_config(&p, &cx(), None, None).unwrap_err();
        assert!(
            e.starts_with("session \"api\": the `claude` CLI was not found"),
            "{e}"
        );
    }

    #[test]
    fn demo_profiles_run_our_own_agent_with_their_script() {
        let mut p = SessionProfile::new("show", ProfileKind::Demo, PathBuf::from("/"));
        p.script = Some("overlap".into());
        let c = demo_config(&p, &LaunchContext::default(), None).unwrap();
        assert_eq!(c.program, std::env::current_exe().unwrap());
        assert_eq!(c.args()[..3], ["demo-agent", "--demo-script", "overlap"]);
        assert_eq!(c.prompt.as_deref(), Some(DEMO_PROMPT));
        assert_eq!(c.breaks, vec!["Grep"]);
        let spec = launch(&p, &cx()).unwrap();
        assert_eq!(spec.name, "show");
        assert_eq!(spec.recording, None);
        assert_eq!(spec.profile, Some(p));
    }

    #[test]
    fn profile_rules_are_loaded_and_recordings_named_for_the_backend() {
        let dir = std::env::temp_dir().join(format!("sb-launch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rf = dir.join("r.toml");
        std::fs::write(&rf, "[[rule]]\naction = \"deny\"\ntool = \"Bash\"\n").unwrap();
        let mut p = SessionProfile::new("x/../y", ProfileKind::Acp, dir.clone());
        p.command = vec!["agent".into(), "--flag".into()];
        p.rules = vec![rf];
        let mut cx = cx();
        cx.record = true;
        cx.record_to = Some(dir.join("rec.jsonl"));
        let spec = launch(&p, &cx).unwrap();
        assert_eq!(spec.rules.list.len(), 1);
        assert_eq!(spec.recording, Some(dir.join("rec.jsonl")));
        cx.record_to = None;
        let spec = launch(&p, &cx).unwrap();
        let file = spec.recording.unwrap();
        assert!(file.to_string_lossy().ends_with("-acp.jsonl"), "{file:?}");
        assert!(!file.exists(), "building a source writes nothing");
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn adhoc_acp_command_lines_are_split_without_a_shell() {
        let cx = LaunchContext::default();
        let spec = adhoc_acp(
            "'/opt/my agent/bin' --model \"a b\" $HOME;rm",
            Path::new("/"),
            Some("hi".into()),
            &cx,
        )
        .unwrap();
        assert_eq!(spec.name, "bin");
        let p = spec.profile.unwrap();
        assert_eq!(
            p.command,
            vec!["/opt/my agent/bin", "--model", "a b", "$HOME;rm"]
        );
        assert_eq!(p.prompt.as_deref(), Some("hi"));
        assert!(adhoc_acp("agent 'open", Path::new("/"), None, &cx).is_err());
        assert!(adhoc_acp("   ", Path::new("/"), None, &cx).is_err());
        assert!(adhoc_acp("agent", Path::new("/no/such/dir"), None, &cx).is_err());
    }
}
