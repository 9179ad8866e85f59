//! The conventions of a Rust command-line tool (issue 38 item 4): every command's `--help`
//! ends with one example that parses, `switchboard completions SHELL` for the five shells
//! and `switchboard man`, both generated from the parser's own definitions, and the exact
//! pipelines the README's Install section gives (`… completions bash | bash -n`,
//! `… man | man -l -`).

use std::process::Command;

use clap::{CommandFactory, Parser};
use switchboard::cli::Cli;

#[path = "support/common.rs"]
mod common;

/// Every visible (sub)command of the built tree with its full name (`switchboard hooks
/// install`), depth first; clap's own `help` sub-command is not one of ours.
fn commands() -> Vec<(String, clap::Command)> {
    fn walk(prefix: &str, cmd: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
        let name = if prefix.is_empty() {
            cmd.get_name().to_string()
        } else {
            format!("{prefix} {}", cmd.get_name())
        };
        out.push((name.clone(), cmd.clone()));
        for sub in cmd.get_subcommands() {
            if sub.is_hide_set() || sub.get_name() == "help" {
                continue;
            }
            walk(&name, sub, out);
        }
    }
    let mut cmd = Cli::command();
    cmd.build();
    let mut out = Vec::new();
    walk("", &cmd, &mut out);
    out
}

/// `switchboard …` as a shell would run it: the words from `switchboard` up to the first
/// redirection or pipe.
fn argv_of(example: &str) -> Vec<String> {
    let words = shlex::split(example).unwrap_or_else(|| panic!("unbalanced quotes: {example}"));
    let start = words
        .iter()
        .position(|w| w == "switchboard")
        .unwrap_or_else(|| panic!("the example runs no switchboard: {example}"));
    words[start..]
        .iter()
        .take_while(|w| !matches!(w.as_str(), "|" | ">" | "<" | ">>" | "&&" | ";"))
        .cloned()
        .collect()
}

#[test]
fn every_help_ends_with_one_example_that_parses() {
    let all = commands();
    assert!(all.len() > 20, "only {} commands walked", all.len());
    let mut problems = Vec::new();
    for (name, mut cmd) in all {
        for (which, help) in [
            ("--help", cmd.render_long_help().to_string()),
            ("-h", cmd.render_help().to_string()),
        ] {
            let lines: Vec<&str> = help.trim_end().lines().collect();
            let n = lines.len();
            let count = lines.iter().filter(|l| l.trim() == "Example:").count();
            if n < 2 || lines[n - 2].trim() != "Example:" || count != 1 {
                problems.push(format!(
                    "`{name} {which}` does not end with one `Example:` and its command line"
                ));
                continue;
            }
            let example = lines[n - 1].trim();
            let argv = argv_of(example);
            // The example is of this command: its words start with the command's own.
            if !argv.join(" ").starts_with(&name) {
                problems.push(format!(
                    "`{name} {which}`: the example `{example}` is not of it"
                ));
            }
            if let Err(e) = Cli::try_parse_from(&argv) {
                problems.push(format!(
                    "`{name} {which}`: the example `{example}` does not parse: {e}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn switchboard() -> &'static str {
    env!("CARGO_BIN_EXE_switchboard")
}

/// A pipeline in bash with `pipefail`: its output and whether every stage succeeded.
fn pipeline(script: &str) -> (bool, String, String) {
    let out = Command::new("bash")
        .args(["-c", &format!("set -o pipefail; {script}")])
        .env("SB", switchboard())
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .expect("bash runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A program on PATH.
fn on_path(program: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

#[test]
fn completions_bash_passes_bash_n() {
    let (ok, out, err) = pipeline(r#""$SB" completions bash | bash -n"#);
    assert!(ok, "completions bash | bash -n failed\n{out}\n{err}");
    // And it is a script that completes our commands.
    let (ok, script, err) = pipeline(r#""$SB" completions bash"#);
    assert!(ok, "{err}");
    for word in ["complete", "demo-engine", "completions", "--sessions"] {
        assert!(script.contains(word), "no {word} in the bash script");
    }
}

#[test]
fn completions_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = Command::new(switchboard())
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "completions {shell}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains("demo-gateway") && text.contains("switchboard"),
            "completions {shell} names no command:\n{text}"
        );
        // Hidden internal commands are not offered.
        assert!(
            !text.contains("demo-agent"),
            "completions {shell} offer demo-agent"
        );
    }
    // zsh checks its own syntax where it is installed.
    if let Some(zsh) = on_path("zsh") {
        let (ok, out, err) = pipeline(&format!(r#""$SB" completions zsh | {} -n"#, zsh.display()));
        assert!(ok, "completions zsh | zsh -n failed\n{out}\n{err}");
    }
    let bad = Command::new(switchboard())
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
}

#[test]
fn man_page_reads_with_man() {
    // `man` is a prerequisite like python3: CI fails without it instead of skipping.
    if common::require_or_skip("man_page_reads_with_man", "man (man-db)", on_path("man")).is_none()
    {
        return;
    }
    let (ok, page, err) = pipeline(r#""$SB" man | man -l -"#);
    assert!(ok, "man | man -l - failed\n{page}\n{err}");
    for want in [
        "NAME",
        "SYNOPSIS",
        "switchboard demo --sessions 3",
        "SWITCHBOARD DEMO-ENGINE",
        "SWITCHBOARD HOOKS INSTALL",
        "SWITCHBOARD COMPLETIONS",
        "--sessions",
    ] {
        assert!(page.contains(want), "no {want:?} in the man page:\n{page}");
    }
    assert!(
        !page.contains("SWITCHBOARD DEMO-AGENT") && !page.contains("SWITCHBOARD HOST"),
        "a hidden command has a section:\n{page}"
    );
    // Every visible command has its section and its example.
    for (name, cmd) in commands().into_iter().skip(1) {
        assert!(
            page.contains(&name.to_uppercase()),
            "no section for {name}:\n{page}"
        );
        let help = cmd
            .get_after_help()
            .map(|h| h.to_string())
            .unwrap_or_default();
        let example = help.lines().last().unwrap_or_default().trim();
        assert!(
            page.contains(example),
            "{name}: no {example:?} in the man page"
        );
    }
}

/// The README's Install section: `cargo install --locked --path .`, and every `switchboard`
/// command it gives parses (the completions of each shell, the man page).
#[test]
fn readme_install_commands_parse() {
    let readme = std::fs::read_to_string(common::manifest("README.md")).unwrap();
    let install = readme
        .split("\n## ")
        .find(|s| s.starts_with("Install"))
        .expect("the README has an Install section");
    assert!(
        install.contains("cargo install --locked --path ."),
        "{install}"
    );
    let mut code = false;
    let mut seen = Vec::new();
    for line in install.lines() {
        if line.trim_start().starts_with("```") {
            code = !code;
            continue;
        }
        if !code || !line.contains("switchboard ") {
            continue;
        }
        let line = line.split(" # ").next().unwrap();
        let Some(at) = line.find("switchboard ") else {
            continue;
        };
        let argv = argv_of(&line[at..]);
        if let Err(e) = Cli::try_parse_from(&argv) {
            panic!("the README's `{line}` does not parse: {e}");
        }
        seen.push(argv[1].clone());
    }
    assert!(
        seen.iter().any(|c| c == "completions") && seen.iter().any(|c| c == "man"),
        "{seen:?}"
    );
}
