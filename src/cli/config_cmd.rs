//! `switchboard config check`, and reading the config file for the other commands.

use super::*;

pub(super) fn rules_file(cfg: &crate::config::Config) -> PathBuf {
    cfg.rules_file
        .clone()
        .unwrap_or_else(crate::config::default_rules_file)
}

/// The config file in use: `--config FILE` (which must exist) or config.toml (optional).
pub(super) fn read_config(
    flag: Option<&Path>,
) -> Result<(PathBuf, crate::config::Config, String), String> {
    let path = flag.map_or_else(crate::config::config_file, Path::to_path_buf);
    let (cfg, text) =
        crate::config::load_config_from(&path, flag.is_some()).map_err(|e| e.to_string())?;
    Ok((path, cfg, text))
}

/// Every `[[session]]` profile of the file, checked.
pub(super) fn check_profiles(
    path: &Path,
    cfg: &crate::config::Config,
    text: &str,
) -> crate::workspace::profile::Checked {
    let resolve = crate::workspace::profile::Resolve::for_file(path);
    crate::workspace::profile::check(path, text, &cfg.session, &resolve)
}

pub(super) fn config_check(flag: Option<PathBuf>) -> ExitCode {
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
    if let Some(h) = &cfg.hooks.host
        && let Err(e) = switchboard_tui::host::place::check_name(h)
    {
        println!(
            "{}{}: hooks.host: {e}",
            path.display(),
            at(Some("hooks"), "host")
        );
        bad = true;
    }
    for d in &cfg.hooks.transcript_dirs {
        if !d.is_absolute() {
            println!(
                "{}{}: hooks.transcript_dirs: {} is not an absolute path",
                path.display(),
                at(Some("hooks"), "transcript_dirs"),
                crate::core::text::visible_line(&d.display().to_string())
            );
            bad = true;
        }
    }
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
    for (action, key) in &cfg.keys.actions {
        if let Err(e) = crate::core::keymap::parse(action, key) {
            println!("{}{}: {e}", path.display(), at(Some("keys"), action));
            keys_bad = true;
        }
    }
    for (action, e) in crate::core::bindings::collisions(&cfg.keys.actions) {
        println!("{}{}: {e}", path.display(), at(Some("keys"), &action));
        keys_bad = true;
    }
    if !keys_bad && let Err(e) = crate::core::keymap::build(&cfg.keys.actions) {
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
