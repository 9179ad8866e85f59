//! The text side of `validate`, `import`, `export` and `sessions`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::load::{self, Format};
use crate::core::text::{json_for_terminal, neutralize};

/// Print one line of text that may hold agent bytes (messages, prompts, paths), neutralized.
macro_rules! say {
    ($($arg:tt)*) => { println!("{}", neutralize(&format!($($arg)*))) };
}

/// The same on stderr.
macro_rules! warn {
    ($($arg:tt)*) => { eprintln!("{}", neutralize(&format!($($arg)*))) };
}

/// `FILE:LINE: rule: message` per problem, a summary line; exit 0 clean, 1 problems,
/// 2 unreadable input.
pub fn validate(files: &[PathBuf], format: Option<Format>, json: bool) -> ExitCode {
    let mut problems = 0;
    let mut unreadable = 0;
    let mut frames = 0;
    let mut reports = Vec::new();
    let mut count = files.len();
    for path in files {
        if format.is_none() && crate::workspace::manifest::is_manifest(path) {
            let m = super::validate_manifest::validate_manifest(path);
            count += m.recordings.len();
            frames += m.frames();
            problems += m.problems();
            unreadable += usize::from(m.report.unreadable)
                + m.recordings
                    .iter()
                    .filter(|r| {
                        r.error.is_some() || r.report.as_ref().is_some_and(|r| r.unreadable)
                    })
                    .count();
            if json {
                reports.push(serde_json::json!({
                    "file": path, "format": "manifest", "report": m.report,
                    "recordings": m.recordings,
                }));
            } else {
                print_findings(path, &m.report.findings);
                for rec in &m.recordings {
                    if let Some(report) = &rec.report {
                        print_findings(&rec.file, &report.findings);
                    }
                }
            }
            continue;
        }
        match super::validate::validate_path(path, format) {
            Err(e) => {
                unreadable += 1;
                if json {
                    reports.push(serde_json::json!({"file": path, "error": e}));
                } else {
                    say!("{}:0: unreadable: {e}", path.display());
                }
            }
            Ok((found, report)) => {
                frames += report.frames;
                problems += report.problems();
                unreadable += usize::from(report.unreadable);
                if json {
                    reports.push(serde_json::json!({
                        "file": path,
                        "format": format!("{found:?}").to_lowercase(),
                        "report": report,
                    }));
                } else {
                    print_findings(path, &report.findings);
                }
            }
        }
    }
    let summary = format!(
        "{count} file(s), {frames} frame(s), {problems} problem(s), {unreadable} unreadable"
    );
    if json {
        let doc = serde_json::json!({
            "files": reports, "frames": frames, "problems": problems, "unreadable": unreadable,
        });
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        println!("{}", json_for_terminal(&text));
    } else {
        println!("{summary}");
    }
    if unreadable > 0 {
        ExitCode::from(2)
    } else if problems > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `FILE:LINE: rule: message`, one per finding (continuation lines indented).
fn print_findings(path: &Path, findings: &[super::validate::Finding]) {
    for f in findings {
        let msg = f.message.replace('\n', "\n  ");
        say!("{}:{}: {}: {msg}", path.display(), f.line, f.rule);
    }
}

/// Play a recording, or a workspace manifest's recordings merged by time. The file is read
/// first, so a bad one is reported even without a terminal.
pub fn replay(file: &Path, format: Option<Format>, theme: crate::ui::theme::Theme) -> ExitCode {
    let player = match super::player::Player::open_path(file, format) {
        Ok(p) => p,
        Err(e) => {
            warn!("switchboard: {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    if let Err(e) = crate::app::term::need_terminal() {
        eprintln!("switchboard: {e}");
        return ExitCode::from(2);
    }
    let rt = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("switchboard: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(super::player::run(player, theme)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchboard: terminal error: {e}");
            ExitCode::from(1)
        }
    }
}

pub fn import(src: &Path, dst: &Path) -> ExitCode {
    match super::sessions::import(src, dst) {
        Ok(n) => {
            say!("imported {n} frames into {}", dst.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            warn!("switchboard: {}: {e}", src.display());
            ExitCode::from(2)
        }
    }
}

pub fn export(file: &Path, output: Option<&Path>) -> ExitCode {
    let loaded = match load::load(file, None) {
        Ok(l) => l,
        Err(e) => {
            warn!("switchboard: {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let title = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let md = super::export::markdown(&loaded, &title);
    match output {
        Some(p) => match std::fs::write(p, md) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                warn!("switchboard: cannot write {}: {e}", p.display());
                ExitCode::from(1)
            }
        },
        None => {
            print!("{md}");
            ExitCode::SUCCESS
        }
    }
}

pub fn sessions() -> ExitCode {
    let dir = crate::paths::recordings_dir();
    let list = super::sessions::list(&dir);
    let workspaces = super::sessions::list_workspaces(&dir);
    if list.is_empty() && workspaces.is_empty() {
        say!("no recordings in {}", dir.display());
        return ExitCode::SUCCESS;
    }
    for w in &workspaces {
        print_workspace(w);
    }
    if list.is_empty() {
        return ExitCode::SUCCESS;
    }
    println!(
        "{:<21} {:<7} {:>5}  {:<24} {:<30} first prompt",
        "started", "backend", "gates", "result", "cwd"
    );
    for s in list {
        say!(
            "{:<21} {:<7} {:>5}  {:<24} {:<30} {}",
            s.started,
            s.backend,
            s.answered,
            crate::core::text::truncate(&s.result, 24),
            crate::core::text::truncate(&s.cwd, 30),
            s.first_prompt
        );
        say!("  {}", s.path.display());
    }
    ExitCode::SUCCESS
}

/// A workspace: its line (started, "workspace", sessions, decisions), its manifest's path, then
/// one indented line per session (name, backend, recording). Every field is neutralized: names
/// come from profiles and paths from the file system.
fn print_workspace(w: &super::sessions::Workspace) {
    let m = match &w.manifest {
        Ok(m) => m,
        Err(e) => {
            say!("{:<21} workspace  unreadable: {e}", "?");
            say!("  {}", w.path.display());
            return;
        }
    };
    let more = if m.decisions_truncated { "+" } else { "" };
    say!(
        "{:<21} workspace  {} session(s), {}{more} decision(s)",
        m.started,
        m.sessions.len(),
        m.decisions_total
    );
    say!("  {}", w.path.display());
    for s in &m.sessions {
        let rec = crate::workspace::manifest::Manifest::recording_path(&w.path, s)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "(not recorded)".into());
        let status = match (s.closed_ms, s.exit_code) {
            (None, _) => "open".to_string(),
            (Some(_), Some(code)) => format!("exited {code}"),
            (Some(_), None) => "closed".to_string(),
        };
        say!(
            "    {:>3} {:<20} {:<7} {:<10} {rec}",
            s.id,
            crate::core::text::truncate(&s.name, 20),
            s.backend,
            status
        );
    }
}
