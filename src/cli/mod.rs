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
    about = "Supervise interactive AI-agent sessions: the session tree, the transcript and every pending gate.",
    after_help = "Example:\n  switchboard demo --sessions 3"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Run the real `claude` CLI under supervision (stream-json control protocol).
    #[command(
        after_help = "Example:\n  switchboard claude --cwd ~/src/api --prompt \"fix the flaky test\""
    )]
    Claude(ClaudeArgs),
    /// The same TUI and Claude backend against a built-in scripted agent (no network).
    #[command(after_help = "Example:\n  switchboard demo --sessions 3")]
    Demo(DemoArgs),
    /// Supervise any Agent Client Protocol agent (ACP v1 over stdio, with the Checkfu extension).
    #[command(after_help = "Example:\n  switchboard acp --cwd ~/src/shop -- claude-agent-acp")]
    Acp(AcpArgs),
    /// Start the sessions of the `[[session]]` profiles in config.toml (all, or those named).
    #[command(after_help = "Example:\n  switchboard up --session api --session review")]
    Up(UpArgs),
    /// Bring back a workspace that ended without being stopped (a crash, a kill, a reboot):
    /// every session resumes its own conversation by its id.
    #[command(after_help = "Example:\n  switchboard resume demo")]
    Resume(resume::ResumeArgs),
    /// Attach this terminal to a running host (started with --name).
    #[command(after_help = "Example:\n  switchboard attach demo")]
    Attach {
        /// The host's name.
        name: String,
    },
    /// List the running hosts: their sessions and waiting gates.
    #[command(after_help = "Example:\n  switchboard ls")]
    Ls,
    /// Stop a host as quitting does: every gate answered fail-closed, recordings completed.
    #[command(after_help = "Example:\n  switchboard stop demo")]
    Stop {
        /// The host's name.
        name: String,
    },
    /// Sessions started in their own terminals: switchboard's hooks in Claude Code's and
    /// Codex's settings (docs/adopt.md).
    #[command(after_help = "Example:\n  switchboard hooks install --claude")]
    Hooks {
        #[command(subcommand)]
        action: hooks::HooksCmd,
    },
    /// The command a CLI's hook runs (installed by `hooks install`): one event from stdin to
    /// the running host; a permission request waits for its answer. Prints nothing and exits
    /// 0 whenever no answer comes, so the CLI asks in its own terminal.
    #[command(after_help = "Example:\n  switchboard hook claude < event.json")]
    Hook {
        /// claude or codex.
        agent: String,
    },
    /// Internal: run the rest of the command line as a host (what --name starts).
    #[command(hide = true)]
    Host {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Serve a remote agent host (ai-gateway protocol 1) the files and commands of --root,
    /// every effect behind a gate and a receipt.
    #[command(
        after_help = "Example:\n  switchboard gateway --url ws://127.0.0.1:8765 --workspace demo --root . --intention \"tidy the README\" --token-env SWITCHBOARD_DEMO_GATEWAY_TOKEN"
    )]
    Gateway(GatewayArgs),
    /// A fake ai-gateway host on loopback that plays a scripted remote agent (no network).
    #[command(after_help = "Example:\n  switchboard demo-gateway --port 8765")]
    DemoGateway(DemoGatewayArgs),
    /// Supervise the agent sessions an iii engine hosts: one workspace session per root
    /// session, held approval calls in the inbox.
    #[command(after_help = "Example:\n  switchboard iii --engine ws://127.0.0.1:49134")]
    Iii(IiiArgs),
    /// A fake iii engine on loopback with a scripted harness world (for `switchboard iii`).
    #[command(after_help = "Example:\n  switchboard demo-engine --port 49134")]
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
    #[command(after_help = "Example:\n  switchboard replay session.jsonl --theme light")]
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
    #[command(after_help = "Example:\n  switchboard import cassette.json -o session.jsonl")]
    Import {
        cassette: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Write a readable Markdown transcript of a recording.
    #[command(after_help = "Example:\n  switchboard export session.jsonl --markdown -o session.md")]
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
    #[command(after_help = "Example:\n  switchboard sessions")]
    Sessions,
    /// Check recordings: schemas, protocol rules, decision fidelity.
    #[command(after_help = "Example:\n  switchboard validate session.jsonl --json")]
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
    #[command(after_help = "Example:\n  switchboard paths")]
    Paths,
    /// Configuration: `switchboard config check` validates config.toml and the rules file.
    #[command(after_help = "Example:\n  switchboard config check")]
    Config {
        #[command(subcommand)]
        action: ConfigCmd,
    },
    /// Print the completion script of a shell (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Example:\n  switchboard completions bash > ~/.local/share/bash-completion/completions/switchboard"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) of switchboard and its commands.
    #[command(after_help = "Example:\n  switchboard man | man -l -")]
    Man,
    /// Write SVG screenshots of the demo's main states (README pictures).
    #[command(after_help = "Example:\n  switchboard screenshots --out screenshots")]
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
    #[command(after_help = "Example:\n  switchboard config check --config ./config.toml")]
    Check {
        /// Check this file instead of config.toml.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

#[derive(Args, Debug)]
pub struct UpArgs {
    /// The host's name (default: the workspace's: the --config file's name, else
    /// `workspace`); `switchboard attach NAME` returns to it.
    #[arg(long, value_name = "NAME", conflicts_with = "no_host")]
    pub name: Option<String>,
    /// Run in this terminal, not under a host: quitting or closing it ends the workspace.
    #[arg(long)]
    pub no_host: bool,
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
    /// Run under a host named NAME that outlives this terminal (`switchboard attach NAME`).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
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
    /// Run under a host named NAME that outlives this terminal (`switchboard attach NAME`).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
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
    /// Run under a host named NAME that outlives this terminal (`switchboard attach NAME`).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
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

impl Cmd {
    /// The host a workspace command runs under: `--name`, and for `up` its workspace's name
    /// unless `--no-host`.
    fn host_name(&self) -> Option<String> {
        match self {
            Cmd::Claude(a) => a.common.name.clone(),
            Cmd::Demo(a) => a.common.name.clone(),
            Cmd::Acp(a) => a.common.name.clone(),
            Cmd::Up(a) => up_host(a),
            Cmd::Resume(a) => resume::host_name(a),
            Cmd::Gateway(a) => a.name.clone(),
            Cmd::Iii(a) => a.name.clone(),
            _ => None,
        }
    }
}

/// `up`'s host: `--name`, else the workspace's name; none with `--no-host`.
fn up_host(a: &UpArgs) -> Option<String> {
    (!a.no_host).then(|| {
        a.name
            .clone()
            .unwrap_or_else(|| host::workspace_name(a.config.as_deref()))
    })
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
            | Cmd::Attach { .. }
            | Cmd::Ls
            | Cmd::Stop { .. }
            | Cmd::Hooks { .. }
            | Cmd::Hook { .. }
            | Cmd::Completions { .. }
            | Cmd::Man
    );
    let _descendants = starts_processes.then(crate::reaper::Guard::start);
    if starts_processes {
        crate::child_env::hide_own_environment();
    }
    run(cli)
}

fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Cmd::DemoAgent { args } => demo::agent(&args),
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
        Cmd::Completions { shell } => docs::completions(shell),
        Cmd::Man => docs::man(),
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
        Cmd::Resume(args) => resume::resume(args),
        Cmd::Attach { name } => host::attach(&name),
        Cmd::Hooks { action } => hooks::run(action),
        // (`main` serves it before parsing; here only if that was bypassed.)
        Cmd::Hook { .. } => hook::main(),
        Cmd::Ls => host::ls(),
        Cmd::Stop { name } => host::stop(&name),
        Cmd::Host { args } => host::run_as_host(args, run),
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
        Cmd::DemoGateway(args) => demo::gateway(args.port),
        Cmd::Iii(args) => run_iii(args),
        Cmd::DemoEngine { port } => demo::engine(port),
        Cmd::Demo(args) if args.sessions > 1 => demo::workspace(args),
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

mod config_cmd;
mod demo;
mod docs;
mod hook;
pub mod hooks;
mod host;
mod one_session;
mod resume;
mod run;

use config_cmd::*;
use one_session::*;
pub use run::*;

/// `switchboard hook AGENT` (see `hook`): served before the argument parser.
pub fn hook_main() -> ExitCode {
    hook::main()
}
