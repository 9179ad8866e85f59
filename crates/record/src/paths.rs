//! Where switchboard keeps files, and how they are made private. Environment overrides make
//! tests hermetic.
//!
//! Recordings hold every prompt, tool output and argv; logs hold paths and errors. Everything we
//! write lives in 0700 directories as 0600 files. Without a home directory the data dir falls
//! back to a per-user directory under the temp dir that must be a real directory (not a link)
//! owned by us with no group or other access, or nothing is written there at all.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use directories::ProjectDirs;

fn project() -> Option<ProjectDirs> {
    ProjectDirs::from("dev", "switchboard", "switchboard")
}

/// Recordings and logs: `$SWITCHBOARD_DATA_DIR`, else the platform data dir
/// (`~/.local/share/switchboard` on Linux), else `<temp dir>/switchboard-<uid>`.
pub fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SWITCHBOARD_DATA_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    project()
        .map(|p| p.data_dir().to_path_buf())
        .unwrap_or_else(|| fallback_dir(&std::env::temp_dir(), "switchboard"))
}

/// `<base>/<name>-<uid>`: per user, so one user cannot pre-create another's directory name
/// by guessing it (and `ensure_private_dir` refuses it if they did).
pub fn fallback_dir(base: &Path, name: &str) -> PathBuf {
    base.join(format!("{name}-{}", uid()))
}

fn uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    #[cfg(unix)]
    unsafe {
        libc::geteuid()
    }
    #[cfg(not(unix))]
    0
}

pub fn recordings_dir() -> PathBuf {
    data_dir().join("recordings")
}

pub fn logs_dir() -> PathBuf {
    data_dir().join("logs")
}

/// Create `dir` (and missing parents) with mode 0700, then check the directory itself: a real
/// directory, not a symlink, owned by us. Group or other access on it is removed. Anything
/// else (another user's directory, a planted link) is refused rather than written into.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    create_dirs_0700(dir)?;
    let meta = fs::symlink_metadata(dir)?;
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a plain directory (a symlink or a file): refusing to write there",
            dir.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if meta.uid() != uid() {
            return Err(io::Error::other(format!(
                "{} belongs to uid {}, not to us ({}): refusing to write there",
                dir.display(),
                meta.uid(),
                uid()
            )));
        }
        if meta.mode() & 0o077 != 0 {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        }
    }
    Ok(())
}

/// A settings file we are about to trust (config, rules: they run commands and allow tools)
/// must belong to us or to root: one planted by another user (a shared temp dir) is refused.
pub fn check_owner(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let owner = fs::metadata(path)?.uid();
        if owner != uid() && owner != 0 {
            return Err(io::Error::other(format!(
                "belongs to uid {owner}, not to you ({}): not read",
                uid()
            )));
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// `create_dir_all`, but every directory it creates is 0700 (existing ones are left alone).
pub fn create_dirs_0700(dir: &Path) -> io::Result<()> {
    if dir.as_os_str().is_empty() {
        return Ok(());
    }
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// The parent directory of a file we are about to write: a directory under our data dir is
/// checked as private (with the data dir itself); any other is created 0700 when missing.
pub fn prepare_parent(path: &Path) -> io::Result<()> {
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    let data = data_dir();
    if dir.starts_with(&data) {
        ensure_private_dir(&data)?;
        let mut d = data.clone();
        for c in dir
            .strip_prefix(&data)
            .unwrap_or(Path::new(""))
            .components()
        {
            d.push(c);
            ensure_private_dir(&d)?;
        }
        Ok(())
    } else {
        create_dirs_0700(dir)
    }
}

/// Open `path` for writing as a private file: created 0600, an existing file truncated and
/// set to 0600, a symlink at `path` refused (`O_NOFOLLOW`).
pub fn create_private_file(path: &Path, append: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.create(true);
    if append {
        o.append(true);
    } else {
        o.write(true).truncate(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    let f = o.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    Ok(f)
}

/// Open an existing file of ours to read it and append to it, never through a link, and
/// only a regular file we own (a resume appends a note to a recording the crash left).
pub fn open_private_append(path: &Path) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let f = o.open(path)?;
    let m = f.metadata()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if m.uid() != uid() {
            return Err(io::Error::other("not our file"));
        }
    }
    if !m.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(f)
}

/// Default path of a new recording: `<data dir>/recordings/<UTC time>-<backend>.jsonl`.
pub fn new_recording_path(backend: &str) -> PathBuf {
    // Sessions of a workspace are built in the same second, before any of them creates its
    // file: a name handed out once is never handed out again by this process.
    static GIVEN: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let stamp = crate::utc_stamp(crate::now_ms());
    let dir = recordings_dir();
    let mut path = dir.join(format!("{stamp}-{backend}.jsonl"));
    let mut n = 1;
    while path.exists() || given.contains(&path) {
        n += 1;
        path = dir.join(format!("{stamp}-{backend}-{n}.jsonl"));
    }
    given.push(path.clone());
    path
}

/// Default path of a new workspace manifest: `<data dir>/recordings/workspace-<UTC time>.json`,
/// next to the recordings it lists (a number is added when that name is taken).
pub fn new_manifest_path() -> PathBuf {
    let stamp = crate::utc_stamp(crate::now_ms());
    let dir = recordings_dir();
    let mut path = dir.join(format!("workspace-{stamp}.json"));
    let mut n = 1;
    while path.exists() {
        n += 1;
        path = dir.join(format!("workspace-{stamp}-{n}.json"));
    }
    path
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sb-paths-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn private_dirs_are_0700_and_files_0600() {
        let base = scratch("modes");
        let dir = base.join("a/b");
        ensure_private_dir(&dir).unwrap();
        assert_eq!(mode(&base.join("a")), 0o700);
        assert_eq!(mode(&dir), 0o700);
        // An existing directory of ours with group/other access is tightened.
        let loose = base.join("loose");
        fs::create_dir(&loose).unwrap();
        fs::set_permissions(&loose, fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&loose).unwrap();
        assert_eq!(mode(&loose), 0o700);
        // A new file is 0600, an existing 0644 one becomes 0600.
        let f = dir.join("f");
        create_private_file(&f, false).unwrap();
        assert_eq!(mode(&f), 0o600);
        fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
        create_private_file(&f, true).unwrap();
        assert_eq!(mode(&f), 0o600);
        fs::remove_dir_all(base).ok();
    }

    #[test]
    fn planted_links_are_refused() {
        let base = scratch("links");
        let victim = base.join("victim");
        fs::create_dir(&victim).unwrap();
        // Someone made our fallback dir name a link to their directory.
        let fallback = fallback_dir(&base, "switchboard");
        assert!(fallback.ends_with(format!("switchboard-{}", uid())));
        std::os::unix::fs::symlink(&victim, &fallback).unwrap();
        let e = ensure_private_dir(&fallback).unwrap_err();
        assert!(e.to_string().contains("not a plain directory"), "{e}");
        // A link where a file will be written is not followed.
        let target = base.join("target.txt");
        fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, base.join("rec.jsonl")).unwrap();
        assert!(create_private_file(&base.join("rec.jsonl"), false).is_err());
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
        fs::remove_dir_all(base).ok();
    }

    #[test]
    fn a_directory_owned_by_someone_else_is_refused() {
        // Root can hand a directory to `nobody`; anyone else finds `/` owned by root.
        let (dir, owner) = if uid() == 0 {
            let d = scratch("owner").join("theirs");
            fs::create_dir(&d).unwrap();
            std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
            (d, 65534)
        } else {
            (PathBuf::from("/"), 0)
        };
        let e = ensure_private_dir(&dir).unwrap_err();
        assert!(
            e.to_string().contains(&format!("belongs to uid {owner}")),
            "{e}"
        );
        if uid() == 0 {
            fs::remove_dir_all(dir.parent().unwrap()).ok();
        }
    }
}
