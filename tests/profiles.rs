//! `[[session]]` profiles through the built binary: `switchboard config check` and
//! `switchboard up` report every bad profile with its file, line and key, with the right exit
//! code, and `up` starts nothing (no recording is written) when anything is wrong.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("sb-profiles-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["config", "data", "home/proj", "home/notes"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        Scratch { dir }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.join(p)
    }

    fn write(&self, p: &str, text: &str) -> PathBuf {
        let path = self.path(p);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The binary with its config, data and home dirs inside the scratch dir, no terminal.
    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(args)
            .env("SWITCHBOARD_CONFIG_DIR", self.path("config"))
            .env("SWITCHBOARD_DATA_DIR", self.path("data"))
            .env("HOME", self.path("home"))
            .env_remove("SWITCHBOARD_CLAUDE_BIN")
            .env_remove("NO_COLOR")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Every file under the data dir: a started session would have left its recording there.
    fn data_files(&self) -> Vec<PathBuf> {
        fn walk(d: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.push(p);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.path("data"), &mut out);
        out
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const BAD: &str = r#"bell = true

[[session]]
name = "api"
backend = "claud"
cwd = "~/proj"

[[session]]
name = "web"
backend = "acp"
cwd = "~/missing"

[[session]]
name = "api"
backend = "demo"
permission_mode = "default"
rules = ["~/nope.toml"]
"#;

/// The exact problem lines of BAD, for a config file named `file`.
fn bad_lines(file: &Path, home: &Path) -> Vec<String> {
    let f = file.display();
    let h = home.display();
    vec![
        format!(
            "{f}:5: session \"api\": backend: \"claud\" is not one of claude, acp, demo, gateway, iii"
        ),
        format!(
            "{f}:8: session \"web\": command: missing: an acp profile needs the agent's argv, e.g. [\"claude-agent-acp\"]"
        ),
        format!("{f}:11: session \"web\": cwd: {h}/missing: no such directory"),
        format!(
            "{f}:14: session \"api\": name: \"api\" is already the name of [[session]] #1, line 4; names must be unique"
        ),
        format!(
            "{f}:16: session \"api\": permission_mode: not used by demo profiles (only claude)"
        ),
        format!("{f}:17: session \"api\": rules: {h}/nope.toml: no such file"),
    ]
}

#[test]
fn config_check_reports_every_bad_profile_with_line_and_key() {
    let s = Scratch::new("check");
    let file = s.write("config/config.toml", BAD);
    let o = s.run(&["config", "check"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, bad_lines(&file, &s.path("home")), "{out}");
}

#[test]
fn config_check_reads_another_file_and_lists_the_good_profiles() {
    let s = Scratch::new("good");
    // The default config.toml is broken: --config must not read it.
    s.write("config/config.toml", BAD);
    let agent = s.write("home/agent", "");
    let file = s.write(
        "ws.toml",
        &format!(
            "[[session]]\nname = \"show\"\nbackend = \"demo\"\ncwd = \"~/proj\"\nscript = \"overlap\"\n\n\
             [[session]]\nname = \"docs\"\nbackend = \"acp\"\ncwd = \"home/notes\"\ncommand = [\"{}\", \"--stdio\"]\n",
            agent.display()
        ),
    );
    let o = s.run(&["config", "check", "--config", file.to_str().unwrap()]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("session show: demo, {}", s.path("home/proj").display())
    );
    // A relative cwd is taken from the config file's directory.
    assert_eq!(
        lines[1],
        format!("session docs: acp, {}", s.path("home/notes").display())
    );
    assert!(
        lines[2].starts_with(&format!("{}: ok (", file.display())),
        "{out}"
    );
    assert!(lines[2].ends_with(", 2 session profile(s))"), "{out}");

    // A claude profile whose binary cannot be found is caught too, before `up` would run it.
    let nobin = s.write(
        "nobin.toml",
        "[claude]\nbin = \"/no/such/claude\"\n\n[[session]]\nname = \"api\"\nbackend = \"claude\"\n",
    );
    let o = s.run(&["config", "check", "--config", nobin.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let out = text(&o.stdout);
    assert!(
        out.starts_with(&format!(
            "{}:4: session \"api\": the `claude` CLI was not found. Install it with",
            nobin.display()
        )),
        "{out}"
    );
    assert!(!out.contains("session api: claude"), "{out}");
    let o = s.run(&["up", "--config", nobin.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with("switchboard: session \"api\": the `claude` CLI was not found"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(s.data_files(), Vec::<PathBuf>::new());

    let missing = s.path("missing.toml");
    let o = s.run(&["config", "check", "--config", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stdout).starts_with(&format!("{}: ", missing.display())),
        "{}",
        text(&o.stdout)
    );
}

/// `[gateway] env` never names a token variable of a gateway profile nor a `SWITCHBOARD_*`.
#[test]
fn config_check_refuses_a_token_or_our_own_variable_in_the_gateway_env() {
    let s = Scratch::new("gw-env");
    s.write("home/proj/x", "");
    let file = s.write(
        "config/config.toml",
        "[gateway]\nenv = [\"CARGO_HOME\", \"SB_GW_TOKEN\", \"SWITCHBOARD_DATA_DIR=/x\"]\n\n\
         [[session]]\nname = \"remote\"\nbackend = \"gateway\"\nurl = \"ws://127.0.0.1:9\"\n\
         workspace = \"w\"\nroot = \"~/proj\"\nintention = \"x\"\ntoken_env = \"SB_GW_TOKEN\"\n",
    );
    let o = s.run(&["config", "check"]);
    assert_eq!(o.status.code(), Some(1));
    let out = text(&o.stdout);
    let f = file.display();
    assert!(
        out.contains(&format!(
            "{f}:2: gateway.env: SB_GW_TOKEN: it holds the gateway's bearer token, which is never passed to commands\n"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "{f}:2: gateway.env: SWITCHBOARD_DATA_DIR: switchboard's own variables are never passed to commands\n"
        )),
        "{out}"
    );
    assert!(!out.contains("CARGO_HOME"), "{out}");
}

#[test]
fn up_refuses_bad_profiles_before_anything_starts() {
    let s = Scratch::new("up-bad");
    let file = s.write("config/config.toml", BAD);
    let o = s.run(&["up"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    let mut want = bad_lines(&file, &s.path("home"));
    want.push(format!(
        "switchboard: 6 problem(s) in the [[session]] profiles of {}; nothing was started",
        file.display()
    ));
    assert_eq!(err.lines().collect::<Vec<_>>(), want, "{err}");
    assert_eq!(s.data_files(), Vec::<PathBuf>::new());

    // Naming a good profile does not skip the check of the others.
    let other = s.write("other.toml", BAD);
    let o = s.run(&[
        "up",
        "--config",
        other.to_str().unwrap(),
        "--session",
        "web",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with(&format!("{}:5: session \"api\": backend:", other.display())),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(s.data_files(), Vec::<PathBuf>::new());
}

#[test]
fn up_names_unknown_sessions_and_needs_a_terminal_before_starting() {
    let s = Scratch::new("up-names");
    let file = s.write(
        "ws.toml",
        "[[session]]\nname = \"one\"\nbackend = \"demo\"\n\n[[session]]\nname = \"two\"\nbackend = \"demo\"\n",
    );
    let f = file.to_str().unwrap();
    let o = s.run(&[
        "up",
        "--config",
        f,
        "--session",
        "one",
        "--session",
        "three",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr).trim_end(),
        format!(
            "switchboard: --session \"three\": no such profile in {}; known: one, two",
            file.display()
        )
    );
    // A good profile without a terminal: refused before the agent starts, nothing recorded.
    let o = s.run(&["up", "--config", f, "--session", "two"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("the TUI needs a terminal"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(s.data_files(), Vec::<PathBuf>::new());

    let empty = s.write("empty.toml", "bell = false\n");
    // Under a host (the default), no profiles is an empty workspace that sessions in their own
    // terminals join: it needs a terminal like any other.
    let o = s.run(&["up", "--config", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("the TUI needs a terminal"),
        "{}",
        text(&o.stderr)
    );
    // In this terminal alone, it has nothing to show.
    let o = s.run(&["up", "--no-host", "--config", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("no [[session]] profiles to start"),
        "{}",
        text(&o.stderr)
    );
    let o = s.run(&["up", "--config", s.path("none.toml").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("none.toml: "),
        "{}",
        text(&o.stderr)
    );
}
