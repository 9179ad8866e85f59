//! The one-session commands (`claude`, `acp`, `iii`, `gateway`): a profile from the flags, then
//! the workspace runner.

use super::*;

/// The profile a one-session subcommand describes: its cwd (default: here) and prompt.
pub(super) fn profile_of(common: &Common, kind: ProfileKind) -> SessionProfile {
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
pub(super) fn launch_context(common: &Common) -> LaunchContext {
    LaunchContext {
        claude: crate::config::load_config().unwrap_or_default().claude,
        record: !common.no_record,
        record_to: common.record.clone(),
        resume: None,
        history_shown: false,
    }
}

/// Run one built source (or say why it could not be built).
pub(super) fn run_one(spec: Result<SourceSpec, String>, common: &Common) -> ExitCode {
    match spec {
        Ok(spec) => run_sources(vec![spec], &RunOptions::of(common)),
        Err(e) => {
            eprintln!("switchboard: {e}");
            ExitCode::from(2)
        }
    }
}

pub(super) fn run_acp(args: AcpArgs) -> ExitCode {
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

pub(super) fn run_iii(args: IiiArgs) -> ExitCode {
    let common = Common {
        name: args.name.clone(),
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

pub(super) fn run_gateway(args: GatewayArgs) -> ExitCode {
    match gateway_config(&args) {
        Ok(cfg) => {
            let common = Common {
                name: args.name.clone(),
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
                // What `resume` starts it from again (the token by its file or variable).
                profile: Some(gateway_profile(&args, &common)),
            };
            run_sources(vec![spec], &RunOptions::of(&common))
        }
        Err(e) => {
            eprintln!("switchboard: {e}");
            ExitCode::from(2)
        }
    }
}

pub(super) fn gateway_config(
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
    let extra_tools = crate::backend::gateway::tools::extra::load(&crate::config::config_file())
        .map_err(|e| format!("config.toml [[gateway.tool]]: {e}"))?;
    let exec_env = crate::backend::gateway::tools::env::load(
        &crate::workspace::launch::gateway_env()?,
        args.token_env.as_deref(),
    )?;
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

/// The profile `switchboard gateway`'s flags describe, as a `[[session]]` would: kept in the
/// manifest so `resume` connects again (the token named by its file or variable, never held).
fn gateway_profile(args: &GatewayArgs, common: &Common) -> SessionProfile {
    use crate::backend::gateway::session::TokenSource;
    let mut p = profile_of(common, ProfileKind::Gateway);
    let token = match (&args.token_file, &args.token_env) {
        (Some(f), _) => TokenSource::File(std::path::absolute(f).unwrap_or_else(|_| f.clone())),
        (None, Some(v)) => TokenSource::Env(v.clone()),
        // (gateway_config refused it before.)
        (None, None) => TokenSource::Env(String::new()),
    };
    p.gateway = Some(crate::workspace::profile::GatewayProfile {
        url: args.url.clone(),
        workspace: args.workspace.clone(),
        root: std::path::absolute(&args.root).unwrap_or_else(|_| args.root.clone()),
        intention: args.intention.clone(),
        mode: args.mode.clone(),
        token,
    });
    p
}
