//! Where hosts live: a private directory of sockets and locks, one pair per host name.
//!
//! `$XDG_RUNTIME_DIR/switchboard/` (else `$TMPDIR/switchboard-UID/`), created 0700 and refused
//! when it is anyone else's or open to others. A host holds `NAME.lock` (an `flock`, released
//! by the kernel however the host dies) and listens on `NAME.sock` (0600). The lock, not the
//! socket, says whether a host is alive: a socket without a held lock is a crashed host's,
//! and the next host of that name replaces it.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The directory of host sockets, created private if missing.
pub fn runtime_dir() -> Result<PathBuf, String> {
    // A runtime dir that is set but missing (a session without one) is not used.
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(d) if d.is_absolute() && d.is_dir() => d.join("switchboard"),
        _ => std::env::temp_dir().join(format!("switchboard-{}", uid())),
    };
    private_dir(&dir)?;
    Ok(dir)
}

/// Where hosts listen, if that directory is there and private (never created: a hook asks
/// where a host is without leaving anything behind).
pub fn existing_runtime_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(d) if d.is_absolute() && d.is_dir() => d.join("switchboard"),
        _ => std::env::temp_dir().join(format!("switchboard-{}", uid())),
    };
    let m = std::fs::symlink_metadata(&dir).ok()?;
    (m.is_dir() && m.uid() == uid() && m.mode() & 0o077 == 0).then_some(dir)
}

/// Create `dir` 0700, or check the one there is ours, a directory (not a link) and closed to
/// others: in a shared `/tmp` another user could have made it first.
pub fn private_dir(dir: &Path) -> Result<(), String> {
    let made = std::fs::DirBuilder::new().mode(0o700).create(dir);
    if let Err(e) = &made
        && e.kind() != io::ErrorKind::AlreadyExists
    {
        return Err(format!("cannot create {}: {e}", dir.display()));
    }
    let m = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !m.is_dir() || m.uid() != uid() || m.mode() & 0o077 != 0 {
        return Err(format!(
            "{} is not a private directory of ours (it must be a directory owned by uid {} \
             with mode 0700); refusing to put host sockets there",
            dir.display(),
            uid()
        ));
    }
    Ok(())
}

pub fn uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

/// A host name: what `attach`, `ls` and `stop` take. Letters, digits, `.`, `_`, `-`.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "host name {:?}: use 1 to 64 letters, digits, '.', '_' or '-' (not starting with '.')",
            switchboard_core::text::neutralize(name)
        ))
    }
}

pub fn socket_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.sock"))
}

fn lock_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.lock"))
}

/// What a host whose socket was gone did about it (`Placed::replace_if_gone`).
#[derive(Debug)]
pub enum Relisten {
    /// It listens again where clients look, on this.
    Again(tokio::net::UnixListener),
    /// It cannot now (the directory, the lock or the socket failed): tried again later.
    Later(String),
    /// Another live host of the same name holds the name there: this one is unreachable for
    /// good and must stop (docs/host.md, "one reachable host per name").
    Lost(String),
}

/// The lock of a running host: held for its lifetime.
#[derive(Debug)]
pub struct HostLock {
    file: File,
}

/// The inode of `path` itself (not followed), if it is there.
pub fn inode(path: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// Where a host is found: its socket (whose inode is its listener's) and its lock.
#[derive(Debug)]
pub struct Placed {
    pub dir: PathBuf,
    pub name: String,
    pub lock: HostLock,
    socket: Option<(u64, u64)>,
}

impl Placed {
    /// Bind host `name`'s socket in `dir` with its lock held.
    pub fn bind(
        dir: PathBuf,
        name: &str,
        lock: HostLock,
    ) -> Result<(Placed, tokio::net::UnixListener), String> {
        let listener = bind(&dir, name, &lock)?;
        let socket = inode(&socket_path(&dir, name));
        Ok((
            Placed {
                dir,
                name: name.to_string(),
                lock,
                socket,
            },
            listener,
        ))
    }

    /// The socket this host bound is still where clients look for it.
    fn intact(&self, dir: &Path) -> bool {
        dir == self.dir
            && self.lock_linked()
            && self.socket.is_some()
            && inode(&socket_path(dir, &self.name)) == self.socket
    }

    /// Our lock file is still in a directory: once it is not (the directory was removed), an
    /// inode number seen there again is another file's, however equal.
    fn lock_linked(&self) -> bool {
        self.lock.file.metadata().is_ok_and(|m| m.nlink() > 0)
    }

    /// If the socket is gone from where clients look (the runtime directory was removed, as
    /// logind does at a user's last logout, or the socket was deleted), make it again there:
    /// a host that outlives its terminal must stay reachable. `None`: nothing to do, or the
    /// directory cannot be had now (tried again later).
    pub fn replace_if_gone(&mut self) -> Option<Relisten> {
        self.replace_in(runtime_dir().ok()?)
    }

    fn replace_in(&mut self, dir: PathBuf) -> Option<Relisten> {
        if self.intact(&dir) {
            return None;
        }
        // Our lock file, if it is still there, is held by us; otherwise take a new one.
        let lock = if dir == self.dir
            && self.lock_linked()
            && inode(&lock_path(&dir, &self.name)) == self.lock_inode()
        {
            None
        } else {
            match lock(&dir, &self.name) {
                Ok(Some(l)) => Some(l),
                // A host of this name started while ours was unreachable, and holds the name
                // where clients look: it is the one they reach now. Ours can never be reached
                // again, so it must not go on running agents nobody sees.
                Ok(None) => {
                    return Some(Relisten::Lost(format!(
                        "another host named {} started in {} while this one's directory was gone, and \
                         is the one clients reach now",
                        self.name,
                        dir.display()
                    )));
                }
                Err(e) => return Some(Relisten::Later(e)),
            }
        };
        let listener = match bind(&dir, &self.name, lock.as_ref().unwrap_or(&self.lock)) {
            Ok(l) => l,
            Err(e) => return Some(Relisten::Later(e)),
        };
        self.remove_socket();
        if let Some(l) = lock {
            self.lock = l;
        }
        self.dir = dir;
        self.socket = inode(&socket_path(&self.dir, &self.name));
        Some(Relisten::Again(listener))
    }

    fn lock_inode(&self) -> Option<(u64, u64)> {
        self.lock.file.metadata().ok().map(|m| (m.dev(), m.ino()))
    }

    /// Remove the socket this host bound (if it is still that one), its lock still held.
    pub fn remove_socket(&self) {
        let path = socket_path(&self.dir, &self.name);
        if self.socket.is_some() && inode(&path) == self.socket {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Take host `name`'s lock. `Ok(None)`: another host of that name holds it.
pub fn lock(dir: &Path, name: &str) -> Result<Option<HostLock>, String> {
    // Every path a host makes is built from its name: one that is not a plain word (`../x`)
    // never reaches one, whoever passed it.
    check_name(name)?;
    let path = lock_path(dir, name);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor we own.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        Ok(Some(HostLock { file }))
    } else {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(None)
        } else {
            Err(format!("{}: {e}", path.display()))
        }
    }
}

/// Take host `name`'s lock as the host does: `ls`, `attach` and a starting front probe the
/// lock by taking it for a moment, so a lock held only that long is waited out.
pub fn lock_as_host(dir: &Path, name: &str) -> Result<Option<HostLock>, String> {
    let until = std::time::Instant::now() + std::time::Duration::from_millis(500);
    loop {
        match lock(dir, name)? {
            Some(l) => return Ok(Some(l)),
            None if std::time::Instant::now() >= until => return Ok(None),
            None => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
}

/// Whether a host named `name` is running (its lock is held).
pub fn running(dir: &Path, name: &str) -> bool {
    matches!(lock(dir, name), Ok(None))
}

/// Listen as host `name` (the lock held): a crashed host's socket is removed first; the new
/// one is 0600.
pub fn bind(dir: &Path, name: &str, _held: &HostLock) -> Result<tokio::net::UnixListener, String> {
    check_name(name)?;
    let path = socket_path(dir, name);
    match std::fs::remove_file(&path) {
        Ok(()) => tracing::info!(
            "replaced the stale socket of a host that is gone: {}",
            path.display()
        ),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", path.display())),
    }
    let listener =
        tokio::net::UnixListener::bind(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(listener)
}

/// A connection is let in only from our own uid (the directory is 0700 as well; this holds
/// even if someone loosened it).
pub fn check_peer(stream: &tokio::net::UnixStream, ours: u32) -> Result<(), String> {
    let cred = stream
        .peer_cred()
        .map_err(|e| format!("cannot read the peer's credentials: {e}"))?;
    if cred.uid() == ours {
        Ok(())
    } else {
        Err(format!(
            "a connection from uid {} refused (this host is uid {ours}'s)",
            cred.uid()
        ))
    }
}

/// The names of the hosts with a socket here, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().into_string().ok()?;
            let name = n.strip_suffix(".sock")?;
            check_name(name).ok().map(|()| name.to_string())
        })
        .collect();
    out.sort();
    out
}

/// Remove a dead host's socket, holding its lock meanwhile: a host that started since the
/// socket was judged stale holds the lock, and its socket stays. The lock file itself is
/// never removed: a host holding it would be unseen by the next one, which would make its
/// own.
pub fn remove_stale(dir: &Path, name: &str) {
    if let Ok(Some(_held)) = lock(dir, name) {
        let _ = std::fs::remove_file(socket_path(dir, name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sb-place-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn names_are_plain_words() {
        for ok in ["demo", "work-1", "a.b_c"] {
            check_name(ok).unwrap();
        }
        for bad in [
            "",
            ".hidden",
            "a/b",
            "../x",
            "sp ace",
            "e\u{1b}[2J",
            &"x".repeat(65),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_directory_is_private_and_a_loose_one_is_refused() {
        let d = temp("dir");
        private_dir(&d).unwrap();
        let mode = std::fs::metadata(&d).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(
            private_dir(&d)
                .unwrap_err()
                .contains("not a private directory")
        );
        std::fs::remove_dir_all(&d).unwrap();
        // A link planted where the directory goes is refused too.
        let target = temp("target");
        private_dir(&target).unwrap();
        std::os::unix::fs::symlink(&target, &d).unwrap();
        assert!(private_dir(&d).is_err());
        let _ = std::fs::remove_file(&d);
        let _ = std::fs::remove_dir_all(&target);
    }

    #[tokio::test]
    async fn one_host_per_name_a_private_socket_and_the_peer_checked() {
        let d = temp("lock");
        private_dir(&d).unwrap();
        let held = lock(&d, "w").unwrap().expect("free");
        assert!(
            lock(&d, "w").unwrap().is_none(),
            "a second host of the name"
        );
        assert!(running(&d, "w"));
        // A stale socket (a crashed host's) is replaced.
        std::fs::write(socket_path(&d, "w"), b"").unwrap();
        let listener = bind(&d, "w", &held).unwrap();
        let mode = std::fs::metadata(socket_path(&d, "w")).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(names(&d), vec!["w".to_string()]);
        let client = tokio::net::UnixStream::connect(socket_path(&d, "w"))
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        check_peer(&server, uid()).unwrap();
        let other = uid().wrapping_add(1);
        let e = check_peer(&server, other).unwrap_err();
        assert!(e.contains("refused"), "{e}");
        // `ls` judging the socket stale just before this host took the lock removes nothing
        // while the host holds it.
        remove_stale(&d, "w");
        assert!(
            socket_path(&d, "w").exists(),
            "a live host's socket was removed"
        );
        drop(client);
        drop(listener);
        drop(held);
        // Another test of this process forking meanwhile holds a copy of the descriptor until
        // its child execs (O_CLOEXEC closes it then): allow it that moment.
        let t = std::time::Instant::now();
        while running(&d, "w") {
            assert!(
                t.elapsed() < std::time::Duration::from_secs(5),
                "the lock goes with the host"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // Now it is a crashed host's: its socket goes, its lock file stays (a host could be
        // taking it).
        remove_stale(&d, "w");
        assert!(!socket_path(&d, "w").exists());
        assert!(lock_path(&d, "w").exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    /// The runtime directory removed under a running host (logind at the last logout): it
    /// listens again where clients look, with a new lock, and a client gets through.
    #[tokio::test]
    async fn a_host_whose_directory_went_listens_again() {
        let d = temp("gone");
        private_dir(&d).unwrap();
        let held = lock(&d, "g").unwrap().expect("free");
        let (mut placed, _old) = Placed::bind(d.clone(), "g", held).unwrap();
        assert!(placed.intact(&d));
        std::fs::remove_dir_all(&d).unwrap();
        assert!(!placed.intact(&d));
        private_dir(&d).unwrap();
        let Some(Relisten::Again(listener)) = placed.replace_in(d.clone()) else {
            panic!("not listening again")
        };
        assert!(placed.intact(&d));
        assert!(running(&d, "g"), "the new lock is held");
        let _c = tokio::net::UnixStream::connect(socket_path(&d, "g"))
            .await
            .unwrap();
        listener.accept().await.unwrap();
        // Intact now: nothing to do.
        assert!(placed.replace_in(d.clone()).is_none());
        let _ = std::fs::remove_dir_all(&d);
    }

    /// The directory removed while this host could not act (stopped, suspended), and a second
    /// host of the name started in the new one: the first finds the name held there and is
    /// told it is unreachable for good (the host loop then stops its workspace), never left
    /// running unseen; the second keeps its socket.
    #[tokio::test]
    async fn a_host_whose_name_was_taken_meanwhile_is_told_it_lost() {
        let d = temp("lost");
        private_dir(&d).unwrap();
        let (mut first, _l1) =
            Placed::bind(d.clone(), "n", lock(&d, "n").unwrap().unwrap()).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
        private_dir(&d).unwrap();
        let (second, _l2) =
            Placed::bind(d.clone(), "n", lock(&d, "n").unwrap().expect("free")).unwrap();
        match first.replace_in(d.clone()) {
            Some(Relisten::Lost(why)) => assert!(why.contains("another host named n"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(second.intact(&d), "the second host's socket stays");
        first.remove_socket();
        assert!(
            second.intact(&d),
            "the loser removes nothing of the winner's"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    /// No name that is not a plain word reaches a path, whoever passes it.
    #[test]
    fn a_path_in_a_name_reaches_no_path() {
        let d = temp("names");
        private_dir(&d).unwrap();
        for bad in ["../x", "a/b", "/abs", ".."] {
            assert!(lock(&d, bad).is_err(), "{bad}");
        }
        assert!(!d.parent().unwrap().join("x.lock").exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
