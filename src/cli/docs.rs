//! `switchboard completions SHELL` and `switchboard man`: both generated from the clap
//! definitions the parser uses, so they cannot name a flag the program lacks.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;

use super::Cli;

/// The completion script of `shell` on standard output.
pub(super) fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut visible(), "switchboard", &mut out);
    print_all(&out)
}

/// The command tree without its hidden internal commands (`host`, `demo-agent`), which the
/// completion generators would otherwise offer (only the top level has any).
fn visible() -> clap::Command {
    let full = Cli::command();
    clap::Command::new("switchboard")
        .version(env!("CARGO_PKG_VERSION"))
        .about(full.get_about().cloned().unwrap_or_default())
        .subcommands(full.get_subcommands().filter(|s| !s.is_hide_set()).cloned())
}

/// The man page (roff) on standard output.
pub(super) fn man() -> ExitCode {
    match man_page() {
        Ok(page) => print_all(&page),
        Err(e) => {
            eprintln!("switchboard: man page: {e}");
            ExitCode::from(1)
        }
    }
}

/// One page: the top command as clap_mangen renders it, then a section per (sub)command that
/// is not hidden (its description, synopsis, options and example), depth first.
pub fn man_page() -> std::io::Result<Vec<u8>> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let top = clap_mangen::Man::new(cmd.clone());
    let mut page = Vec::new();
    top.render_title(&mut page)?;
    top.render_name_section(&mut page)?;
    top.render_synopsis_section(&mut page)?;
    top.render_description_section(&mut page)?;
    top.render_options_section(&mut page)?;
    example(&mut page, ".SH EXAMPLE", &cmd)?;
    let mut subs = Vec::new();
    walk(&cmd, &mut subs);
    for sub in subs {
        let name = sub.get_bin_name().unwrap_or(sub.get_name()).to_string();
        writeln!(page, ".SH \"{}\"", escape(&name.to_uppercase()))?;
        let man = clap_mangen::Man::new(sub.clone());
        let mut part = Vec::new();
        man.render_description_section(&mut part)?;
        man.render_synopsis_section(&mut part)?;
        if sub.get_arguments().any(|a| !a.is_hide_set()) {
            man.render_options_section(&mut part)?;
        }
        // Sections of the sub-command's own page become subsections of this one.
        let part = String::from_utf8_lossy(&part)
            .lines()
            .map(|l| match l.strip_prefix(".SH ") {
                Some(h) => format!(".SS {}", title_case(h)),
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        writeln!(page, "{part}")?;
        example(&mut page, ".SS Example", &sub)?;
    }
    writeln!(page, ".SH VERSION")?;
    writeln!(page, "v{}", env!("CARGO_PKG_VERSION"))?;
    Ok(page)
}

/// Every visible sub-command beneath `cmd`, depth first.
fn walk(cmd: &clap::Command, out: &mut Vec<clap::Command>) {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out.push(sub.clone());
        walk(sub, out);
    }
}

/// A command's example (its `--help` ends with `Example:` and the command line) as a roff
/// heading and an unfilled line.
fn example(page: &mut Vec<u8>, heading: &str, cmd: &clap::Command) -> std::io::Result<()> {
    let Some(help) = cmd.get_after_help() else {
        return Ok(());
    };
    writeln!(page, "{heading}")?;
    writeln!(page, ".nf")?;
    for line in help.to_string().lines() {
        let line = line.trim();
        if line.is_empty() || line == "Example:" {
            continue;
        }
        writeln!(page, "\\&{}", escape(line))?;
    }
    writeln!(page, ".fi")
}

/// Text safe on a roff line: backslashes doubled, hyphens as minus signs (what man pages
/// use for options, and what copies back into a shell).
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('-', "\\-")
}

/// `OPTIONS` → `Options` (a roff argument, maybe quoted).
fn title_case(h: &str) -> String {
    let h = h.trim_matches('"');
    let mut c = h.chars();
    match c.next() {
        Some(f) => format!("{}{}", f, c.as_str().to_lowercase()),
        None => String::new(),
    }
}

fn print_all(bytes: &[u8]) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`| head`) is not an error worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchboard: {e}");
            ExitCode::from(1)
        }
    }
}
