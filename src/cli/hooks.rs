//! `switchboard hooks install | uninstall | status`: switchboard's hooks in the settings of
//! the Claude Code and Codex CLIs people run in their own terminals, so their sessions and
//! permission prompts join the workspace (docs/adopt.md). The edits themselves are
//! `backend::adopt::install`'s (text in, text out); here is the IO: which files, showing the
//! change as a diff and asking first, writing it atomically, and remembering what the file
//! was so `uninstall` gives it back byte for byte.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use switchboard_adopt::HookAgent;
use switchboard_adopt::install;
use switchboard_tui::host::place;

/// The largest settings file read.
const SETTINGS_MAX: u64 = 4 << 20;

#[derive(Subcommand, Debug)]
pub enum HooksCmd {
    /// Add switchboard's hooks to Claude Code's and/or Codex's settings (shown as a diff, asked
    /// first). With neither --claude nor --codex: every CLI found.
    #[command(after_help = "Example:\n  switchboard hooks install --claude --codex")]
    Install(HooksArgs),
    /// Remove exactly what `install` added.
    #[command(after_help = "Example:\n  switchboard hooks uninstall --claude")]
    Uninstall(HooksArgs),
    /// Which CLIs have switchboard's hooks, where, running which binary, and which host gets
    /// their events.
    #[command(after_help = "Example:\n  switchboard hooks status --project .")]
    Status(StatusArgs),
}

#[derive(Args, Debug)]
pub struct HooksArgs {
    /// Claude Code: ~/.claude/settings.json ($CLAUDE_CONFIG_DIR/settings.json).
    #[arg(long)]
    pub claude: bool,
    /// Codex: $CODEX_HOME/hooks.json (default ~/.codex).
    #[arg(long)]
    pub codex: bool,
    /// A project's settings instead: DIR/.claude/settings.local.json, DIR/.codex/hooks.json.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Do not ask before writing.
    #[arg(long)]
    pub yes: bool,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Also look at a project's settings.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

pub(super) fn run(cmd: HooksCmd) -> ExitCode {
    match cmd {
        HooksCmd::Install(a) => edit(&a, true),
        HooksCmd::Uninstall(a) => edit(&a, false),
        HooksCmd::Status(a) => status(a.project.as_deref()),
    }
}

fn env_dir(k: &str) -> Option<PathBuf> {
    std::env::var_os(k)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

fn home() -> Option<PathBuf> {
    env_dir("HOME")
}

/// Where an agent's hooks live: its user settings, or a project's.
pub fn settings_path(agent: HookAgent, project: Option<&Path>) -> Option<PathBuf> {
    Some(match (agent, project) {
        (HookAgent::Claude, Some(p)) => p.join(".claude/settings.local.json"),
        (HookAgent::Codex, Some(p)) => p.join(".codex/hooks.json"),
        (HookAgent::Claude, None) => match env_dir("CLAUDE_CONFIG_DIR") {
            Some(d) => d.join("settings.json"),
            None => home()?.join(".claude/settings.json"),
        },
        (HookAgent::Codex, None) => codex_home()?.join("hooks.json"),
    })
}

fn codex_home() -> Option<PathBuf> {
    env_dir("CODEX_HOME").or_else(|| Some(home()?.join(".codex")))
}

/// Whether the CLI seems to be here: its program on PATH, or its settings directory.
fn found(agent: HookAgent) -> bool {
    let program = agent.name();
    let on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()));
    on_path
        || settings_path(agent, None)
            .and_then(|p| p.parent().map(Path::is_dir))
            .unwrap_or(false)
}

/// The settings files holding our hooks now, for the adopted-sessions source's first row.
pub fn installed_where() -> Vec<String> {
    HookAgent::ALL
        .into_iter()
        .filter_map(|a| {
            let path = settings_path(a, None)?;
            let text = read(&path).ok()??;
            (!install::installed(a, &text).ok()?.is_empty()).then(|| path.display().to_string())
        })
        .collect()
}

/// A settings file's text: `None` when there is none. Refused when it is not a regular file
/// or too large.
fn read(path: &Path) -> Result<Option<String>, String> {
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    // A link is read through (people keep dotfiles in a repository), a file is a file.
    let m = if m.file_type().is_symlink() {
        std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?
    } else {
        m
    };
    if !m.is_file() {
        return Err(format!("{}: not a regular file", path.display()));
    }
    if m.len() > SETTINGS_MAX {
        return Err(format!(
            "{}: larger than a settings file is read",
            path.display()
        ));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(SETTINGS_MAX).read_to_string(&mut text))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Some(text))
}

/// What `install` remembers of a file it changed: its text before, and a digest of the text
/// it wrote, so `uninstall` of an untouched file gives the old one back exactly.
#[derive(Serialize, Deserialize)]
struct Record {
    path: PathBuf,
    before: Option<String>,
    after_sha256: String,
}

fn sha(text: &str) -> String {
    crate::contain::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn record_path(settings: &Path) -> PathBuf {
    crate::paths::data_dir().join("hooks").join(format!(
        "{}.json",
        &sha(&settings.display().to_string())[..32]
    ))
}

fn load_record(settings: &Path) -> Option<Record> {
    let text = std::fs::read_to_string(record_path(settings)).ok()?;
    serde_json::from_str::<Record>(&text)
        .ok()
        .filter(|r| r.path == settings)
}

fn save_record(r: &Record) -> Result<(), String> {
    let path = record_path(&r.path);
    crate::paths::prepare_parent(&path).map_err(|e| e.to_string())?;
    let text = serde_json::to_string(r).map_err(|e| e.to_string())?;
    write_atomic(&path, &text)
}

/// Write `text` over `path` as the rules files are written (`config::write_atomic`).
fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    crate::config::write_atomic(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn say(text: &str) {
    println!("{}", crate::core::text::neutralize(text));
}

fn fail(text: &str) -> ExitCode {
    let _ = writeln!(
        std::io::stderr(),
        "switchboard: {}",
        crate::core::text::neutralize(text)
    );
    ExitCode::from(2)
}

/// The CLIs a command acts on: the flags', else every one found.
fn targets(a: &HooksArgs) -> Vec<HookAgent> {
    match (a.claude, a.codex) {
        (false, false) => HookAgent::ALL.into_iter().filter(|g| found(*g)).collect(),
        (c, x) => HookAgent::ALL
            .into_iter()
            .filter(|g| (*g == HookAgent::Claude && c) || (*g == HookAgent::Codex && x))
            .collect(),
    }
}

/// This binary, shell-quoted for the hook command.
fn this_binary() -> Result<String, String> {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| format!("cannot tell where this binary is: {e}"))?;
    let s = exe
        .to_str()
        .ok_or("this binary's path is not UTF-8: the hook command could not name it")?;
    shlex::try_quote(s)
        .map(|q| q.into_owned())
        .map_err(|e| format!("this binary's path cannot be quoted for a shell: {e}"))
}

fn edit(a: &HooksArgs, installing: bool) -> ExitCode {
    let agents = targets(a);
    if agents.is_empty() {
        return fail(
            "found neither Claude Code nor Codex (no `claude` or `codex` on PATH, no ~/.claude or \
             ~/.codex): name one with --claude or --codex",
        );
    }
    let bin = match this_binary() {
        Ok(b) => b,
        Err(e) => return fail(&e),
    };
    let mut status = ExitCode::SUCCESS;
    for agent in agents {
        let Some(path) = settings_path(agent, a.project.as_deref()) else {
            status = fail(&format!(
                "{}: no home directory to find its settings in",
                agent.title()
            ));
            continue;
        };
        if let Err(e) = edit_one(agent, &path, &bin, a.yes, installing) {
            status = fail(&e);
        }
    }
    status
}

fn edit_one(
    agent: HookAgent,
    path: &Path,
    bin: &str,
    yes: bool,
    installing: bool,
) -> Result<(), String> {
    let before = read(path)?;
    let after: Option<String> = if installing {
        let cmd = install::command(bin, agent);
        Some(
            install::install(agent, before.as_deref(), &cmd)
                .map_err(|e| format!("{}: {e}", path.display()))?,
        )
    } else {
        let Some(text) = &before else {
            say(&format!(
                "{}: no {} hooks of switchboard (no such file)",
                path.display(),
                agent.title()
            ));
            return Ok(());
        };
        match load_record(path) {
            // Nothing changed since our install: exactly the file from before (or none).
            Some(r) if r.after_sha256 == sha(text) => r.before,
            _ => Some(
                install::uninstall(agent, text).map_err(|e| format!("{}: {e}", path.display()))?,
            ),
        }
    };
    if after == before {
        say(&format!(
            "{}: {} hooks of switchboard are {}; nothing to change",
            path.display(),
            agent.title(),
            if installing {
                "there already"
            } else {
                "not there"
            }
        ));
        if installing {
            notes(agent);
        }
        return Ok(());
    }
    let old = before.as_deref().unwrap_or("");
    let new = after.as_deref().unwrap_or("");
    let diff = crate::core::diff::Diff::unified(&path.display().to_string(), old, new, 3);
    println!("{}", crate::core::text::neutralize(&diff.to_text()));
    if after.is_none() {
        say("(the file is removed: install made it)");
    }
    if !yes
        && !ask(&format!(
            "{} {}? [y/N] ",
            if installing {
                "Write this to"
            } else {
                "Remove them from"
            },
            path.display()
        ))?
    {
        say("nothing was changed");
        return Ok(());
    }
    match &after {
        Some(text) => {
            if let Some(dir) = path.parent()
                && !dir.exists()
            {
                crate::paths::create_dirs_0700(dir)
                    .map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            write_atomic(path, text)?;
        }
        None => std::fs::remove_file(path).map_err(|e| format!("{}: {e}", path.display()))?,
    }
    if installing {
        // Kept once, from before our first install: a second install (a moved binary) keeps
        // the original.
        let before = match load_record(path) {
            Some(r) if before.as_deref().is_some_and(|b| r.after_sha256 == sha(b)) => r.before,
            _ => before,
        };
        save_record(&Record {
            path: path.to_path_buf(),
            before,
            after_sha256: sha(after.as_deref().unwrap_or("")),
        })?;
        say(&format!(
            "{}: {} hooks installed",
            path.display(),
            agent.title()
        ));
        notes(agent);
    } else {
        let _ = std::fs::remove_file(record_path(path));
        say(&format!(
            "{}: {} hooks removed",
            path.display(),
            agent.title()
        ));
    }
    Ok(())
}

/// What a person must know after installing for `agent`.
fn notes(agent: HookAgent) {
    match agent {
        HookAgent::Claude => say(
            "  Claude asks for permission (and so shows cards here) only in its manual \
             permission mode (\"defaultMode\": \"default\"; Shift-Tab in Claude switches); in \
             auto mode its classifier decides and switchboard sees no prompt.",
        ),
        HookAgent::Codex => say(
            "  Codex reviews new hooks itself: the next time it starts it shows \"Hooks need \
             review\"; trust them there (or with /hooks). switchboard never writes Codex's \
             trust hashes.",
        ),
    }
}

fn ask(question: &str) -> Result<bool, String> {
    if !std::io::stdin().is_terminal() {
        return Err("not asked: standard input is not a terminal (pass --yes to write)".into());
    }
    print!("{question}");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}

fn status(project: Option<&Path>) -> ExitCode {
    let this = this_binary().ok();
    for agent in HookAgent::ALL {
        let mut places = vec![settings_path(agent, None)];
        if project.is_some() {
            places.push(settings_path(agent, project));
        }
        for path in places.into_iter().flatten() {
            let line = match read(&path) {
                Err(e) => format!("unreadable: {e}"),
                Ok(None) => "no settings file".to_string(),
                Ok(Some(text)) => match install::installed(agent, &text) {
                    Err(e) => format!("not valid JSON ({e}): hooks cannot run from it"),
                    Ok(v) if v.is_empty() => "no switchboard hooks".to_string(),
                    Ok(v) => {
                        let bins: std::collections::BTreeSet<String> =
                            v.iter().filter_map(|(_, b)| b.clone()).collect();
                        let bin_notes: Vec<String> = bins
                            .iter()
                            .map(|b| {
                                let mark = if !Path::new(b).is_file() {
                                    " (missing: the hooks do nothing)"
                                } else if this.as_deref().map(|t| t.trim_matches('\''))
                                    == Some(b.as_str())
                                {
                                    " (this binary)"
                                } else {
                                    ""
                                };
                                format!("{b}{mark}")
                            })
                            .collect();
                        let mut l = format!(
                            "hooks for {} events, running {}",
                            v.len(),
                            bin_notes.join(", ")
                        );
                        if agent == HookAgent::Codex {
                            l.push_str(&codex_trust(&path));
                        }
                        l
                    }
                },
            };
            say(&format!("{:<12} {}: {line}", agent.title(), path.display()));
        }
    }
    say(&hosts_line());
    ExitCode::SUCCESS
}

/// Whether Codex has reviewed our hooks: trust entries for them in its config.toml.
fn codex_trust(hooks_json: &Path) -> String {
    let Some(cfg) = codex_home().map(|h| h.join("config.toml")) else {
        return String::new();
    };
    let text = read(&cfg).ok().flatten().unwrap_or_default();
    let key = format!("\"{}:permission_request:", hooks_json.display());
    if text.contains(&key) {
        "; reviewed in Codex (a changed hook needs review again)".into()
    } else {
        "; not yet reviewed in Codex: it asks when it next starts (\"Hooks need review\")".into()
    }
}

/// Which host hook events go to now.
pub fn hosts_line() -> String {
    let Some(dir) = place::existing_runtime_dir() else {
        return "hosts: none running: every hook falls through to its CLI's own prompt (start \
                one: `switchboard up`)"
            .into();
    };
    let live: Vec<String> = place::names(&dir)
        .into_iter()
        .filter(|n| place::running(&dir, n))
        .collect();
    let named = super::hook::configured_host();
    match (live.as_slice(), named) {
        ([], _) => "hosts: none running: every hook falls through to its CLI's own prompt \
                    (start one: `switchboard up`)"
            .into(),
        ([one], _) => format!("hosts: {one} is running and gets every hook event"),
        (many, Some(n)) if many.contains(&n) => format!(
            "hosts: {} are running; [hooks] host = \"{n}\" gets every hook event",
            many.join(", ")
        ),
        (many, Some(n)) => format!(
            "hosts: {} are running, but [hooks] host names {n}, which is not: hook events go \
             nowhere (each CLI asks in its own terminal)",
            many.join(", ")
        ),
        (many, None) => format!(
            "hosts: {} are running and config.toml names none ([hooks] host = \"NAME\"): hook \
             events go nowhere (each CLI asks in its own terminal)",
            many.join(", ")
        ),
    }
}
