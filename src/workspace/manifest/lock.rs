//! Whether a workspace still runs: its process holds an `flock` on `.<manifest>.lock` beside
//! the manifest for as long as it lives. The kernel drops the lock with the process however it
//! ends (a SIGKILL, an OOM kill, a reboot), so an unclosed manifest whose lock is free is a
//! workspace that ended without being stopped: one `resume` can bring back.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

fn lock_path(manifest: &Path) -> PathBuf {
    let name = manifest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    manifest.with_file_name(format!(".{name}.lock"))
}

/// Take the lock of `manifest`'s workspace: `Ok(None)` when another process holds it.
pub fn hold(manifest: &Path) -> Result<Option<File>, String> {
    let path = lock_path(manifest);
    // Private, never through a link; not truncated (the file holds nothing).
    let f = crate::paths::create_private_file(&path, true)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor we own.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Ok(Some(f));
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(None)
    } else {
        Err(format!("cannot lock {}: {e}", path.display()))
    }
}

/// Whether a live process holds `manifest`'s workspace (without taking it for long).
pub fn running(manifest: &Path) -> bool {
    let path = lock_path(manifest);
    if !path.exists() {
        return false;
    }
    matches!(hold(manifest), Ok(None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_seen_and_freed_with_its_holder() {
        let dir = std::env::temp_dir().join(format!("sb-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let m = dir.join("workspace-x.json");
        assert!(!running(&m), "no lock file: not running");
        let held = hold(&m).unwrap().expect("free");
        assert!(running(&m), "held by an open description");
        assert!(hold(&m).unwrap().is_none());
        drop(held);
        assert!(!running(&m), "released with its holder");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
