//! A cgroup of its own for each agent, where ours is cgroup v2 and ours to write (delegated).
//!
//! A process group does not hold an agent's descendants: one that calls `setsid` leaves it,
//! and when its parent exits nothing links it to the agent any more. A cgroup does: every
//! descendant is born in its parent's cgroup and only a writer of the hierarchy moves it out.
//! So each agent is placed (between fork and exec) in `switchboard-<host pid>-<n>` beneath
//! the cgroup switchboard runs in, and ending the agent ends its cgroup (`cgroup.kill`), on a
//! clean stop here and after a SIGKILL of switchboard by the agent's watchdog.
//!
//! That needs our cgroup to be writable by us: root, a systemd user unit (`Delegate=yes`), a
//! container that delegates. A login session's scope is root's, so there (and without cgroup
//! v2, or with `SWITCHBOARD_CGROUP=off`) there is no cgroup and the watchdog walks the
//! process tree instead (`watchdog.rs`); docs/host.md says what each leaves.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The prefix of the cgroups we make.
const PREFIX: &str = "switchboard-";

/// One agent's cgroup: made empty, the agent moves itself in (`enter_fd`), removed when the
/// agent is over.
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
    /// `cgroup.procs` opened for writing, for the child to write itself into after fork.
    procs: Option<OwnedFd>,
}

/// Where our cgroups go (our own cgroup v2 directory), found once; `None`: no cgroup v2, or
/// turned off.
fn base() -> Option<&'static Path> {
    static BASE: OnceLock<Option<PathBuf>> = OnceLock::new();
    BASE.get_or_init(|| {
        if std::env::var_os("SWITCHBOARD_CGROUP").is_some_and(|v| v == "off") {
            return None;
        }
        let mount = v2_mount()?;
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
        // `(deleted)` or anything not absolute: not a place to make cgroups in.
        let rel = path.strip_prefix('/')?;
        if rel.contains("..") || path.contains(' ') {
            return None;
        }
        Some(mount.join(rel))
    })
    .as_deref()
}

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified`
/// in the hybrid layout).
fn v2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        // `id parent maj:min root mount-point options … - fstype source super-options`
        let (head, tail) = l.split_once(" - ")?;
        let fstype = tail.split(' ').next()?;
        let mount = head.split(' ').nth(4)?;
        // (A mount point with a space in it is written escaped: not ours to guess.)
        (fstype == "cgroup2" && !mount.contains('\\')).then(|| PathBuf::from(mount))
    })
}

/// Set once making a cgroup was refused (not delegated to us): not tried again.
static REFUSED: AtomicBool = AtomicBool::new(false);
static NEXT: AtomicU64 = AtomicU64::new(1);

impl Cgroup {
    /// A new, empty cgroup for one agent; `None` where there can be none (see the module).
    pub fn create() -> Option<Cgroup> {
        if REFUSED.load(Ordering::Relaxed) {
            return None;
        }
        let base = base()?;
        // (Never ours here: another agent's may be empty for a moment, made and not yet
        // entered.)
        sweep(base, false);
        let dir = base.join(format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        if let Err(e) = std::fs::create_dir(&dir) {
            if matches!(
                e.raw_os_error(),
                Some(libc::EACCES | libc::EPERM | libc::EROFS)
            ) {
                REFUSED.store(true, Ordering::Relaxed);
            }
            tracing::debug!("no cgroup for the agent: {}: {e}", dir.display());
            return None;
        }
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
            .ok()
            .map(OwnedFd::from);
        if procs.is_none() {
            let _ = std::fs::remove_dir(&dir);
            return None;
        }
        Some(Cgroup { dir, procs })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The descriptor a child writes `0` into, between fork and exec, to move itself in
    /// (`enter`).
    pub fn enter_fd(&self) -> Option<i32> {
        self.procs.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// The agent started (or failed to): the descriptor is not needed any more.
    pub fn started(&mut self) {
        self.procs = None;
    }

    /// Whether process `pid` is in it: `enter` cannot report a failed move (a container may
    /// let us make a cgroup but not move into it), and a watchdog trusting an empty cgroup
    /// would not walk the agent's tree.
    pub fn holds(&self, pid: u32) -> bool {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .is_ok_and(|t| t.lines().any(|l| l.trim().parse() == Ok(pid)))
    }

    /// SIGKILL to everything in it, the agent's escaped descendants included.
    pub fn kill(&self) {
        if std::fs::write(self.dir.join("cgroup.kill"), b"1").is_ok() {
            return;
        }
        // Before Linux 5.14: each process it holds, until none is left (bounded: one that
        // forks faster than we kill is given up on).
        for _ in 0..50 {
            let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
            let pids: Vec<i32> = procs.lines().filter_map(|l| l.parse().ok()).collect();
            if pids.is_empty() {
                return;
            }
            for p in pids {
                // SAFETY: only sends a signal, to a process in our agent's cgroup (a pid
                // there is alive or a zombie not reaped yet: not reused).
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
        }
    }

    /// Whether anything still runs in it.
    pub fn populated(&self) -> bool {
        std::fs::read_to_string(self.dir.join("cgroup.events"))
            .map(|e| e.lines().any(|l| l == "populated 1"))
            .unwrap_or(false)
    }

    /// Remove it (it must be empty: a cgroup with a process in it cannot be removed).
    pub fn remove(&self) -> bool {
        std::fs::remove_dir(&self.dir).is_ok()
    }
}

/// Move the calling process into the cgroup whose `cgroup.procs` is open as `fd`. Only a
/// `write`: safe between fork and exec. A failure leaves the agent where it was (the watchdog
/// still walks its tree).
pub fn enter(fd: i32) {
    // SAFETY: write(2) of two static bytes to a descriptor the parent opened for us.
    unsafe {
        libc::write(fd, b"0".as_ptr().cast(), 1);
    }
}

/// On the way out: remove the empty cgroups of ours (an agent dropped while its last process
/// was going leaves its own) and of switchboards that are gone (a host killed outright leaves
/// its agents' cgroups to its watchdogs, which may not have finished).
pub fn sweep_ours() {
    if let Some(base) = base() {
        sweep(base, true);
    }
}

fn sweep(base: &Path, ours: bool) {
    let Ok(dir) = std::fs::read_dir(base) else {
        return;
    };
    let me = std::process::id();
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|n| n.split_once('-'))
            .and_then(|(p, _)| p.parse::<u32>().ok())
        else {
            continue;
        };
        // A live switchboard's cgroup may be empty for a moment (made, its agent not in yet):
        // only the dead's, and ours when asked, are removed. rmdir of one in use fails.
        if (ours && pid == me) || (pid != me && !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Where cgroups can be made here: a process moved in, its `setsid` child with it, both
    /// ended by `kill`, and the cgroup removed. (Where they cannot, `create` says so by
    /// returning nothing, which is what the rest relies on.)
    #[test]
    fn a_cgroup_holds_what_escapes_the_group_and_ends_it() {
        let Some(mut cg) = Cgroup::create() else {
            assert!(base().is_none() || REFUSED.load(Ordering::Relaxed));
            return;
        };
        use std::os::unix::process::CommandExt;
        let fd = cg.enter_fd().unwrap();
        let mut c = std::process::Command::new("/bin/sh");
        c.arg("-c").arg("setsid sleep 300 & sleep 300");
        // SAFETY: `enter` is a write(2) only.
        unsafe {
            c.pre_exec(move || {
                enter(fd);
                Ok(())
            });
        }
        let mut child = c.spawn().unwrap();
        cg.started();
        assert!(cg.holds(child.id()), "moved in before exec");
        assert!(!cg.holds(std::process::id()), "not this process");
        let t = std::time::Instant::now();
        let count = || {
            std::fs::read_to_string(cg.dir().join("cgroup.procs"))
                .unwrap()
                .lines()
                .count()
        };
        while count() < 3 {
            assert!(t.elapsed().as_secs() < 10, "the three are not in");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        cg.kill();
        let _ = child.wait();
        while cg.populated() {
            assert!(t.elapsed().as_secs() < 10, "still populated");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(cg.remove());
    }
}
