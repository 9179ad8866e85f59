//! Where switchboard keeps files. Environment overrides make tests hermetic.

use std::path::PathBuf;

use directories::ProjectDirs;

fn project() -> Option<ProjectDirs> {
    ProjectDirs::from("dev", "switchboard", "switchboard")
}

/// Recordings and logs: `$SWITCHBOARD_DATA_DIR`, else the platform data dir
/// (`~/.local/share/switchboard` on Linux).
pub fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SWITCHBOARD_DATA_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    project()
        .map(|p| p.data_dir().to_path_buf())
        .unwrap_or_else(|| std::env::temp_dir().join("switchboard"))
}

pub fn recordings_dir() -> PathBuf {
    data_dir().join("recordings")
}

pub fn logs_dir() -> PathBuf {
    data_dir().join("logs")
}

/// Default path of a new recording: `<data dir>/recordings/<UTC time>-<backend>.jsonl`.
pub fn new_recording_path(backend: &str) -> PathBuf {
    let stamp = crate::record::utc_stamp(crate::record::now_ms());
    let dir = recordings_dir();
    let mut path = dir.join(format!("{stamp}-{backend}.jsonl"));
    let mut n = 1;
    while path.exists() {
        n += 1;
        path = dir.join(format!("{stamp}-{backend}-{n}.jsonl"));
    }
    path
}
