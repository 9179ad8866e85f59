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
/// A probe (`running`, from `ls` or a `resume` looking for crashed workspaces) holds a shared
/// lock for a moment: the lock is tried again for a fifth of a second before another holder
/// is believed, so a probe cannot make a resume give up ("being resumed already").
pub fn hold(manifest: &Path) -> Result<Option<File>, String> {
    const TRIES: u32 = 10;
    for attempt in 1..=TRIES {
        if let Some(f) = try_lock(manifest, libc::LOCK_EX)? {
            return Ok(Some(f));
        }
        if attempt < TRIES {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    Ok(None)
}

/// One non-blocking `flock` of `manifest`'s lock file (`LOCK_EX` or `LOCK_SH`).
fn try_lock(manifest: &Path, how: libc::c_int) -> Result<Option<File>, String> {
    let path = lock_path(manifest);
    // Private, never through a link; not truncated (the file holds nothing).
    let f = crate::paths::create_private_file(&path, true)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor we own.
    let r = unsafe { libc::flock(f.as_raw_fd(), how | libc::LOCK_NB) };
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

/// Whether a live process holds `manifest`'s workspace. A shared lock, let go at once: two
/// probes never see each other as the holder.
pub fn running(manifest: &Path) -> bool {
    let path = lock_path(manifest);
    if !path.exists() {
        return false;
    }
    matches!(try_lock(manifest, libc::LOCK_SH), Ok(None))
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

    /// `ls` probing while a resume takes the lock: the resume still gets it (before, the
    /// probe's momentary lock made it say "being resumed already" and start nothing).
    #[test]
    fn a_probe_in_progress_does_not_make_the_lock_look_taken() {
        let dir = std::env::temp_dir().join(format!("sb-lock-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let m = dir.join("workspace-y.json");
        let probe = try_lock(&m, libc::LOCK_SH).unwrap().expect("free");
        assert!(!running(&m), "a probe is not a holder to another probe");
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            drop(probe);
        });
        let held = hold(&m).unwrap();
        t.join().unwrap();
        assert!(held.is_some(), "taken once the probe let go");
        assert!(running(&m));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
