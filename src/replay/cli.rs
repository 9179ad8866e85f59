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
    for path in files {
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
                    for f in &report.findings {
                        let msg = f.message.replace('\n', "\n  ");
                        say!("{}:{}: {}: {msg}", path.display(), f.line, f.rule);
                    }
                }
            }
        }
    }
    let summary = format!(
        "{} file(s), {frames} frame(s), {problems} problem(s), {unreadable} unreadable",
        files.len()
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

pub fn replay(file: &Path, format: Option<Format>, theme: crate::ui::theme::Theme) -> ExitCode {
    if let Err(e) = crate::cli::need_terminal() {
        eprintln!("switchboard: {e}");
        return ExitCode::from(2);
    }
    let player = match super::player::Player::open_path(file, format) {
        Ok(p) => p,
        Err(e) => {
            warn!("switchboard: {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
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
    if list.is_empty() {
        say!("no recordings in {}", dir.display());
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
