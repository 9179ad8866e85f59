//! `switchboard resume [NAME | MANIFEST]`: a workspace whose host stopped without being
//! stopped (a crash, a kill, a reboot) comes back under its name, with its rules: each session
//! resumes its own conversation by its agent's id (Claude `--resume`, ACP `session/load`;
//! iii and gateway reconnect), its transcript holds what was recorded before, a boundary, then
//! the resumed session; gates that waited at the crash are shown as not answered.

use std::sync::{Arc, Mutex};

use super::*;
use crate::workspace::resume::{self as plan, Found, Plan};
use crate::workspace::{history, manifest};

#[derive(Args, Debug)]
pub struct ResumeArgs {
    /// The workspace: its name, or its manifest's path (default: the newest that ended
    /// unexpectedly).
    pub target: Option<String>,
    /// Run in this terminal, not under a host.
    #[arg(long, conflicts_with = "serve")]
    pub no_host: bool,
    /// Be the host in this process, without a terminal (a systemd unit runs this; clients
    /// attach with `switchboard attach NAME`).
    #[arg(long)]
    pub serve: bool,
    /// Read settings and rules from this file (default: the one the workspace was started
    /// with).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Do not ring the terminal bell when a gate opens.
    #[arg(long)]
    pub no_bell: bool,
    /// Do not record the resumed sessions.
    #[arg(long)]
    pub no_record: bool,
    /// Theme: dark, light, high-contrast, a user theme name or a TOML file.
    #[arg(long)]
    pub theme: Option<String>,
}

/// A crashed workspace being brought back, as the run options carry it.
#[derive(Clone, Debug)]
pub struct Resuming {
    pub plan: Plan,
    /// The workspace's lock, taken by the process that runs it (none in a front that only
    /// starts the host).
    lock: Arc<Mutex<Option<std::fs::File>>>,
}

/// The host a `resume` runs under: the workspace's own name (`workspace` when it had none);
/// none with `--no-host`.
pub(super) fn host_name(a: &ResumeArgs) -> Option<String> {
    if a.no_host {
        return None;
    }
    let named = match plan::find(a.target.as_deref()) {
        Ok(Found::Crashed { manifest, .. }) => manifest.name,
        _ => None,
    };
    Some(
        named
            .or_else(|| {
                a.target
                    .clone()
                    .filter(|t| !t.contains('/') && !t.ends_with(".json"))
            })
            .unwrap_or_else(|| "workspace".into()),
    )
}

pub(super) fn resume(args: ResumeArgs) -> ExitCode {
    let fail = |e: &str, code: u8| {
        eprintln!("switchboard: {}", crate::core::text::neutralize(e));
        ExitCode::from(code)
    };
    let (path, m) = match plan::find(args.target.as_deref()) {
        Err(e) => return fail(&e, 2),
        Ok(Found::Running { path }) => {
            let name = args.target.clone().unwrap_or_default();
            return fail(
                &format!(
                    "{} is still running{}",
                    path.display(),
                    if name.is_empty() || name.contains('/') {
                        String::new()
                    } else {
                        format!(": `switchboard attach {name}` attaches to it")
                    }
                ),
                2,
            );
        }
        Ok(Found::Closed { path, closed_ms }) => {
            // Nothing to do is not a failure: a unit that resumes at boot after a clean
            // shutdown succeeds.
            println!(
                "switchboard: the workspace of {} was stopped cleanly at {}: nothing to resume",
                path.display(),
                plan::when(closed_ms)
            );
            return ExitCode::SUCCESS;
        }
        Ok(Found::Crashed { path, manifest }) => (path, *manifest),
    };
    let host = host_name(&args);
    if args.serve
        && super::host::hosting().is_none()
        && let Err(e) = super::host::serve_here(host.as_deref().unwrap_or("workspace"))
    {
        return fail(&e, 2);
    }
    let config = args
        .config
        .clone()
        .or_else(|| m.config.as_ref().map(PathBuf::from));
    let (cfg_path, cfg, text) = match read_config(config.as_deref()) {
        Ok(c) => c,
        Err(e) => return fail(&e, 2),
    };
    let checked = check_profiles(&cfg_path, &cfg, &text);
    // The `--rules` files it was started with, again; one since removed is said, not fatal
    // (without it more is asked, never less).
    let mut rules = Vec::new();
    for r in m.rules.iter().map(PathBuf::from) {
        if r.is_file() {
            rules.push(r);
        } else {
            eprintln!(
                "switchboard: the rules file {} it was started with is gone: resumed without it",
                crate::core::text::visible_line(&r.display().to_string())
            );
        }
    }
    let planned = m.clone();
    let plan = plan::plan(&path, m, &checked.profiles);
    if plan.sessions.is_empty() {
        return fail(
            &format!(
                "{}: no session of it can be started again{}",
                path.display(),
                plan.left
                    .iter()
                    .map(|l| format!("\n  {l}"))
                    .collect::<String>()
            ),
            1,
        );
    }
    // The lock is taken where the workspace runs: in the host, or in this terminal.
    let runs_here = host.is_none() || super::host::hosting().is_some();
    let lock = if runs_here {
        match manifest::lock::hold(&path) {
            Ok(Some(l)) => Some(l),
            Ok(None) => return fail(&format!("{} is being resumed already", path.display()), 2),
            Err(e) => return fail(&e, 2),
        }
    } else {
        None
    };
    // Read before the lock was ours: another resume may have run in between.
    if lock.is_some()
        && let Err(e) = plan::still_as_planned(&path, &planned)
    {
        return fail(&e, 2);
    }
    // The resume goes into the manifest before any agent starts again: a kill from here on
    // leaves a manifest that says it was resumed. (Its sessions and recordings are added as
    // they open, `bring_back`.) Not written, nothing starts.
    let mut plan = plan;
    if lock.is_some() {
        let now = crate::record::now_ms();
        match manifest::ManifestWriter::reopen(
            &path,
            plan.manifest.clone(),
            Vec::new(),
            plan.stopped_ms,
            now,
        ) {
            Ok(w) => {
                plan.manifest = w.manifest().clone();
                plan.resumed_ms = Some(now);
            }
            Err(e) => return fail(&e, 2),
        }
    }
    let mut specs = Vec::new();
    for b in &plan.sessions {
        let cx = LaunchContext {
            claude: cfg.claude.clone(),
            record: !args.no_record,
            record_to: None,
            resume: b.agent_session.clone(),
            history_shown: !b.history.is_empty(),
        };
        match launch::launch(&b.profile, &cx) {
            Ok(s) => specs.push(s),
            Err(e) => {
                return fail(
                    &format!("{}: session {:?}: {e}", path.display(), b.profile.name),
                    2,
                );
            }
        }
    }
    let launcher = Launchable {
        profiles: checked.profiles.clone(),
        cx: LaunchContext {
            claude: cfg.claude.clone(),
            record: !args.no_record,
            ..LaunchContext::default()
        },
    };
    run_sources(
        specs,
        &RunOptions {
            no_bell: args.no_bell,
            theme: args.theme,
            rules,
            config,
            launcher: Some(launcher),
            host,
            record: !args.no_record,
            resume: Some(Resuming {
                plan,
                lock: Arc::new(Mutex::new(lock)),
            }),
        },
    )
}

/// Put the history under each resumed session (app session `ids[k]` is `r.plan.sessions[k]`),
/// say what did not come back, and reopen the manifest where it left off.
pub(super) fn bring_back(
    app: &mut App,
    ids: &[crate::core::state::SessionId],
    r: &Resuming,
    host: Option<&str>,
    config: Option<&Path>,
    rules: &[PathBuf],
) {
    let now = crate::record::now_ms();
    let p = &r.plan;
    // Every recording the crash cut off ends with where it stopped: replay draws the boundary
    // from it, validate reports what waited then as left by the crash.
    for s in p.manifest.sessions.iter().filter(|s| s.closed_ms.is_none()) {
        if let Some(last) = plan::recordings(&p.path, s).last()
            && let Err(e) = crate::record::append_host_stopped(last, p.stopped_ms, now)
        {
            app.state.push_log(format!(
                "resume: {}: no host-stopped note: {e}",
                last.display()
            ));
        }
    }
    for (id, b) in ids.iter().zip(&p.sessions) {
        let Some(kind) = app.state.session_by_id(*id).map(|s| s.session.backend) else {
            continue;
        };
        // Its "this session" rules, before any of its gates is read (they are events the
        // loop has not taken yet). The manifest keeps them under the session's entry.
        let had = app.state.rules.list.len();
        for spec in &b.rules {
            app.state.rules.add_scoped(
                spec.clone(),
                crate::core::rules::Origin::Session,
                Some(*id),
            );
        }
        let back = app.state.rules.list.len() - had;
        if back > 0 {
            app.state.push_log(format!(
                "resume: {}: {back} rule(s) made for this session came back",
                crate::core::text::visible_line(&b.profile.name),
            ));
        }
        if kind != crate::core::BackendKind::Iii {
            let fed = history::feed(kind, &b.profile.name, &b.history, p.stopped_ms, now);
            history::splice(app, *id, fed);
        }
        let note = match (kind, &b.agent_session) {
            (crate::core::BackendKind::Iii, _) => {
                Some("the engine's sessions and held calls come back as it reconnects".to_string())
            }
            (crate::core::BackendKind::Gateway, _) => None,
            (_, None) => Some(
                "its agent had not said its session id before the host stopped: a new \
                 conversation starts"
                    .to_string(),
            ),
            (_, Some(_)) => None,
        };
        if let Some(text) = note {
            app.apply(crate::core::Msg::Backend {
                session: *id,
                at_ms: now,
                event: crate::core::msg::BackendEvent::Item {
                    node: None,
                    op: crate::core::transcript::ItemOp::Push(
                        crate::core::transcript::ItemKind::System {
                            label: "resumed".into(),
                            text,
                        },
                    ),
                },
            });
        }
    }
    for l in &p.left {
        app.state.push_log(format!("resume: {l}"));
    }
    let aliases = ids
        .iter()
        .zip(&p.sessions)
        .map(|(id, b)| (id.0, b.mid))
        .collect();
    let lock = r.lock.lock().unwrap_or_else(|e| e.into_inner()).take();
    let Some(lock) = lock else {
        app.state.status_line = Some("resumed without the workspace's lock: not recorded".into());
        return;
    };
    match manifest::ManifestSink::reopen(
        &p.path,
        p.manifest.clone(),
        aliases,
        p.stopped_ms,
        // The resume this run wrote before its agents started: not a second one.
        p.resumed_ms.unwrap_or(now),
        lock,
    ) {
        Ok(w) => {
            let _ = w.describe(host, config, rules);
            app.observe(Box::new(w));
        }
        Err(e) => app.state.status_line = Some(format!("workspace manifest: {e}")),
    }
    app.state.status_line = Some(format!(
        "resumed {} session(s) of the workspace that stopped at {}{}",
        p.sessions.len(),
        plan::when(p.stopped_ms),
        if p.left.is_empty() {
            String::new()
        } else {
            format!("; {} did not come back (see the log)", p.left.len())
        }
    ));
}

/// `up` of a workspace whose last run ended without being stopped: "work ended unexpectedly
/// at 14:02: 3 sessions; r resumes them, n starts fresh". `Some`: resumed (or given up);
/// `None`: start fresh. Without a terminal to ask on, nothing is asked (`up` needs one).
pub(super) fn offer(name: &str, args: &UpArgs) -> Option<ExitCode> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return None;
    }
    let (path, m) = plan::newest_named(name)?;
    if m.closed_ms.is_some() || manifest::lock::running(&path) {
        return None;
    }
    let open = m.sessions.iter().filter(|s| s.closed_ms.is_none()).count();
    let stopped = plan::plan(&path, m, &[]).stopped_ms;
    let mut err = std::io::stderr();
    let _ = write!(
        err,
        "switchboard: {name} ended unexpectedly at {}: {open} session(s); r resumes them, n starts fresh [r/n] ",
        plan::when(stopped)
    );
    let _ = err.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return Some(ExitCode::from(2));
    }
    match line.trim() {
        "r" | "R" => {
            let mut argv: Vec<std::ffi::OsString> = vec!["resume".into(), name.into()];
            if let Some(c) = &args.config {
                argv.push("--config".into());
                argv.push(c.into());
            }
            for (on, flag) in [(args.no_bell, "--no-bell"), (args.no_record, "--no-record")] {
                if on {
                    argv.push(flag.into());
                }
            }
            if let Some(t) = &args.theme {
                argv.push("--theme".into());
                argv.push(t.into());
            }
            Some(super::host::front_with(name, argv))
        }
        "n" | "N" => None,
        _ => {
            eprintln!("switchboard: neither r nor n: nothing started");
            Some(ExitCode::from(2))
        }
    }
}
