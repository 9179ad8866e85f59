//! Tracing to a log file; never to the terminal the TUI owns.
//!
//! The file is private (0600 in a 0700 directory, see `paths`). It is named for the day the
//! session started (`switchboard.log.YYYY-MM-DD`, the name the daily appender used) and opened
//! once by us, because the appender creates its files with the default mode.

use std::path::{Path, PathBuf};

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

/// The log file for a session started at `ms` (Unix milliseconds) in `dir`.
pub fn log_file(dir: &Path, ms: u64) -> PathBuf {
    let day = &crate::record::utc_from_secs((ms / 1000) as i64)[..10];
    dir.join(format!("switchboard.log.{day}"))
}

/// Open (append) the private log file of today under `dir`.
pub fn open(dir: &Path) -> std::io::Result<std::fs::File> {
    let path = log_file(dir, crate::record::now_ms());
    crate::paths::prepare_parent(&path)?;
    crate::paths::ensure_private_dir(dir)?;
    crate::paths::create_private_file(&path, true)
}

/// Start file logging under `<data dir>/logs/`. Keep the guard alive to flush on exit.
pub fn init() -> Option<WorkerGuard> {
    let file = open(&crate::paths::logs_dir()).ok()?;
    let (writer, guard) = tracing_appender::non_blocking(file);
    let filter =
        EnvFilter::try_from_env("SWITCHBOARD_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init()
        .ok()?;
    Some(guard)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_log_file_is_private() {
        let base = std::env::temp_dir().join(format!("sb-log-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("logs");
        open(&dir).unwrap();
        let path = log_file(&dir, crate::record::now_ms());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&base), 0o700);
        assert!(path.to_string_lossy().contains("switchboard.log.20"));
        std::fs::remove_dir_all(base).ok();
    }
}
