//! Running a workspace: `up`, the options every TUI command shares, loading the config and
//! rules, and starting the app with its sources.

use super::*;

/// `switchboard up`: check every profile, pick the named ones, build them all, and only then
/// start anything.
pub(super) fn up(args: UpArgs) -> ExitCode {
    let host = super::up_host(&args);
    // The workspace of this name ended without being stopped: ask before starting afresh.
    if let Some(name) = &host
        && super::host::hosting().is_none()
        && let Some(choice) = super::resume::offer(name, &args)
    {
        return choice;
    }
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
    if checked.profiles.is_empty() && host.is_none() {
        return fail(&format!(
            "{}: no [[session]] profiles to start (see `switchboard config check`); under a              host (without --no-host) `up` opens an empty workspace that sessions in their own              terminals join through their hooks",
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
        history_shown: false,
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
            // (The flag: config.toml may be missing for an empty workspace.)
            config: args.config.clone(),
            launcher: Some(launcher),
            host,
            record: !args.no_record,
            resume: None,
        },
    )
}

/// Everything the TUI takes from config.toml, the rules files and `--theme`.
pub(super) struct Loaded {
    keymap: std::collections::HashMap<char, char>,
    settings: Settings,
    theme: Theme,
    rules: crate::core::rules::Rules,
    rules_file: PathBuf,
    notify: Option<String>,
    hooks: crate::config::HooksDefaults,
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
    /// Run under this host (`--name`; `up` by default): this terminal attaches to it.
    pub host: Option<String>,
    /// Record the sessions (the adopted ones too).
    pub record: bool,
    /// `resume`: the crashed workspace these sessions bring back.
    pub resume: Option<super::resume::Resuming>,
}

impl RunOptions {
    pub fn of(common: &Common) -> RunOptions {
        RunOptions {
            no_bell: common.no_bell,
            theme: common.theme.clone(),
            rules: common.rules.clone(),
            config: None,
            launcher: None,
            host: common.name.clone(),
            record: !common.no_record,
            resume: None,
        }
    }
}

/// `--theme`, else the config's theme, else dark; `NO_COLOR` drops the colours.
pub(super) fn pick_theme(flag: Option<String>) -> Result<Theme, String> {
    let cfg = crate::config::load_config().map_err(|e| e.to_string())?;
    theme_of(flag, &cfg)
}

pub(super) fn theme_of(flag: Option<String>, cfg: &crate::config::Config) -> Result<Theme, String> {
    let mut theme = match flag.or(cfg.theme.clone()) {
        Some(t) => Theme::load(&t, &crate::config::themes_dir())?,
        None => Theme::dark(),
    };
    if Theme::no_color_requested() {
        theme = theme.without_color();
    }
    Ok(theme)
}

pub(super) fn load_setup(opts: &RunOptions) -> Result<Loaded, String> {
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
    let keymap = crate::core::keymap::build(&cfg.keys.actions)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Loaded {
        keymap,
        settings: Settings {
            bell: !opts.no_bell && cfg.bell.unwrap_or(true),
            cancel_grace_ms: cfg
                .cancel_grace_secs
                .map_or(crate::core::update::cancel::DEFAULT_GRACE_MS, |s| {
                    s.saturating_mul(1000)
                }),
            settle_ms: cfg
                .keys
                .settle_ms
                .unwrap_or(crate::core::state::DEFAULT_SETTLE_MS),
        },
        theme,
        rules,
        rules_file: rf,
        notify: cfg.notify_command.clone(),
        hooks: cfg.hooks.clone(),
    })
}

/// Start the TUI over `specs`: one workspace, each spec a session with its own rules (added to
/// the global ones for that session only). A workspace (`up`, a demo of several sessions)
/// writes a manifest beside the recordings.
pub fn run_sources(specs: Vec<SourceSpec>, opts: &RunOptions) -> ExitCode {
    // Empty is a workspace only under a host: sessions in their own terminals join it.
    if specs.is_empty() && opts.host.is_none() {
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
    if let Some(name) = super::host::hosting() {
        return serve_sources(name, specs, setup, opts);
    }
    // Checked before any agent starts: without a terminal nothing could answer it.
    if let Err(e) = crate::app::term::need_terminal() {
        eprintln!("switchboard: {e}");
        return ExitCode::from(2);
    }
    if let Some(name) = &opts.host {
        // Everything checked: the host starts the same command line and this terminal
        // attaches to it. Nothing built here has started.
        drop(specs);
        return super::host::front(name);
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
        let app = start_workspace(specs, setup, launcher, None, Workspace::of(opts, None));
        app::term::run(app).await
    });
    match result {
        Ok(app) => {
            for line in left_behind(&app) {
                say(&line);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            say(&format!("terminal error: {e}"));
            ExitCode::from(1)
        }
    }
}

/// Not `eprintln!`: it panics when stderr is a terminal that went away.
fn say(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "switchboard: {text}");
}

/// What a finished workspace leaves: its recordings (or why one stopped early) and manifest.
fn left_behind(app: &App) -> Vec<String> {
    let mut out = Vec::new();
    for s in &app.state.sessions {
        match (&s.session.recording, &s.session.recording_failed) {
            (Some(r), Some(why)) => out.push(format!(
                "recording incomplete: {} stopped early ({})",
                crate::core::text::neutralize(r),
                crate::core::text::sanitize(why)
            )),
            (Some(r), None) => out.push(format!(
                "recording written to {}",
                crate::core::text::neutralize(r)
            )),
            (None, _) => {}
        }
    }
    if let Some(m) = app.manifest_path() {
        out.push(format!("workspace manifest written to {}", m.display()));
    }
    out
}

/// The host process (`--name`): the same workspace, served to clients instead of drawn on a
/// terminal (`switchboard_tui::host`), until it is stopped.
fn serve_sources(name: &str, specs: Vec<SourceSpec>, setup: Loaded, opts: &RunOptions) -> ExitCode {
    let launcher = opts.launcher.clone();
    use switchboard_tui::host::{self, place};
    let _log = crate::logging::init();
    raise_descriptor_limit();
    let dir = match place::runtime_dir() {
        Ok(d) => d,
        Err(e) => {
            say(&e);
            return ExitCode::from(2);
        }
    };
    let lock = match place::lock_as_host(&dir, name) {
        Ok(Some(l)) => l,
        Ok(None) => {
            say(&format!("a host named {name} is already running"));
            return ExitCode::from(2);
        }
        Err(e) => {
            say(&e);
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            say(&format!("cannot start the runtime: {e}"));
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async {
        // Listening before any agent starts: a socket that cannot be made (a path too long
        // for one) leaves no agent to stop and no gate to answer.
        let (placed, listener) = place::Placed::bind(dir, name, lock)?;
        // Every host takes hook events: sessions started in their own terminals join it.
        let adopt = crate::backend::adopt::source::Config {
            roots: crate::backend::adopt::tail::Roots::standard(&setup.hooks.transcript_dirs),
            record: opts.record,
            installed: super::hooks::installed_where(),
        };
        let app = start_workspace(
            specs,
            setup,
            launcher,
            Some(adopt),
            Workspace::of(opts, Some(name)),
        );
        host::serve(app, placed, listener, left_behind).await
    });
    match result {
        Ok(app) => {
            for line in left_behind(&app) {
                say(&line);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            say(&format!("host {name}: {e}"));
            ExitCode::from(1)
        }
    }
}

/// Every hook waiting on a card holds a connection: a host may use as many descriptors as
/// the system lets it (the soft limit raised to the hard one), so a burst of waiting hooks
/// does not starve its listener.
fn raise_descriptor_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit on a valid struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// What the new-session dialog can start: every profile of the config, built as `up` builds.
#[derive(Clone, Debug)]
pub struct Launchable {
    pub profiles: Vec<SessionProfile>,
    pub cx: LaunchContext,
}

/// What a workspace is besides its sessions: its host's name, the config it was started
/// with, and the crashed workspace it brings back.
pub(super) struct Workspace<'a> {
    pub host: Option<&'a str>,
    pub config: Option<&'a Path>,
    /// `--rules` files added to the global rules (kept in the manifest for `resume`).
    pub rules: &'a [PathBuf],
    pub resume: Option<&'a super::resume::Resuming>,
}

impl<'a> Workspace<'a> {
    fn of(opts: &'a RunOptions, host: Option<&'a str>) -> Workspace<'a> {
        Workspace {
            host,
            config: opts.config.as_deref(),
            rules: &opts.rules,
            resume: opts.resume.as_ref(),
        }
    }
}

/// Open the workspace: the first source as session one, the others after it, each with its
/// own rules; the dialog's launcher and profiles. Must run inside the runtime.
pub(super) fn start_workspace(
    specs: Vec<SourceSpec>,
    setup: Loaded,
    launcher: Option<Launchable>,
    adopt: Option<crate::backend::adopt::source::Config>,
    ws: Workspace<'_>,
) -> App {
    let Workspace {
        host,
        config,
        rules,
        resume,
    } = ws;
    // A workspace (`up`, a demo of several sessions, anything run under a host) ties its
    // recordings together in a manifest, which is also what `resume` brings back after a
    // crash; a one-session subcommand in a terminal writes just its recording, as before.
    let manifest = (launcher.is_some() || specs.len() > 1 || host.is_some())
        && (specs.iter().any(|s| s.recording.is_some())
            || adopt.as_ref().is_some_and(|a| a.record));
    let saved: Vec<Option<serde_json::Value>> = specs
        .iter()
        .map(|s| s.profile.as_ref().map(crate::workspace::saved::to_json))
        .collect();
    let mut specs = specs.into_iter();
    let mut app = match specs.next() {
        Some(first) => {
            let mut app = App::start(first.backend, setup.settings, setup.theme);
            app.state.sessions[0].tree.nodes[0].name = first.name;
            app.state.sessions[0].profile = first.profile.map(|p| p.name);
            // Known before the backend opens it: a recording that cannot be created is still
            // named in the exit message.
            app.state.sessions[0].session.recording =
                first.recording.map(|r| r.display().to_string());
            app.state.rules = setup.rules;
            for r in first.rules.list {
                app.state
                    .rules
                    .add_scoped(r.spec, r.origin, Some(app.first_session()));
            }
            if let Some(adopt) = adopt {
                app.adopt = Some(Box::new(move || adopted_sessions(adopt)));
            }
            app
        }
        None => {
            // An empty workspace (`up` with no profiles, under a host): the adopted-sessions
            // source is its first session.
            let adopt = adopt.expect("an empty workspace only under a host");
            let (name, backend, sink) = adopted_sessions(adopt);
            let mut app = App::start(backend, setup.settings, setup.theme);
            app.set_hook_sink(sink);
            app.state.sessions[0].tree.nodes[0].name = name;
            app.state.rules = setup.rules;
            app
        }
    };
    app.rule_file = Some(app::RuleFile {
        append: |path, spec| crate::config::append_rule(path, spec).map_err(|e| e.to_string()),
        remove: |path, spec| crate::config::remove_rule(path, spec).map_err(|e| e.to_string()),
    });
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
    // Session `k` of the specs is app session `k` (the first is FIRST, the rest in order).
    let ids: Vec<crate::core::state::SessionId> = app
        .state
        .sessions
        .iter()
        .map(|s| s.id)
        .take(saved.len())
        .collect();
    for (id, p) in ids.iter().zip(saved) {
        if let Some(p) = p {
            app.remember_profile(*id, p);
        }
    }
    if let Some(r) = resume {
        super::resume::bring_back(&mut app, &ids, r, host, config, rules);
    } else if manifest {
        let path = crate::paths::new_manifest_path();
        match crate::workspace::manifest::ManifestSink::create(&path, crate::record::now_ms()) {
            Ok(w) => {
                if let Err(e) = w.describe(host, config, rules) {
                    app.state.status_line = Some(format!("workspace manifest: {e}"));
                }
                app.observe(Box::new(w))
            }
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

/// The adopted-sessions source of a host: its session's name, the backend, and where the
/// host puts hook events for it.
fn adopted_sessions(
    config: crate::backend::adopt::source::Config,
) -> (
    String,
    Box<dyn crate::backend::Backend>,
    crate::backend::hooks::HookSink,
) {
    let (sink, queue) = crate::backend::hooks::HookSink::channel();
    let source = crate::backend::adopt::source::Source::new(queue, config);
    (
        crate::backend::adopt::source::NAME.to_string(),
        Box::new(source),
        sink,
    )
}

/// Build the source the new-session dialog (or a restart) asked for.
pub(super) fn launch_requested(
    l: &Launchable,
    req: &crate::core::msg::NewSession,
) -> Result<app::Launched, String> {
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
            let spec = launch::launch(&p, &cx)?;
            // (A restart's `--resume` is not kept: the agent's id is, once it says it.)
            (spec, Some(crate::workspace::saved::to_json(&p)))
        }
        (None, Some(line)) => {
            let cwd = if req.cwd.trim().is_empty() {
                std::env::current_dir().map_err(|e| e.to_string())?
            } else {
                PathBuf::from(req.cwd.trim())
            };
            let spec = launch::adhoc_acp(line, &cwd, prompt, &l.cx)?;
            let saved = spec.profile.as_ref().map(crate::workspace::saved::to_json);
            (spec, saved)
        }
        (None, None) => return Err("choose a profile or type a command line".into()),
    };
    let (spec, profile) = spec;
    Ok(app::Launched {
        name: spec.name,
        backend: spec.backend,
        rules: spec.rules,
        profile,
    })
}
