//! Temporary files an atomic write left behind: `write_atomic*` writes `.NAME.switchboard-
//! PID-N.tmp` beside `NAME` and renames it over, so a process killed between the two leaves
//! one. The next writer of `NAME` removes those of processes that are gone.

use std::io;
use std::path::Path;

use super::{FsError, Root};

/// The temporary file process `pid` writes, on its `attempt`th try, before renaming it to
/// `name`.
pub(super) fn temp_name(name: &str, pid: u32, attempt: u32) -> String {
    format!(".{name}.switchboard-{pid}-{attempt}.tmp")
}

/// The process that wrote `file`, when it is a temporary file of `name`.
fn writer_of(file: &str, name: &str) -> Option<u32> {
    let rest = file
        .strip_prefix(&format!(".{name}.switchboard-"))?
        .strip_suffix(".tmp")?;
    let (pid, attempt) = rest.split_once('-')?;
    attempt.parse::<u32>().ok()?;
    let pid = pid.parse::<u32>().ok()?;
    (temp_name(name, pid, attempt.parse().ok()?) == file).then_some(pid)
}

/// Whether process `pid` exists (one of another user counts: it may still be writing).
#[cfg(unix)]
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

impl Root {
    /// Remove the temporary files that writes of `rel` left beside it when their process died
    /// mid-write (regular files only, of processes that no longer exist, never this one's);
    /// how many went. Called once by a writer that holds the file (the workspace manifest).
    #[cfg(unix)]
    pub fn remove_stale_temps(&self, rel: &Path) -> Result<usize, FsError> {
        let rel = Self::checked(rel)?;
        let Some(name) = rel.file_name().and_then(|n| n.to_str()) else {
            return Ok(0);
        };
        let parent = match self.parent_of(&rel) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e.into()),
        };
        let mut removed = 0;
        for entry in parent.entries()? {
            let entry = entry?;
            let file = entry.file_name();
            let Some(pid) = file.to_str().and_then(|f| writer_of(f, name)) else {
                continue;
            };
            if pid == std::process::id() || alive(pid) || !entry.file_type()?.is_file() {
                continue;
            }
            if parent.remove_file(&file).is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_back_exactly() {
        let f = temp_name("manifest.toml", 42, 3);
        assert_eq!(writer_of(&f, "manifest.toml"), Some(42));
        for other in [
            ".manifest.toml.switchboard-42-3.tmp.x",
            ".manifest.toml.switchboard-42.tmp",
            ".manifest.toml.switchboard--3.tmp",
            ".manifest.toml.switchboard-+42-3.tmp",
            ".manifest.toml.switchboard-042-3.tmp",
            ".other.toml.switchboard-42-3.tmp",
            "manifest.toml",
        ] {
            assert_eq!(writer_of(other, "manifest.toml"), None, "{other}");
        }
    }

    /// A dead writer's temporary file goes; this process's, a live one's (pid 1), another
    /// file's, a directory of the same name and the file itself stay.
    #[cfg(unix)]
    #[test]
    fn a_dead_writers_temp_files_go_and_nothing_else() {
        let dir = std::env::temp_dir().join(format!("sb-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let put = |n: &str| std::fs::write(dir.join(n), b"partial").unwrap();
        put("m.toml");
        put(&temp_name("m.toml", dead, 0));
        put(&temp_name("m.toml", dead, 1));
        put(&temp_name("m.toml", std::process::id(), 0));
        put(&temp_name("m.toml", 1, 0));
        put(&temp_name("other.toml", dead, 0));
        std::fs::create_dir(dir.join(temp_name("m.toml", dead, 2))).unwrap();
        let root = Root::open(&dir).unwrap();
        assert_eq!(root.remove_stale_temps(Path::new("m.toml")).unwrap(), 2);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut want = vec![
            "m.toml".to_string(),
            temp_name("m.toml", std::process::id(), 0),
            temp_name("m.toml", 1, 0),
            temp_name("other.toml", dead, 0),
            temp_name("m.toml", dead, 2),
        ];
        want.sort();
        assert_eq!(left, want);
        // Nothing to do: none, and no error.
        assert_eq!(root.remove_stale_temps(Path::new("m.toml")).unwrap(), 0);
        assert_eq!(
            root.remove_stale_temps(Path::new("sub/none.toml")).unwrap(),
            0
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
