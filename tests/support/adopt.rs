//! What the tests of adopted sessions share (tests/adopt_claude.rs, tests/adopt_codex.rs):
//! one test's world of private directories (a HOME for the CLI, its project, the runtime dir
//! the host listens in, switchboard's data and config), the built binary run in it, a host
//! on a pty, and reading what the host left (recordings, `ls`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::pty::Tui;

pub const SIZE: (u16, u16) = (160, 48);

pub struct World {
    pub root: PathBuf,
    pub home: PathBuf,
    pub proj: PathBuf,
    pub run: PathBuf,
    pub data: PathBuf,
    pub cfg: PathBuf,
}

impl World {
    pub fn new(tag: &str) -> World {
        let root = std::env::temp_dir().join(format!("sb-adopt-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let w = World {
            home: root.join("home"),
            proj: root.join("proj"),
            run: root.join("run"),
            data: root.join("data"),
            cfg: root.join("cfg"),
            root,
        };
        for d in [&w.home, &w.proj, &w.run, &w.data, &w.cfg] {
            std::fs::create_dir_all(d).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&w.run, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(w.cfg.join("config.toml"), "").unwrap();
        // The project as the CLIs see it (no link in its path: transcripts are named by it).
        let proj = std::fs::canonicalize(&w.proj).unwrap();
        World { proj, ..w }
    }

    /// What every process of the test gets: where hosts listen, switchboard's data and
    /// config, the CLI's home.
    pub fn env(&self) -> Vec<(String, String)> {
        let d = |p: &Path| p.display().to_string();
        vec![
            ("XDG_RUNTIME_DIR".into(), d(&self.run)),
            ("SWITCHBOARD_DATA_DIR".into(), d(&self.data)),
            ("SWITCHBOARD_CONFIG_DIR".into(), d(&self.cfg)),
            ("HOME".into(), d(&self.home)),
        ]
    }

    /// `switchboard ARGS` in this world, to its end.
    pub fn sb(&self, args: &[&str]) -> Output {
        self.sb_with(args, &[])
    }

    pub fn sb_with(&self, args: &[&str], extra: &[(String, String)]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(args)
            .envs(self.env())
            .envs(extra.iter().cloned())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// `switchboard up --name NAME` on a pty: an empty workspace under a host, this pty
    /// attached to it.
    pub fn host(&self, name: &str, extra: &[(String, String)]) -> Tui {
        let mut env = self.env();
        env.extend(extra.iter().cloned());
        let t = Tui::spawn_program(
            Path::new(env!("CARGO_BIN_EXE_switchboard")),
            &["up", "--name", name],
            &env,
            &["SWITCHBOARD_CLAUDE_BIN", "CLAUDE_CONFIG_DIR", "CODEX_HOME"],
            &self.root,
            SIZE,
        );
        t.wait(&["own terminals"]);
        t
    }

    /// The pid of host `name`, from `ls`.
    pub fn host_pid(&self, name: &str) -> Option<i32> {
        let out = String::from_utf8_lossy(&self.sb(&["ls"]).stdout).into_owned();
        out.lines()
            .find(|l| l.starts_with(name))?
            .rsplit_once("(pid ")?
            .1
            .trim_end_matches(')')
            .parse()
            .ok()
    }

    /// Stop host `name` as `q` would (its waiting hooks then print nothing).
    pub fn stop(&self, name: &str) {
        let out = self.sb(&["stop", name]);
        assert!(out.status.success(), "{out:?}");
    }

    /// The adopted sessions' recordings, oldest first.
    pub fn recordings(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.data.join("recordings"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.contains("-adopted-"))
            })
            .collect();
        v.sort();
        v
    }

    /// Every recording and manifest this world left, validated: `validate`'s output.
    pub fn validate_all(&self) -> String {
        let mut files: Vec<String> = std::fs::read_dir(self.data.join("recordings"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            // (A manifest being replaced is a hidden temporary file.)
            .filter(|p| {
                !p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .map(|p| p.display().to_string())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "nothing was recorded");
        let mut args = vec!["validate"];
        args.extend(files.iter().map(String::as_str));
        let out = self.sb(&args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "validate failed:\n{text}");
        text
    }
}

/// Wait until `f` holds, for at most `limit`.
pub fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGKILL `pid`.
pub fn kill(pid: i32) {
    // SAFETY: signalling a process of the test's.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}
