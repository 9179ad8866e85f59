//! Command line: subcommands and how each one starts.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::app::{self, App};
use crate::core::state::Settings;
use crate::ui::theme::Theme;
use crate::workspace::launch::{self, CliExtras, LaunchContext, SourceSpec};
use crate::workspace::profile::{ProfileKind, SessionProfile};

#[derive(Parser, Debug)]
#[command(
    name = "switchboard",
    version,
    about = "Supervise interactive AI-agent sessions: the session tree, the transcript and every pending gate."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Run the real `claude` CLI under supervision (stream-json control protocol).
    Claude(ClaudeArgs),
    /// The same TUI and Claude backend against a built-in scripted agent (no network).
    Demo(DemoArgs),
    /// Supervise any Agent Client Protocol agent (ACP v1 over stdio, with the Checkfu extension).
    Acp(AcpArgs),
    /// Start the sessions of the `[[session]]` profiles in config.toml (all, or those named).
    Up(UpArgs),
    /// Serve a remote agent host (ai-gateway protocol 1) the files and commands of --root,
    /// every effect behind a gate and a receipt.
    Gateway(GatewayArgs),
    /// A fake ai-gateway host on loopback that plays a scripted remote agent (no network).
    DemoGateway(DemoGatewayArgs),
    /// Supervise the agent sessions an iii engine hosts: one workspace session per root
    /// session, held approval calls in the inbox.
    Iii(IiiArgs),
    /// A fake iii engine on loopback with a scripted harness world (for `switchboard iii`).
    DemoEngine {
        /// Loopback port to listen on (0: any free port).
        #[arg(long, default_value_t = 49134)]
        port: u16,
    },
    /// Internal: the scripted agent `demo` runs (speaks stream-json on stdio).
    #[command(hide = true)]
    DemoAgent {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Step through a recording (or a cassette, or a workspace manifest: every session's
    /// recording merged by time) in the TUI, read-only.
    Replay {
        file: PathBuf,
        /// Force the input format: recording, cassette or jsonl.
        #[arg(long)]
        format: Option<crate::replay::load::Format>,
        /// Theme: dark, light, high-contrast, a user theme name or a TOML file.
        #[arg(long)]
        theme: Option<String>,
    },
    /// Convert a cowork-harness cassette into a switchboard recording.
    Import {
        cassette: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Write a readable Markdown transcript of a recording.
    Export {
        file: PathBuf,
        /// Markdown output (the only format so far).
        #[arg(long, required = true)]
        markdown: bool,
        /// Output file (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// List recent recordings, newest first.
    Sessions,
    /// Check recordings: schemas, protocol rules, decision fidelity.
    Validate {
        /// Recordings, cowork-harness cassettes or JSONL wire logs.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Force the input format: recording, cassette or jsonl.
        #[arg(long)]
        format: Option<crate::replay::load::Format>,
        /// Print a machine-readable JSON report instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Print every path switchboard uses.
    Paths,
    /// Configuration: `switchboard config check` validates config.toml and the rules file.
    Config {
        #[command(subcommand)]
        action: ConfigCmd,
    },
    /// Write SVG screenshots of the demo's main states (README pictures).
    Screenshots {
        /// Output directory.
        #[arg(long, default_value = "screenshots")]
        out: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub enum ConfigCmd {
    /// Parse config.toml, the rules file, the configured theme and every `[[session]]` profile;
    /// report errors with line and key.
    Check {
        /// Check this file instead of config.toml.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

#[derive(Args, Debug)]
pub struct UpArgs {
    /// Start only this profile (repeatable; default: every profile).
    #[arg(long = "session", value_name = "NAME")]
    pub sessions: Vec<String>,
    /// Read the profiles and settings from this file instead of config.toml.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Do not ring the terminal bell when a gate opens.
    #[arg(long)]
    pub no_bell: bool,
    /// Do not record the sessions.
    #[arg(long)]
    pub no_record: bool,
    /// Theme: dark, light, high-contrast, a user theme name or a TOML file.
    #[arg(long)]
    pub theme: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Working directory of the agent (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// First user turn, sent once the agent is ready.
    #[arg(long)]
    pub prompt: Option<String>,
    /// Write the recording here instead of the data dir.
    #[arg(long, conflicts_with = "no_record")]
    pub record: Option<PathBuf>,
    /// Do not record the session.
    #[arg(long)]
    pub no_record: bool,
    /// Do not ring the terminal bell when a gate opens.
    #[arg(long)]
    pub no_bell: bool,
    /// Add the approval rules of this TOML file (repeatable).
    #[arg(long = "rules", value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// Theme: dark, light, high-contrast, a user theme name or a TOML file.
    #[arg(long)]
    pub theme: Option<String>,
}

#[derive(Args, Debug)]
pub struct ClaudeArgs {
    /// The claude executable (else $SWITCHBOARD_CLAUDE_BIN, else `claude` on PATH).
    #[arg(long)]
    pub claude_bin: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
    /// Model for the session.
    #[arg(long)]
    pub model: Option<String>,
    /// Initial permission mode (default, acceptEdits, plan, bypassPermissions, dontAsk, auto).
    #[arg(long)]
    pub permission_mode: Option<String>,
    /// Continue a Claude session by id.
    #[arg(long)]
    pub resume: Option<String>,
    /// Pause before this tool runs (a PreToolUse hook), even when rules would allow it.
    #[arg(long = "break", value_name = "TOOL")]
    pub breaks: Vec<String>,
    /// Extra arguments passed to claude after the protocol flags.
    #[arg(last = true)]
    pub extra: Vec<String>,
}

#[derive(Args, Debug)]
pub struct AcpArgs {
    #[command(flatten)]
    pub common: Common,
    /// Built-in tools the session may use (Checkfu `checkfu.builtin_tools`), comma-separated:
    /// bash, read, write, edit, web_search, web_fetch.
    #[arg(long, value_name = "LIST")]
    pub builtin_tools: Option<String>,
    /// JSON Schema file for the final answer (Checkfu `checkfu.output_schema`).
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
    /// Do not offer the agent the client's file system (`fs/*`): it reads and writes files
    /// itself. gemini-cli needs this to create new files.
    #[arg(long)]
    pub no_fs: bool,
    /// Do not offer the agent client terminals (`terminal/*`): it runs commands itself.
    #[arg(long)]
    pub no_terminal: bool,
    /// The agent command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "AGENT_COMMAND")]
    pub agent: Vec<String>,
}

#[derive(Args, Debug)]
pub struct GatewayArgs {
    /// The host's base URL (ws:// only to loopback); the channel path is appended.
    #[arg(long)]
    pub url: String,
    /// The gateway workspace id (pinned for the channel).
    #[arg(long)]
    pub workspace: String,
    /// The project directory served; every path the agent names is opened beneath it.
    #[arg(long)]
    pub root: PathBuf,
    /// The launch intention: every call must carry exactly this.
    #[arg(long)]
    pub intention: String,
    /// ask (every effect is a gate), edits (write/patch/delete pre-approved), full.
    #[arg(long, default_value = "ask")]
    pub mode: String,
    /// Read the bearer token from this file (must not be readable by group or others).
    #[arg(long, conflicts_with = "token_env")]
    pub token_file: Option<PathBuf>,
    /// Read the bearer token from this environment variable.
    #[arg(long)]
    pub token_env: Option<String>,
    /// Write the recording here instead of the data dir.
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Theme: dark, light, high-contrast, a user theme name or a TOML file.
    #[arg(long)]
    pub theme: Option<String>,
}

#[derive(Args, Debug)]
pub struct IiiArgs {
    /// The engine's worker URL (ws:// only to loopback, else wss://).
    #[arg(long, default_value = launch::III_ENGINE)]
    pub engine: String,
    /// A handshake header, 'Name: value' (repeatable); the value is never recorded or shown.
    #[arg(long = "header", value_name = "'NAME: VALUE'")]
    pub headers: Vec<String>,
    /// Show only this root session (repeatable; default: every root session).
    #[arg(long = "session", value_name = "ID")]
    pub sessions: Vec<String>,
    /// Write the recording here instead of the data dir.
    #[arg(long, conflicts_with = "no_record")]
    pub record: Option<PathBuf>,
    /// Do not record the session.
    #[arg(long)]
    pub no_record: bool,
    /// Theme: dark, light, high-contrast, a user theme name or a TOML file.
    #[arg(long)]
    pub theme: Option<String>,
    /// Do not ring the terminal bell when a gate opens.
    #[arg(long)]
    pub no_bell: bool,
}

#[derive(Args, Debug)]
pub struct DemoGatewayArgs {
    /// Loopback port to listen on.
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    #[command(flatten)]
    pub common: Common,
    /// Breakpoints for the demo (default: Grep).
    #[arg(long = "break", value_name = "TOOL")]
    pub breaks: Vec<String>,
    /// A workspace of 1 to 3 scripted agents (auth, web, docs) whose gates overlap.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=3))]
    pub sessions: u8,
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // Every command that may start processes: none of their descendants outlives us (the
    // guard's drop ends them, after the command's own shutdown has run).
    let starts_processes = !matches!(
        cli.command,
        Cmd::Replay { .. }
            | Cmd::Import { .. }
            | Cmd::Export { .. }
            | Cmd::Sessions
            | Cmd::Validate { .. }
            | Cmd::Paths
            | Cmd::Config { .. }
            | Cmd::DemoGateway(_)
            | Cmd::DemoEngine { .. }
    );
    let _descendants = starts_processes.then(crate::reaper::Guard::start);
    if starts_processes {
        crate::child_env::hide_own_environment();
    }
    run(cli)
}

fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Cmd::DemoAgent { args } => ExitCode::from(crate::demo::agent::run(&args) as u8),
        Cmd::Replay {
            file,
            format,
            theme,
        } => match pick_theme(theme) {
            Ok(t) => crate::replay::cli::replay(&file, format, t),
            Err(e) => {
                eprintln!("switchboard: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Import { cassette, output } => crate::replay::cli::import(&cassette, &output),
        Cmd::Export { file, output, .. } => crate::replay::cli::export(&file, output.as_deref()),
        Cmd::Sessions => crate::replay::cli::sessions(),
        Cmd::Validate {
            files,
            format,
            json,
        } => crate::replay::cli::validate(&files, format, json),
        Cmd::Paths => {
            let cfg = crate::config::load_config().unwrap_or_default();
            println!("config dir:  {}", crate::config::config_dir().display());
            println!("config file: {}", crate::config::config_file().display());
            println!("rules file:  {}", rules_file(&cfg).display());
            println!("themes dir:  {}", crate::config::themes_dir().display());
            println!("data dir:    {}", crate::paths::data_dir().display());
            println!("recordings:  {}", crate::paths::recordings_dir().display());
            println!("logs:        {}", crate::paths::logs_dir().display());
            ExitCode::SUCCESS
        }
        Cmd::Config {
            action: ConfigCmd::Check { config },
        } => config_check(config),
        Cmd::Up(args) => up(args),
        Cmd::Screenshots { out } => {
            let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
            match rt.block_on(crate::screenshots::generate(&out)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("switchboard: screenshots failed: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Cmd::Claude(args) => {
            // config.toml [claude] fills what the command line leaves out (in the launch).
            let mut p = profile_of(&args.common, ProfileKind::Claude);
            p.command = args
                .claude_bin
                .iter()
                .map(|b| b.display().to_string())
                .collect();
            p.model = args.model;
            p.permission_mode = args.permission_mode;
            p.breaks = args.breaks;
            let mut cx = launch_context(&args.common);
            cx.resume = args.resume;
            let extras = CliExtras {
                claude_args: args.extra,
                ..CliExtras::default()
            };
            run_one(launch::launch_cli(&p, &cx, &extras), &args.common)
        }
        Cmd::Acp(args) => run_acp(args),
        Cmd::Gateway(args) => run_gateway(args),
        Cmd::DemoGateway(args) => crate::backend::gateway::demo::main(args.port),
        Cmd::Iii(args) => run_iii(args),
        Cmd::DemoEngine { port } => crate::backend::iii::fake_engine::demo_main(port),
        Cmd::Demo(args) if args.sessions > 1 => demo_workspace(args),
        Cmd::Demo(args) => {
            let mut p = profile_of(&args.common, ProfileKind::Demo);
            p.breaks = args.breaks;
            let cx = launch_context(&args.common);
            run_one(
                launch::launch_cli(&p, &cx, &CliExtras::default()),
                &args.common,
            )
        }
    }
}

/// `demo --sessions N`: the first N sessions of the demo workspace, each its own recording.
fn demo_workspace(args: DemoArgs) -> ExitCode {
    if args.common.record.is_some() {
        eprintln!(
            "switchboard: --record names one file; a demo workspace records each session in the data dir"
        );
        return ExitCode::from(2);
    }
    let base = profile_of(&args.common, ProfileKind::Demo);
    let profiles: Vec<SessionProfile> = crate::demo::demo_workspace()
        .into_iter()
        .take(args.sessions as usize)
        .map(|d| {
            let mut p = SessionProfile::new(d.name, ProfileKind::Demo, base.cwd.clone());
            p.script = d.script;
            p.prompt = Some(base.prompt.clone().unwrap_or(d.prompt));
            p.breaks = args.breaks.clone();
            p
        })
        .collect();
    let cx = launch_context(&args.common);
    let mut specs = Vec::new();
    for p in &profiles {
        match launch::launch(p, &cx) {
            Ok(s) => specs.push(s),
            Err(e) => {
                eprintln!("switchboard: {}", crate::core::text::neutralize(&e));
                return ExitCode::from(2);
            }
        }
    }
    let mut opts = RunOptions::of(&args.common);
    opts.launcher = Some(Launchable { profiles, cx });
    run_sources(specs, &opts)
}

/// The profile a one-session subcommand describes: its cwd (default: here) and prompt.
fn profile_of(common: &Common, kind: ProfileKind) -> SessionProfile {
    let cwd = common
        .cwd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    let mut p = SessionProfile::new(kind.label(), kind, cwd);
    p.prompt = common.prompt.clone();
    p
}

/// `--record`/`--no-record` and config.toml `[claude]` for a one-session subcommand.
fn launch_context(common: &Common) -> LaunchContext {
    LaunchContext {
        claude: crate::config::load_config().unwrap_or_default().claude,
        record: !common.no_record,
        record_to: common.record.clone(),
        resume: None,
    }
}

/// Run one built source (or say why it could not be built).
fn run_one(spec: Result<SourceSpec, String>, common: &Common) -> ExitCode {
    match spec {
        Ok(spec) => run_sources(vec![spec], &RunOptions::of(common)),
        Err(e) => {
            eprintln!("switchboard: {e}");
            ExitCode::from(2)
        }
    }
}

/// `--claude-bin`, else `$SWITCHBOARD_CLAUDE_BIN`, else config.toml `[claude] bin`, else
/// `claude` on PATH.
pub fn resolve_claude(flag: Option<&Path>, config: Option<&Path>) -> Option<PathBuf> {
    launch::resolve_claude(flag, config)
}

fn run_acp(args: AcpArgs) -> ExitCode {
    let output_schema = match &args.output_schema {
        None => None,
        Some(path) => match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(v) => Some(v),
            Err(e) => {
                eprintln!("switchboard: --output-schema {}: {e}", path.display());
                return ExitCode::from(2);
            }
        },
    };
    let builtin_tools = args.builtin_tools.as_ref().map(|l| {
        l.split(',')
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect()
    });
    let mut p = profile_of(&args.common, ProfileKind::Acp);
    p.command = args.agent;
    p.withhold_fs = args.no_fs;
    p.withhold_terminal = args.no_terminal;
    let extras = CliExtras {
        builtin_tools,
        output_schema,
        ..CliExtras::default()
    };
    run_one(
        launch::launch_cli(&p, &launch_context(&args.common), &extras),
        &args.common,
    )
}

fn run_iii(args: IiiArgs) -> ExitCode {
    let common = Common {
        cwd: None,
        prompt: None,
        record: args.record,
        no_record: args.no_record,
        no_bell: args.no_bell,
        rules: Vec::new(),
        theme: args.theme,
    };
    let mut p = profile_of(&common, ProfileKind::Iii);
    p.engine = Some(args.engine);
    p.headers = args.headers;
    p.sessions = args.sessions;
    run_one(
        launch::launch_cli(&p, &launch_context(&common), &CliExtras::default()),
        &common,
    )
}

fn run_gateway(args: GatewayArgs) -> ExitCode {
    match gateway_config(&args) {
        Ok(cfg) => {
            let common = Common {
                cwd: None,
                prompt: None,
                record: args.record.clone(),
                no_record: false,
                no_bell: false,
                rules: Vec::new(),
                theme: args.theme.clone(),
            };
            let backend = Box::new(crate::backend::gateway::session::GatewayBackend::new(cfg));
            let spec = SourceSpec {
                name: crate::backend::Backend::root_name(&*backend),
                recording: args.record.clone(),
                backend,
                rules: crate::core::rules::Rules::default(),
                profile: None,
            };
            run_sources(vec![spec], &RunOptions::of(&common))
        }
        Err(e) => {
            eprintln!("switchboard: {e}");
            ExitCode::from(2)
        }
    }
}

fn gateway_config(
    args: &GatewayArgs,
) -> Result<crate::backend::gateway::session::GatewayConfig, String> {
    use crate::backend::gateway::{engine::Pinned, journal::Journal, transport, validate::Mode};
    let mode = Mode::parse(&args.mode)
        .ok_or_else(|| format!("--mode {:?}: use ask, edits or full", args.mode))?;
    transport::channel_url(&args.url, &args.workspace)?;
    let raw = match (&args.token_file, &args.token_env) {
        (Some(f), _) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let m = std::fs::metadata(f)
                    .map_err(|e| format!("--token-file {}: {e}", f.display()))?;
                if m.permissions().mode() & 0o077 != 0 {
                    return Err(format!(
                        "--token-file {}: readable by group or others; chmod 600 it",
                        f.display()
                    ));
                }
            }
            std::fs::read_to_string(f).map_err(|e| format!("--token-file {}: {e}", f.display()))?
        }
        (None, Some(v)) => {
            // From now on no process we start gets it (`child_env`).
            crate::child_env::register_secret(v);
            std::env::var(v).map_err(|_| format!("--token-env {v}: not set"))?
        }
        (None, None) => return Err("give the bearer token with --token-file or --token-env".into()),
    };
    let token = transport::Token::new(raw)?;
    let extra_tools = crate::backend::gateway::tools::extra::load()
        .map_err(|e| format!("config.toml [[gateway.tool]]: {e}"))?;
    let exec_env = crate::backend::gateway::tools::env::load(args.token_env.as_deref())?;
    Ok(crate::backend::gateway::session::GatewayConfig {
        url: args.url.clone(),
        root: args.root.clone(),
        pinned: Pinned {
            workspace_id: args.workspace.clone(),
            intention: args.intention.clone(),
            mode,
            extra_tools,
        },
        token,
        journal: Journal::default_path(&args.workspace),
        record: args.record.clone(),
        exec_env,
    })
}

fn rules_file(cfg: &crate::config::Config) -> PathBuf {
    cfg.rules_file
        .clone()
        .unwrap_or_else(crate::config::default_rules_file)
}

/// The config file in use: `--config FILE` (which must exist) or config.toml (optional).
fn read_config(flag: Option<&Path>) -> Result<(PathBuf, crate::config::Config, String), String> {
    let path = flag.map_or_else(crate::config::config_file, Path::to_path_buf);
    let (cfg, text) =
        crate::config::load_config_from(&path, flag.is_some()).map_err(|e| e.to_string())?;
    Ok((path, cfg, text))
}

/// Every `[[session]]` profile of the file, checked.
fn check_profiles(
    path: &Path,
    cfg: &crate::config::Config,
    text: &str,
) -> crate::workspace::profile::Checked {
    let resolve = crate::workspace::profile::Resolve::for_file(path);
    crate::workspace::profile::check(path, text, &cfg.session, &resolve)
}

fn config_check(flag: Option<PathBuf>) -> ExitCode {
    let (path, cfg, text) = match read_config(flag.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            println!("{}", crate::core::text::neutralize(&e));
            return ExitCode::from(1);
        }
    };
    let mut bad = false;
    let mut rules = crate::core::rules::Rules::default();
    let rf = rules_file(&cfg);
    if let Err(e) = crate::config::load_rules(&rf, &mut rules) {
        println!("{e}");
        bad = true;
    }
    // Point at the line that sets a key, like the parse errors do.
    let at = |table: Option<&str>, key: &str| {
        crate::config::line_of_key(&text, table, key)
            .map(|l| format!(":{l}"))
            .unwrap_or_default()
    };
    if let Some(t) = &cfg.theme
        && let Err(e) = Theme::load(t, &crate::config::themes_dir())
    {
        println!("{}{}: theme: {e}", path.display(), at(None, "theme"));
        bad = true;
    }
    // `[keys]`: each override as written, then what it collides with in the binding tables
    // (both named, with the contexts where they meet); the whole set last, for what only the
    // set shows. Overrides are checked together: moving an action off its default frees it.
    let mut keys_bad = false;
    for (action, key) in &cfg.keys {
        if let Err(e) = crate::core::keymap::parse(action, key) {
            println!("{}{}: {e}", path.display(), at(Some("keys"), action));
            keys_bad = true;
        }
    }
    for (action, e) in crate::core::bindings::collisions(&cfg.keys) {
        println!("{}{}: {e}", path.display(), at(Some("keys"), &action));
        keys_bad = true;
    }
    if !keys_bad && let Err(e) = crate::core::keymap::build(&cfg.keys) {
        println!("{}: {e}", path.display());
        keys_bad = true;
    }
    bad |= keys_bad;
    let mut checked = check_profiles(&path, &cfg, &text);
    for p in &checked.problems {
        println!("{p}");
    }
    bad |= !checked.problems.is_empty();
    // `[gateway] env`: never a token variable of a gateway profile, never a `SWITCHBOARD_*`.
    // Read from every profile as written, a broken one included.
    let token_vars: Vec<String> = cfg
        .session
        .iter()
        .filter_map(|t| Some(t.get("token_env")?.as_str()?.to_string()))
        .collect();
    for e in &cfg.gateway.env {
        if let Err(m) = crate::backend::gateway::tools::env::parse_entry(e, &token_vars) {
            println!(
                "{}{}: gateway.env: {}",
                path.display(),
                at(Some("gateway"), "env"),
                crate::core::text::neutralize(&m)
            );
            bad = true;
        }
    }
    // Build each good profile as `up` would (nothing starts): a claude profile whose binary
    // cannot be found fails here, not later.
    let cx = LaunchContext {
        claude: cfg.claude.clone(),
        ..LaunchContext::default()
    };
    checked.profiles.retain(|p| match launch::launch(p, &cx) {
        Ok(_) => true,
        Err(e) => {
            let line = checked
                .lines
                .get(&p.name)
                .map(|l| format!(":{l}"))
                .unwrap_or_default();
            println!(
                "{}{line}: {}",
                path.display(),
                crate::core::text::neutralize(&e).replace('\n', " ")
            );
            bad = true;
            false
        }
    });
    for p in &checked.profiles {
        println!(
            "session {}: {}, {}",
            p.name,
            p.backend.label(),
            crate::core::text::neutralize(&p.cwd.display().to_string())
        );
    }
    if bad {
        return ExitCode::from(1);
    }
    println!(
        "{}: ok ({} rule(s) in {}, {} session profile(s))",
        path.display(),
        rules.list.len(),
        rf.display(),
        checked.profiles.len()
    );
    ExitCode::SUCCESS
}

/// `switchboard up`: check every profile, pick the named ones, build them all, and only then
/// start anything.
fn up(args: UpArgs) -> ExitCode {
    let fail = |e: &str| {
        eprintln!("switchboard: {}", crate::core::text::neutralize(e));
        ExitCode::from(2)
    };
    let (path, cfg, text) = match read_config(args.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let checked = check_profiles(&path, &cfg, &text);
    if !checked.problems.is_empty() {
        for p in &checked.problems {
            eprintln!("{p}");
        }
        return fail(&format!(
            "{} problem(s) in the [[session]] profiles of {}; nothing was started",
            checked.problems.len(),
            path.display()
        ));
    }
    if checked.profiles.is_empty() {
        return fail(&format!(
            "{}: no [[session]] profiles to start (see `switchboard config check`)",
            path.display()
        ));
    }
    let known = || {
        checked
            .profiles
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut chosen: Vec<&SessionProfile> = Vec::new();
    for name in &args.sessions {
        match checked.profiles.iter().find(|p| &p.name == name) {
            Some(p) if chosen.iter().any(|c| c.name == p.name) => {}
            Some(p) => chosen.push(p),
            None => {
                return fail(&format!(
                    "--session {name:?}: no such profile in {}; known: {}",
                    path.display(),
                    known()
                ));
            }
        }
    }
    if args.sessions.is_empty() {
        chosen = checked.profiles.iter().collect();
    }
    let cx = LaunchContext {
        claude: cfg.claude.clone(),
        record: !args.no_record,
        record_to: None,
        resume: None,
    };
    let launcher = Launchable {
        profiles: checked.profiles.clone(),
        cx: cx.clone(),
    };
    let mut specs = Vec::new();
    for p in chosen {
        match launch::launch(p, &cx) {
            Ok(s) => specs.push(s),
            Err(e) => return fail(&e),
        }
    }
    run_sources(
        specs,
        &RunOptions {
            no_bell: args.no_bell,
            theme: args.theme,
            rules: Vec::new(),
            config: Some(path),
            launcher: Some(launcher),
        },
    )
}

/// Everything the TUI takes from config.toml, the rules files and `--theme`.
struct Loaded {
    keymap: std::collections::HashMap<char, char>,
    settings: Settings,
    theme: Theme,
    rules: crate::core::rules::Rules,
    rules_file: PathBuf,
    notify: Option<String>,
}

/// What the TUI is started with besides its sources.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub no_bell: bool,
    pub theme: Option<String>,
    /// `--rules FILE`: added to the global rules.
    pub rules: Vec<PathBuf>,
    /// The config file (`up --config`); `None`: config.toml.
    pub config: Option<PathBuf>,
    /// `up`: the profiles the new-session dialog offers, and how to build them.
    pub launcher: Option<Launchable>,
}

impl RunOptions {
    pub fn of(common: &Common) -> RunOptions {
        RunOptions {
            no_bell: common.no_bell,
            theme: common.theme.clone(),
            rules: common.rules.clone(),
            config: None,
            launcher: None,
        }
    }
}

pub fn need_terminal() -> Result<(), String> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        Ok(())
    } else {
        Err("the TUI needs a terminal: stdin and stdout must be a tty".into())
    }
}

/// `--theme`, else the config's theme, else dark; `NO_COLOR` drops the colours.
fn pick_theme(flag: Option<String>) -> Result<Theme, String> {
    let cfg = crate::config::load_config().map_err(|e| e.to_string())?;
    theme_of(flag, &cfg)
}

fn theme_of(flag: Option<String>, cfg: &crate::config::Config) -> Result<Theme, String> {
    let mut theme = match flag.or(cfg.theme.clone()) {
        Some(t) => Theme::load(&t, &crate::config::themes_dir())?,
        None => Theme::dark(),
    };
    if Theme::no_color_requested() {
        theme = theme.without_color();
    }
    Ok(theme)
}

fn load_setup(opts: &RunOptions) -> Result<Loaded, String> {
    let (path, cfg, _) = read_config(opts.config.as_deref())?;
    let theme = theme_of(opts.theme.clone(), &cfg)?;
    let rf = rules_file(&cfg);
    let mut rules = crate::core::rules::Rules::default();
    crate::config::load_rules(&rf, &mut rules).map_err(|e| e.to_string())?;
    for extra in &opts.rules {
        if !extra.is_file() {
            return Err(format!("--rules {}: no such file", extra.display()));
        }
        crate::config::load_rules(extra, &mut rules).map_err(|e| e.to_string())?;
    }
    let keymap =
        crate::core::keymap::build(&cfg.keys).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Loaded {
        keymap,
        settings: Settings {
            bell: !opts.no_bell && cfg.bell.unwrap_or(true),
            cancel_grace_ms: cfg
                .cancel_grace_secs
                .map_or(crate::core::update::cancel::DEFAULT_GRACE_MS, |s| {
                    s.saturating_mul(1000)
                }),
        },
        theme,
        rules,
        rules_file: rf,
        notify: cfg.notify_command.clone(),
    })
}

/// Start the TUI over `specs`: one workspace, each spec a session with its own rules (added to
/// the global ones for that session only). A workspace (`up`, a demo of several sessions)
/// writes a manifest beside the recordings.
pub fn run_sources(specs: Vec<SourceSpec>, opts: &RunOptions) -> ExitCode {
    if specs.is_empty() {
        eprintln!("switchboard: no session to start");
        return ExitCode::from(2);
    }
    let setup = match load_setup(opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("switchboard: {e}");
            return ExitCode::from(2);
        }
    };
    // Checked before any agent starts: without a terminal nothing could answer it.
    if let Err(e) = need_terminal() {
        eprintln!("switchboard: {e}");
        return ExitCode::from(2);
    }
    let _log = crate::logging::init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("switchboard: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let launcher = opts.launcher.clone();
    let result = runtime.block_on(async move {
        let app = start_workspace(specs, setup, launcher);
        app::term::run(app).await
    });
    // Not `eprintln!`: it panics when stderr is a terminal that went away.
    let say = |text: String| {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "switchboard: {text}");
    };
    match result {
        Ok(app) => {
            for s in &app.state.sessions {
                match (&s.session.recording, &s.session.recording_failed) {
                    (Some(r), Some(why)) => say(format!(
                        "recording incomplete: {} stopped early ({})",
                        crate::core::text::neutralize(r),
                        crate::core::text::sanitize(why)
                    )),
                    (Some(r), None) => say(format!(
                        "recording written to {}",
                        crate::core::text::neutralize(r)
                    )),
                    (None, _) => {}
                }
            }
            if let Some(m) = app.manifest_path() {
                say(format!("workspace manifest written to {}", m.display()));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            say(format!("terminal error: {e}"));
            ExitCode::from(1)
        }
    }
}

/// What the new-session dialog can start: every profile of the config, built as `up` builds.
#[derive(Clone, Debug)]
pub struct Launchable {
    pub profiles: Vec<SessionProfile>,
    pub cx: LaunchContext,
}

/// Open the workspace: the first source as session one, the others after it, each with its
/// own rules; the dialog's launcher and profiles. Must run inside the runtime.
fn start_workspace(specs: Vec<SourceSpec>, setup: Loaded, launcher: Option<Launchable>) -> App {
    // A workspace (`up`, a demo of several sessions) ties its recordings together in a
    // manifest; a one-session subcommand writes just its recording, as before.
    let manifest =
        (launcher.is_some() || specs.len() > 1) && specs.iter().any(|s| s.recording.is_some());
    let mut specs = specs.into_iter();
    let first = specs.next().expect("checked non-empty");
    let mut app = App::start(first.backend, setup.settings, setup.theme);
    app.state.sessions[0].tree.nodes[0].name = first.name;
    app.state.sessions[0].profile = first.profile.map(|p| p.name);
    // Known before the backend opens it: a recording that cannot be created is still named
    // in the exit message.
    app.state.sessions[0].session.recording = first.recording.map(|r| r.display().to_string());
    app.state.rules = setup.rules;
    for r in first.rules.list {
        app.state
            .rules
            .add_scoped(r.spec, r.origin, Some(app.first_session()));
    }
    app.state.keymap = setup.keymap;
    app.state.rules_file = Some(setup.rules_file.display().to_string());
    app.notify_command = setup.notify;
    for spec in specs {
        let id = app.add_session(&spec.name, spec.backend, spec.rules);
        if let Some(i) = app.state.index_of(id) {
            app.state.sessions[i].profile = spec.profile.map(|p| p.name);
            app.state.sessions[i].session.recording =
                spec.recording.map(|r| r.display().to_string());
        }
    }
    if manifest {
        let path = crate::paths::new_manifest_path();
        match crate::workspace::manifest::ManifestSink::create(&path, crate::record::now_ms()) {
            Ok(w) => app.observe(Box::new(w)),
            Err(e) => app.state.status_line = Some(format!("no workspace manifest: {e}")),
        }
    }
    if let Some(l) = launcher {
        app.state.profiles = l
            .profiles
            .iter()
            .map(|p| crate::core::state::ProfileChoice {
                name: p.name.clone(),
                backend: p.backend.label().to_string(),
                cwd: p.cwd.display().to_string(),
                provider: p.provider.clone(),
            })
            .collect();
        app.launcher = Some(Box::new(move |req| launch_requested(&l, req)));
    }
    app
}

/// Build the source the new-session dialog (or a restart) asked for.
fn launch_requested(
    l: &Launchable,
    req: &crate::core::msg::NewSession,
) -> Result<
    (
        String,
        Box<dyn crate::backend::Backend>,
        crate::core::rules::Rules,
    ),
    String,
> {
    let prompt = Some(req.prompt.clone()).filter(|p| !p.trim().is_empty());
    let spec = match (&req.profile, &req.command_line) {
        (Some(name), _) => {
            let mut p = l
                .profiles
                .iter()
                .find(|p| &p.name == name)
                .cloned()
                .ok_or_else(|| format!("no profile named {name:?}"))?;
            if !req.cwd.trim().is_empty() {
                let cwd = PathBuf::from(req.cwd.trim());
                if !cwd.is_dir() {
                    return Err(format!("{}: not a directory", cwd.display()));
                }
                p.cwd = cwd;
            }
            if prompt.is_some() || req.resume.is_some() {
                // A resumed conversation goes on where it was: no first prompt again.
                p.prompt = prompt;
            }
            let mut cx = l.cx.clone();
            cx.resume = req.resume.clone();
            launch::launch(&p, &cx)?
        }
        (None, Some(line)) => {
            let cwd = if req.cwd.trim().is_empty() {
                std::env::current_dir().map_err(|e| e.to_string())?
            } else {
                PathBuf::from(req.cwd.trim())
            };
            launch::adhoc_acp(line, &cwd, prompt, &l.cx)?
        }
        (None, None) => return Err("choose a profile or type a command line".into()),
    };
    Ok((spec.name, spec.backend, spec.rules))
}
