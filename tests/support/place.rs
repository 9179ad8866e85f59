//! One test's private directories for the built binary: data and config (also the cwd), and
//! the runtime directory a host's socket goes in; the binary run in them, on a pty or without
//! a terminal. Dropped, it stops the host of its name (if one is left, whatever failed) and
//! removes the directories. The test file declares `mod pty` beside it.
// Each test file uses what it needs of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::pty::{STEP, Tui};

pub const SIZE: (u16, u16) = (160, 45);

pub struct Place {
    pub base: PathBuf,
    pub runtime: PathBuf,
    /// The host name the test uses (`--name`), stopped when the place is dropped.
    pub name: &'static str,
    /// The demo agents at their quick pace (`SWITCHBOARD_DEMO_FAST`); off for peers whose
    /// timing a test relies on.
    fast: bool,
}

impl Place {
    /// Fresh directories under the temp dir, named by the test file's `prefix` and `name`.
    pub fn new(prefix: &str, name: &'static str) -> Place {
        let base = std::env::temp_dir().join(format!("sb-{prefix}-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let runtime = base.join("run");
        std::fs::create_dir_all(&runtime).unwrap();
        Place {
            base,
            runtime,
            name,
            fast: true,
        }
    }

    /// The demo agents at their own pace.
    pub fn paced(mut self) -> Place {
        self.fast = false;
        self
    }

    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![("XDG_RUNTIME_DIR".into(), self.runtime.display().to_string())];
        if self.fast {
            env.push(("SWITCHBOARD_DEMO_FAST".into(), "1".into()));
        }
        env
    }

    /// `switchboard ARGS` on a pty, with `extra` in its environment.
    pub fn tui(&self, args: &[&str], extra: &[(&str, &str)]) -> Tui {
        let mut env = self.env();
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Tui::spawn(args, &env, &self.base, SIZE)
    }

    /// `switchboard ARGS` without a terminal, not yet started.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_switchboard"));
        c.args(args)
            .env("SWITCHBOARD_DATA_DIR", &self.base)
            .env("SWITCHBOARD_CONFIG_DIR", &self.base)
            .current_dir(&self.base)
            .stdin(Stdio::null());
        for (k, v) in self.env() {
            c.env(k, v);
        }
        c
    }

    /// `switchboard ARGS` without a terminal (ls, stop, validate).
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// `run`, killed (and the test failed) if it is not done within `limit`.
    pub fn run_within(&self, args: &[&str], limit: Duration) -> Output {
        let mut child = self
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t.elapsed() > limit {
                let _ = child.kill();
                let out = child.wait_with_output().unwrap();
                panic!(
                    "`switchboard {}` still running after {limit:?}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        child.wait_with_output().unwrap()
    }

    /// What `switchboard ls` prints (it must succeed within `STEP`).
    pub fn ls(&self) -> String {
        let o = self.run_within(&["ls"], STEP);
        assert!(o.status.success(), "{o:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The pid of the host `ls` lists as `name`, once it lists one.
    pub fn host_pid(&self, name: &str) -> i32 {
        let t = Instant::now();
        loop {
            let out = self.ls();
            if let Some(pid) = out
                .lines()
                .filter(|l| l.starts_with(name))
                .find_map(|l| l.rsplit_once("(pid ")?.1.trim_end_matches(')').parse().ok())
            {
                return pid;
            }
            assert!(t.elapsed() < STEP, "no host {name} in ls:\n{out}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        // Never leave a host behind, whatever failed.
        let _ = self
            .command(&["stop", self.name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.base);
    }
}
