//! `--name`, `attach`, `ls`, `stop`: the command line of the workspace host.
//!
//! A command given `--name NAME` starts `switchboard host <the same command line>` as a
//! process of its own session (no terminal: closing this one does not touch it), waits for its
//! socket, and attaches this terminal to it. The host runs the workspace as the command would
//! have (`run_sources` serves it instead of drawing it) until `stop`, a client's quit, or
//! SIGTERM.

use std::ffi::OsString;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use clap::Parser;

use super::Cli;
use switchboard_tui::host::{self as h, place};

/// How long a new host may take to listen (it starts the agents first).
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Set in the host process: the name it serves under.
static HOSTING: OnceLock<String> = OnceLock::new();

/// Serve as host `name` in this process (`resume --serve`: a service manager's unit runs
/// it, without a terminal). Checked like every host name.
pub(super) fn serve_here(name: &str) -> Result<(), String> {
    place::check_name(name)?;
    HOSTING
        .set(name.to_string())
        .map_err(|_| "already a host".to_string())
}

/// The host name when this process is a host.
pub fn hosting() -> Option<&'static str> {
    HOSTING.get().map(String::as_str)
}

fn say(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "switchboard: {text}");
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

fn dir_and_name(name: &str) -> Result<std::path::PathBuf, String> {
    place::check_name(name)?;
    place::runtime_dir()
}

/// `switchboard host ARGS`: run ARGS (a workspace command with `--name`) as the host.
pub(super) fn run_as_host(args: Vec<OsString>, run: fn(Cli) -> ExitCode) -> ExitCode {
    let cli = match Cli::try_parse_from(std::iter::once(OsString::from("switchboard")).chain(args))
    {
        Ok(c) => c,
        Err(e) => {
            say(&e.to_string());
            return ExitCode::from(2);
        }
    };
    let Some(name) = cli.command.host_name() else {
        say("`host` runs a workspace command given --name");
        return ExitCode::from(2);
    };
    // The same rule as the front's: the name becomes the socket's, the lock's and the error
    // file's paths, so `../x` or `a/b` never gets that far, however this was started.
    if let Err(e) = place::check_name(&name) {
        return fail(&e);
    }
    let _ = HOSTING.set(name);
    run(cli)
}

/// `up`'s host name when none is given: the `--config` file's name (`work.toml`: `work`),
/// else `workspace`.
pub(super) fn workspace_name(config: Option<&Path>) -> String {
    let stem = config
        .and_then(|c| c.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    let name = name.trim_start_matches('.').to_string();
    if name.is_empty() || name == "config" {
        "workspace".to_string()
    } else {
        name
    }
}

/// The front of a hosted command (checked, with a terminal): start the host, then attach.
pub(super) fn front(name: &str) -> ExitCode {
    front_with(name, std::env::args_os().skip(1).collect())
}

/// `front`, the host running the command line `args` (`up` that chose to resume runs
/// `resume NAME` there).
pub(super) fn front_with(name: &str, args: Vec<OsString>) -> ExitCode {
    let dir = match dir_and_name(name) {
        Ok(d) => d,
        Err(e) => return fail(&e),
    };
    if place::running(&dir, name) {
        return fail(&format!(
            "a host named {name} is already running: `switchboard attach {name}` attaches to it"
        ));
    }
    // The host must outlive this process: it is double-forked away, and this process stops
    // being a subreaper first, so the host is reparented past it and never counts among the
    // descendants it ends on the way out.
    crate::reaper::stop_being_subreaper();
    let err_path = dir.join(format!("{name}.err"));
    let started = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&err_path)
        .and_then(|err| {
            let mut c = std::process::Command::new(std::env::current_exe()?);
            c.arg("host")
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(err);
            // SAFETY: only setsid, fork and _exit (async-signal-safe) between fork and exec.
            // The host leaves this terminal's session (a hangup here never reaches it), and
            // the intermediate process exits at once, so the host is nobody's child here.
            unsafe {
                c.pre_exec(|| {
                    if libc::setsid() < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    match libc::fork() {
                        -1 => Err(std::io::Error::last_os_error()),
                        0 => Ok(()),
                        _ => libc::_exit(0),
                    }
                });
            }
            c.spawn()
        });
    let mut child = match started {
        Ok(c) => c,
        Err(e) => return fail(&format!("cannot start the host: {e}")),
    };
    // The intermediate: gone at once.
    let _ = child.wait();
    let rt = match runtime() {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let ready = rt.block_on(async {
        let t = Instant::now();
        let mut seen_held = false;
        loop {
            if h::status(&dir, name).await.is_ok() {
                return Ok(());
            }
            // The host is not our child: it is gone when its lock was held and is free again,
            // or is free and it said why on its standard error.
            let held = place::running(&dir, name);
            seen_held |= held;
            let said_something = std::fs::metadata(&err_path).is_ok_and(|m| m.len() > 0);
            if !held && (seen_held || said_something) {
                // What it said may still be on its way to the file.
                tokio::time::sleep(Duration::from_millis(100)).await;
                let said = std::fs::read_to_string(&err_path).unwrap_or_default();
                let tail: Vec<&str> = said.lines().rev().take(20).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                return Err(format!(
                    "the host did not start{}{}",
                    if tail.is_empty() { "" } else { ":\n" },
                    crate::core::text::neutralize(&tail.join("\n"))
                ));
            }
            if t.elapsed() > START_TIMEOUT {
                return Err(format!(
                    "the host did not listen within {}s (see {})",
                    START_TIMEOUT.as_secs(),
                    err_path.display()
                ));
            }
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
    });
    if let Err(e) = ready {
        return fail(&e);
    }
    attached(&rt, &dir, name)
}

/// `switchboard attach NAME`.
pub(super) fn attach(name: &str) -> ExitCode {
    let dir = match dir_and_name(name) {
        Ok(d) => d,
        Err(e) => return fail(&e),
    };
    match runtime() {
        Ok(rt) => attached(&rt, &dir, name),
        Err(e) => fail(&e),
    }
}

fn attached(rt: &tokio::runtime::Runtime, dir: &Path, name: &str) -> ExitCode {
    let _log = crate::logging::init();
    match rt.block_on(h::attach::attach(dir, name)) {
        Ok(ended) => {
            for l in &ended.lines {
                say(l);
            }
            if ended.lines.is_empty() {
                say(&format!(
                    "{}; host {name} goes on (`switchboard attach {name}` returns)",
                    crate::core::text::neutralize(&ended.reason)
                ));
            }
            if ended.lost {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => fail(&e),
    }
}

/// `switchboard ls`: one line per running host; stale sockets of crashed hosts are removed.
pub(super) fn ls() -> ExitCode {
    let dir = match place::runtime_dir() {
        Ok(d) => d,
        Err(e) => return fail(&e),
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let mut any = false;
    for name in place::names(&dir) {
        if !place::running(&dir, &name) {
            place::remove_stale(&dir, &name);
            continue;
        }
        any = true;
        match rt.block_on(h::status(&dir, &name)) {
            Ok(s) => println!("{}", s.line()),
            Err(e) => println!(
                "{name}  (not answering: {})",
                crate::core::text::neutralize(&e)
            ),
        }
    }
    if !any {
        println!(
            "no hosts running (start one with --name NAME, e.g. `switchboard demo --name demo`)"
        );
    }
    // Workspaces whose host stopped without being stopped, and how to bring each back.
    for (path, m) in crate::workspace::resume::crashed() {
        let open = m.sessions.iter().filter(|s| s.closed_ms.is_none()).count();
        let stopped = crate::workspace::resume::plan(&path, m.clone(), &[]).stopped_ms;
        let (who, cmd) = match &m.name {
            Some(n) if place::check_name(n).is_ok() => {
                (n.clone(), format!("switchboard resume {n}"))
            }
            _ => (
                "(unnamed)".to_string(),
                format!(
                    "switchboard resume {}",
                    shlex::try_quote(&path.display().to_string())
                        .map(|q| q.into_owned())
                        .unwrap_or_else(|_| path.display().to_string())
                ),
            ),
        };
        println!(
            "{who}  ended unexpectedly at {}: {open} session(s); `{}` brings them back",
            crate::workspace::resume::when(stopped),
            crate::core::text::neutralize(&cmd)
        );
    }
    ExitCode::SUCCESS
}

/// `switchboard stop NAME`.
pub(super) fn stop(name: &str) -> ExitCode {
    let dir = match dir_and_name(name) {
        Ok(d) => d,
        Err(e) => return fail(&e),
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    match rt.block_on(h::stop(&dir, name)) {
        Ok(lines) => {
            say(&format!("host {name} stopped"));
            for l in lines {
                say(&l);
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

fn fail(e: &str) -> ExitCode {
    say(e);
    ExitCode::from(2)
}
