//! Files an agent names, opened beneath a directory handle so that no symlink, `..` or race
//! can lead outside it.
//!
//! A `Root` holds an open handle on a directory (the session's cwd). Every path is resolved by
//! the kernel relative to that handle (`cap-std`: `openat2` with `RESOLVE_BENEATH` on Linux, a
//! component-by-component walk elsewhere), so a link that points outside, a link swapped in
//! after a check, or `..` fails to open instead of escaping. Nothing here checks a path string
//! and then opens it by name.
//!
//! ACP names absolute paths: `Root::relative` turns one inside the root into the relative rest,
//! and refuses everything else. Backends that name relative paths (the gateway) use the
//! relative forms directly.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

/// Why a request for a path was not served.
#[derive(Debug)]
pub enum FsError {
    /// The path is not beneath the root (absolute elsewhere, `..` above it, a link out).
    Outside(String),
    /// The file is larger than the read cap allows.
    TooLarge {
        cap: u64,
    },
    /// The file is not UTF-8 text.
    NotText,
    NotFound,
    /// The file is no longer what the card showed when the write was approved.
    Changed,
    Io(io::Error),
}

const CHANGED: &str = "the file changed since the card showed it";

impl std::fmt::Display for FsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FsError::Outside(why) => f.write_str(why),
            FsError::TooLarge { cap } => write!(
                f,
                "the file is larger than {cap} bytes: read it in parts with line and limit"
            ),
            FsError::NotText => f.write_str("the file is not UTF-8 text"),
            FsError::NotFound => f.write_str("no such file"),
            FsError::Changed => f.write_str(
                "the file changed since the write was approved: not written (ask again)",
            ),
            FsError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<io::Error> for FsError {
    fn from(e: io::Error) -> FsError {
        match e.kind() {
            io::ErrorKind::NotFound => FsError::NotFound,
            io::ErrorKind::InvalidData => FsError::NotText,
            // What RESOLVE_BENEATH (or cap-std's own walk) reports for an escape.
            _ if is_escape(&e) => FsError::Outside(format!(
                "the path leads outside the session directory ({e})"
            )),
            _ => FsError::Io(e),
        }
    }
}

fn is_escape(e: &io::Error) -> bool {
    // EXDEV from openat2 RESOLVE_BENEATH; cap-std's own walk reports PermissionDenied with
    // "a path led outside of the filesystem".
    e.raw_os_error() == Some(libc::EXDEV) || e.to_string().contains("outside of the filesystem")
}

/// SHA-256 of a file's bytes.
pub type Digest = [u8; 32];

pub fn digest(bytes: &[u8]) -> Digest {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).into()
}

/// The most a read returns, and the most of a file it reads to get there.
pub const READ_CAP: u64 = 8 * 1024 * 1024;

/// A directory that agent-named paths are confined to.
#[derive(Debug)]
pub struct Root {
    dir: Dir,
    /// Where it is, symlinks resolved: the prefix absolute paths are matched against.
    path: PathBuf,
}

impl Root {
    /// Open `path` (resolved to its real location) as a root.
    pub fn open(path: &Path) -> io::Result<Root> {
        let real = std::fs::canonicalize(path)?;
        let dir = Dir::open_ambient_dir(&real, ambient_authority())?;
        Ok(Root { dir, path: real })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory handle itself, for callers that check relative paths on their own
    /// (the gateway) and need operations beyond the ones here.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// The relative rest of an absolute path that lies inside the root, lexically normalised
    /// (`..` is resolved against the path as written, never followed through a link).
    /// A relative path, or one outside the root, is refused.
    pub fn relative(&self, abs: &Path) -> Result<PathBuf, FsError> {
        if !abs.is_absolute() {
            return Err(FsError::Outside(format!(
                "path {} is not absolute",
                abs.display()
            )));
        }
        let mut norm = PathBuf::new();
        for c in abs.components() {
            match c {
                Component::ParentDir => {
                    norm.pop();
                }
                Component::CurDir => {}
                c => norm.push(c),
            }
        }
        match norm.strip_prefix(&self.path) {
            Ok(rest) => Ok(rest.to_path_buf()),
            Err(_) => Err(FsError::Outside(format!(
                "path {} is outside the session directory {}",
                abs.display(),
                self.path.display()
            ))),
        }
    }

    /// Check a relative path lexically: no absolute or prefix parts, no `..` above the root.
    /// (The kernel enforces the same again at open, symlinks included.)
    fn checked(rel: &Path) -> Result<PathBuf, FsError> {
        let mut out = PathBuf::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => out.push(n),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !out.pop() {
                        return Err(FsError::Outside(format!(
                            "path {} climbs above the session directory",
                            rel.display()
                        )));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(FsError::Outside(format!(
                        "path {} is not relative to the session directory",
                        rel.display()
                    )));
                }
            }
        }
        Ok(out)
    }

    /// The directory `rel` names, opened beneath the root with every link in it resolved
    /// there, and where it really is (relative to the root). A link leading outside, or to
    /// something that is not a directory, is refused.
    pub fn open_dir(&self, rel: &Path) -> Result<(PathBuf, std::fs::File), FsError> {
        let rel = Self::checked(rel)?;
        if rel.as_os_str().is_empty() {
            return Ok((rel, self.dir.try_clone()?.into_std_file()));
        }
        let real = self
            .dir
            .canonicalize(&rel)
            .map_err(|e| match FsError::from(e) {
                FsError::Io(e) => FsError::Outside(format!(
                    "{} leads outside the session directory ({e})",
                    rel.display()
                )),
                other => other,
            })?;
        let dir = self.dir.open_dir(&real)?;
        Ok((real, dir.into_std_file()))
    }

    /// Metadata of `rel` (links followed, beneath the root only).
    pub fn metadata(&self, rel: &Path) -> Result<cap_std::fs::Metadata, FsError> {
        let rel = Self::checked(rel)?;
        Ok(self.dir.metadata(&rel)?)
    }

    /// The whole file as text, at most `cap` bytes of it; larger is `TooLarge`.
    pub fn read_text(&self, rel: &Path, cap: u64) -> Result<String, FsError> {
        self.read_lines(rel, None, None, cap)
    }

    /// The file as text, or `None` when it does not exist.
    pub fn read_text_opt(&self, rel: &Path, cap: u64) -> Result<Option<String>, FsError> {
        match self.read_text(rel, cap) {
            Ok(t) => Ok(Some(t)),
            Err(FsError::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Lines `line..line+limit` (1-based; `None`: from the start, to the end) as text. Reads
    /// only as far as needed and never more than `cap` bytes of the file: a window at the
    /// start of a huge file is served, the whole of it is `TooLarge`.
    pub fn read_lines(
        &self,
        rel: &Path,
        line: Option<u32>,
        limit: Option<u32>,
        cap: u64,
    ) -> Result<String, FsError> {
        let rel = Self::checked(rel)?;
        let mut o = OpenOptions::new();
        o.read(true);
        // A FIFO or device must not block the open: only regular files are read.
        #[cfg(unix)]
        cap_std::fs::OpenOptionsExt::custom_flags(&mut o, libc::O_NONBLOCK);
        let file = self.dir.open_with(&rel, &o)?.into_std();
        if !file.metadata()?.is_file() {
            return Err(FsError::Io(io::Error::other("not a regular file")));
        }
        let mut r = BufReader::new(file.take(cap.saturating_add(1)));
        let skip = line.unwrap_or(1).max(1) as usize - 1;
        let take = limit.map_or(usize::MAX, |l| l as usize);
        let (mut read, mut seen) = (0u64, 0usize);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while seen < skip.saturating_add(take) {
            buf.clear();
            let n = r.read_until(b'\n', &mut buf)?;
            if n == 0 {
                break;
            }
            read += n as u64;
            if read > cap {
                return Err(FsError::TooLarge { cap });
            }
            if seen >= skip {
                out.extend_from_slice(&buf);
            }
            seen += 1;
        }
        String::from_utf8(out).map_err(|_| FsError::NotText)
    }

    /// Replace (or create) `rel` with `bytes`, atomically: a temporary file in the same
    /// directory, synced, then renamed over the name. Missing parent directories are created
    /// beneath the root. An existing file keeps its permissions. A symlink at `rel` is
    /// followed only to a file beneath the root (that file is replaced, the link kept);
    /// a dangling link or one leading out is refused.
    pub fn write_atomic(&self, rel: &Path, bytes: &[u8]) -> Result<(), FsError> {
        self.write_atomic_if(rel, bytes, None)
    }

    /// `write_atomic`, when `expect` is `Some(base)`, only if the file is still `base` just
    /// before the rename (`Some(None)`: it must not exist; `Some(Some(d))`: its SHA-256 is
    /// `d`): a file changed since a person approved a diff of it is refused, not replaced.
    pub fn write_atomic_if(
        &self,
        rel: &Path,
        bytes: &[u8],
        expect: Option<Option<Digest>>,
    ) -> Result<(), FsError> {
        self.write_atomic_with(rel, bytes, expect, None)
    }

    /// The directory `rel` (already checked) is in, opened beneath the root.
    fn parent_of(&self, rel: &Path) -> io::Result<Dir> {
        match rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            None => self.dir.try_clone(),
            Some(p) => self.dir.open_dir(p),
        }
    }

    /// `write_atomic`, private whatever it was before: created 0600, and an existing file
    /// (one restored from a backup at 0644) made 0600 too. The workspace manifest is written
    /// this way.
    #[cfg(unix)]
    pub fn write_atomic_private(&self, rel: &Path, bytes: &[u8]) -> Result<(), FsError> {
        use cap_std::fs::PermissionsExt as _;
        self.write_atomic_with(rel, bytes, None, Some(0o600))?;
        let rel = Self::checked(rel)?;
        self.dir
            .set_permissions(&rel, cap_std::fs::Permissions::from_mode(0o600))?;
        Ok(())
    }

    /// `write_atomic_if`, a file it creates getting `new_mode` (before the umask; `None`:
    /// 0666) from its first byte on. The rules file is written this way too (0600).
    pub fn write_atomic_with(
        &self,
        rel: &Path,
        bytes: &[u8],
        expect: Option<Option<Digest>>,
        new_mode: Option<u32>,
    ) -> Result<(), FsError> {
        let mut rel = Self::checked(rel)?;
        if rel.as_os_str().is_empty() {
            return Err(FsError::Io(io::Error::other(
                "cannot write the directory itself",
            )));
        }
        if let Ok(m) = self.dir.symlink_metadata(&rel)
            && m.file_type().is_symlink()
        {
            // Resolved by cap-std beneath the root: a link out or to nothing fails here.
            rel = self
                .dir
                .canonicalize(&rel)
                .map_err(|e| match FsError::from(e) {
                    FsError::NotFound => FsError::Outside(format!(
                        "{} is a symlink to a file that does not exist",
                        rel.display()
                    )),
                    FsError::Io(e) => FsError::Outside(format!(
                        "{} is a symlink that leads outside the session directory ({e})",
                        rel.display()
                    )),
                    other => other,
                })?;
        }
        let name = rel
            .file_name()
            .ok_or_else(|| FsError::Io(io::Error::other("no file name")))?
            .to_owned();
        let parent = match self.parent_of(&rel) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let parent_rel = rel.parent().unwrap_or(Path::new(""));
                self.dir.create_dir_all(parent_rel)?;
                self.dir.open_dir(parent_rel)?
            }
            Err(e) => return Err(e.into()),
        };
        // From here on every step is relative to the parent's handle: swapping a component
        // of the path for a link now changes nothing about where the bytes go.
        // Only a regular file is replaced (never a directory, FIFO or device); it keeps its mode.
        let mode = match parent.symlink_metadata(&name) {
            Ok(m) if m.is_file() => Some(m.permissions()),
            Ok(_) => {
                return Err(FsError::Io(io::Error::other("not a regular file")));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        let mut attempt = 0u32;
        let (tmp, file) = loop {
            let tmp = PathBuf::from(stale::temp_name(
                &name.to_string_lossy(),
                std::process::id(),
                attempt,
            ));
            let mut o = OpenOptions::new();
            o.write(true).create_new(true);
            #[cfg(unix)]
            cap_std::fs::OpenOptionsExt::mode(&mut o, new_mode.unwrap_or(0o666));
            match parent.open_with(&tmp, &o) {
                Ok(f) => break (tmp, f.into_std()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 64 => attempt += 1,
                Err(e) => return Err(e.into()),
            }
        };
        let written = (|| {
            let mut file = file;
            #[cfg(unix)]
            if let Some(p) = &mode {
                use cap_std::fs::PermissionsExt as _;
                use std::os::unix::fs::PermissionsExt as _;
                file.set_permissions(std::fs::Permissions::from_mode(p.mode() & 0o7777))?;
            }
            file.write_all(bytes)?;
            file.sync_all()?;
            if let Some(want) = expect {
                let now = match parent.open(&name) {
                    Ok(f) => {
                        let mut cur = Vec::new();
                        f.into_std().take(READ_CAP + 1).read_to_end(&mut cur)?;
                        Some(digest(&cur))
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                    Err(e) => return Err(e),
                };
                if now != want {
                    return Err(io::Error::other(CHANGED));
                }
            }
            parent.rename(&tmp, &parent, &name)
        })();
        if let Err(e) = written {
            let _ = parent.remove_file(&tmp);
            if e.to_string() == CHANGED {
                return Err(FsError::Changed);
            }
            return Err(e.into());
        }
        // The rename itself is durable once the directory is synced.
        if let Ok(d) = parent.open(".") {
            let _ = d.into_std().sync_all();
        }
        Ok(())
    }
}

mod stale;

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt, symlink};

    struct Scratch {
        base: PathBuf,
        cwd: PathBuf,
        outside: PathBuf,
    }

    impl Scratch {
        fn new(tag: &str) -> Scratch {
            let base =
                std::env::temp_dir().join(format!("sb-contain-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&base);
            let cwd = base.join("cwd");
            let outside = base.join("outside");
            std::fs::create_dir_all(&cwd).unwrap();
            std::fs::create_dir_all(&outside).unwrap();
            let base = std::fs::canonicalize(base).unwrap();
            Scratch {
                cwd: base.join("cwd"),
                outside: base.join("outside"),
                base,
            }
        }
        fn root(&self) -> Root {
            Root::open(&self.cwd).unwrap()
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.base);
        }
    }

    fn outside(e: Result<impl std::fmt::Debug, FsError>) {
        match e {
            Err(FsError::Outside(_)) => {}
            other => panic!("expected a refusal as outside, got {other:?}"),
        }
    }

    #[test]
    fn a_working_directory_is_opened_beneath_the_root_and_says_where_it_is() {
        let s = Scratch::new("opendir");
        std::fs::create_dir_all(s.cwd.join("sub")).unwrap();
        symlink(&s.outside, s.cwd.join("home")).unwrap();
        symlink("sub", s.cwd.join("alias")).unwrap();
        std::fs::write(s.cwd.join("file"), "x").unwrap();
        let r = s.root();
        assert_eq!(r.open_dir(Path::new("")).unwrap().0, PathBuf::new());
        assert_eq!(
            r.open_dir(Path::new("sub")).unwrap().0,
            PathBuf::from("sub")
        );
        // A link inside resolves to where it leads; one out (`build -> ~`) is refused.
        assert_eq!(
            r.open_dir(Path::new("alias")).unwrap().0,
            PathBuf::from("sub")
        );
        outside(r.open_dir(Path::new("home")));
        outside(r.open_dir(Path::new("../outside")));
        assert!(r.open_dir(Path::new("file")).is_err(), "not a directory");
        assert!(r.open_dir(Path::new("missing")).is_err());
    }

    #[test]
    fn a_write_is_refused_when_the_file_changed_since_the_card() {
        let s = Scratch::new("changed");
        let r = s.root();
        let f = s.cwd.join("f.txt");
        std::fs::write(&f, "shown\n").unwrap();
        let shown = Some(digest(b"shown\n"));
        // Changed after the card: refused, the file keeps the newer text, no temporary left.
        std::fs::write(&f, "changed\n").unwrap();
        assert!(matches!(
            r.write_atomic_if(Path::new("f.txt"), b"new\n", Some(shown)),
            Err(FsError::Changed)
        ));
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "changed\n");
        assert_eq!(std::fs::read_dir(&s.cwd).unwrap().count(), 1);
        // Shown as missing, created since: refused too.
        assert!(matches!(
            r.write_atomic_if(Path::new("f.txt"), b"new\n", Some(None)),
            Err(FsError::Changed)
        ));
        // Still what was shown: written.
        r.write_atomic_if(
            Path::new("f.txt"),
            b"new\n",
            Some(Some(digest(b"changed\n"))),
        )
        .unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new\n");
        r.write_atomic_if(Path::new("g.txt"), b"g", Some(None))
            .unwrap();
        assert_eq!(std::fs::read_to_string(s.cwd.join("g.txt")).unwrap(), "g");
    }

    #[test]
    fn a_dangling_link_to_outside_is_not_written_through() {
        let s = Scratch::new("dangling");
        symlink(s.outside.join("new.txt"), s.cwd.join("dangling")).unwrap();
        let r = s.root();
        outside(r.write_atomic(Path::new("dangling"), b"pwned"));
        assert!(
            !s.outside.join("new.txt").exists(),
            "nothing written outside"
        );
        // The absolute form is mapped to the same relative path and refused the same way.
        let rel = r.relative(&s.cwd.join("dangling")).unwrap();
        outside(r.write_atomic(&rel, b"pwned"));
        assert!(!s.outside.join("new.txt").exists());
    }

    #[test]
    fn a_link_to_a_directory_outside_is_refused_for_read_and_write() {
        let s = Scratch::new("dirlink");
        std::fs::write(s.outside.join("secret.txt"), "secret").unwrap();
        symlink(&s.outside, s.cwd.join("link")).unwrap();
        let r = s.root();
        outside(r.read_text(Path::new("link/secret.txt"), READ_CAP));
        outside(r.write_atomic(Path::new("link/new.txt"), b"x"));
        outside(r.write_atomic(Path::new("link/secret.txt"), b"x"));
        outside(r.metadata(Path::new("link/secret.txt")));
        assert_eq!(
            std::fs::read_to_string(s.outside.join("secret.txt")).unwrap(),
            "secret"
        );
        assert!(!s.outside.join("new.txt").exists());
    }

    #[test]
    fn a_link_swapped_in_after_the_check_is_not_followed() {
        let s = Scratch::new("swap");
        std::fs::create_dir(s.cwd.join("sub")).unwrap();
        let r = s.root();
        // The gate saw a real directory `sub` ...
        let rel = r.relative(&s.cwd.join("sub/f.txt")).unwrap();
        assert!(r.metadata(Path::new("sub")).unwrap().is_dir());
        // ... which is swapped for a link outside before the write happens.
        std::fs::remove_dir(s.cwd.join("sub")).unwrap();
        symlink(&s.outside, s.cwd.join("sub")).unwrap();
        outside(r.write_atomic(&rel, b"pwned"));
        assert!(!s.outside.join("f.txt").exists());
        // The same for the file itself swapped for a link to a file outside.
        std::fs::write(s.outside.join("target"), "keep").unwrap();
        std::fs::write(s.cwd.join("g.txt"), "mine").unwrap();
        std::fs::remove_file(s.cwd.join("g.txt")).unwrap();
        symlink(s.outside.join("target"), s.cwd.join("g.txt")).unwrap();
        outside(r.write_atomic(Path::new("g.txt"), b"pwned"));
        assert_eq!(
            std::fs::read_to_string(s.outside.join("target")).unwrap(),
            "keep"
        );
    }

    #[test]
    fn dot_dot_and_absolute_paths_are_refused() {
        let s = Scratch::new("dotdot");
        std::fs::write(s.outside.join("secret.txt"), "secret").unwrap();
        let r = s.root();
        outside(r.read_text(Path::new("../outside/secret.txt"), READ_CAP));
        outside(r.write_atomic(Path::new("a/../../outside/x"), b"x"));
        outside(r.read_text(&s.outside.join("secret.txt"), READ_CAP));
        outside(r.relative(&s.outside.join("secret.txt")));
        outside(r.relative(&s.cwd.join("../outside/secret.txt")));
        outside(r.relative(Path::new("relative.txt")));
        // A sibling whose name only starts with the root's is outside too.
        outside(r.relative(&s.base.join("cwdx/f")));
        // Inside, `..` that stays inside is fine.
        assert_eq!(
            r.relative(&s.cwd.join("a/../b.txt")).unwrap(),
            PathBuf::from("b.txt")
        );
        assert!(!s.outside.join("x").exists());
    }

    #[test]
    fn writes_inside_create_parents_keep_modes_and_follow_inside_links() {
        use std::os::unix::fs::PermissionsExt;
        let s = Scratch::new("inside");
        let r = s.root();
        r.write_atomic(Path::new("new/dir/f.txt"), b"one").unwrap();
        assert_eq!(
            std::fs::read_to_string(s.cwd.join("new/dir/f.txt")).unwrap(),
            "one"
        );
        let script = s.cwd.join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
        r.write_atomic(Path::new("run.sh"), b"new").unwrap();
        let m = std::fs::metadata(&script).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o751);
        // A link to a file inside: the file is replaced, the link stays.
        symlink("new/dir/f.txt", s.cwd.join("alias")).unwrap();
        r.write_atomic(Path::new("alias"), b"two").unwrap();
        assert!(
            std::fs::symlink_metadata(s.cwd.join("alias"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read_to_string(s.cwd.join("new/dir/f.txt")).unwrap(),
            "two"
        );
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(&s.cwd)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    #[test]
    fn reads_are_capped_and_honour_line_and_limit() {
        let s = Scratch::new("read");
        let r = s.root();
        std::fs::write(s.cwd.join("f.txt"), "a\nb\nc\nd\n").unwrap();
        assert_eq!(
            r.read_text(Path::new("f.txt"), READ_CAP).unwrap(),
            "a\nb\nc\nd\n"
        );
        let win = r.read_lines(Path::new("f.txt"), Some(2), Some(2), READ_CAP);
        assert_eq!(win.unwrap(), "b\nc\n");
        let head = r.read_lines(Path::new("f.txt"), None, Some(1), READ_CAP);
        assert_eq!(head.unwrap(), "a\n");
        // Larger than the cap: refused whole, but a window at its start is served.
        let big = "x".repeat(99) + "\n";
        std::fs::write(s.cwd.join("big.txt"), big.repeat(100)).unwrap();
        match r.read_text(Path::new("big.txt"), 1000) {
            Err(FsError::TooLarge { cap: 1000 }) => {}
            other => panic!("{other:?}"),
        }
        let first = r.read_lines(Path::new("big.txt"), Some(1), Some(3), 1000);
        assert_eq!(first.unwrap(), big.repeat(3));
        assert!(matches!(
            r.read_lines(Path::new("big.txt"), Some(50), Some(1), 1000),
            Err(FsError::TooLarge { .. })
        ));
        assert!(matches!(
            r.read_text_opt(Path::new("missing"), 10),
            Ok(None)
        ));
        // A FIFO neither blocks the read nor is replaced by a write.
        let fifo = s.cwd.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            r.read_text(Path::new("fifo"), 10),
            Err(FsError::Io(_))
        ));
        assert!(r.write_atomic(Path::new("fifo"), b"x").is_err());
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
        std::fs::write(s.cwd.join("bin"), [0xff, 0xfe]).unwrap();
        assert!(matches!(
            r.read_text(Path::new("bin"), 10),
            Err(FsError::NotText)
        ));
    }
}
