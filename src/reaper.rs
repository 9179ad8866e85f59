//! No descendant outlives us. Commands and agents get their own process group and we kill
//! the group; a child that leaves the group (`setsid`, a double fork, `nohup` into a new
//! session) would survive that, reparented to PID 1. On Linux switchboard is therefore a
//! child subreaper (`PR_SET_CHILD_SUBREAPER`): orphans of its descendants are reparented to
//! it, so they stay in its process tree, and on the way out (`Guard`'s drop: a quit, a signal
//! the app handles, an error, a panic that unwinds `main`) every descendant still alive gets
//! SIGTERM, then SIGKILL after the grace time, and is reaped. Elsewhere the group kills are
//! all there is.
//!
//! As a subreaper we must also reap the orphans that die while we run, or they stay zombies
//! (a host could make thousands). A `waitpid(-1)` would steal the exit status of children
//! std and tokio wait for by pid. So the reaper thread reaps only zombie children that are
//! not ours by the one rule every spawn site follows: what we start either leads its own
//! process group (commands, agents, terminals, watchdogs: `pgid == pid`) or stays in ours
//! (the pager, notifications), and never leaves our session (a group leader cannot
//! `setsid`). An orphan is in another session (it called `setsid`) or in a group led by
//! someone else (a command's). A zombie's pid cannot be reused before someone reaps it, and
//! only we can, so the check and the `waitpid` see the same process. What the rule leaves
//! (an orphan that made a group of its own without a new session) is reaped on the way out.

use std::time::Duration;

/// Between SIGTERM and SIGKILL on the way out.
pub const GRACE: Duration = Duration::from_secs(2);

/// Becomes a subreaper now, reaps orphans while it lives, and ends every descendant when
/// dropped.
pub struct Guard {
    active: bool,
}

impl Guard {
    pub fn start() -> Guard {
        let active = become_subreaper();
        if active {
            let _ = std::thread::Builder::new()
                .name("orphan-reaper".into())
                .spawn(|| {
                    loop {
                        std::thread::sleep(Duration::from_secs(2));
                        reap_orphans();
                    }
                });
        }
        Guard { active }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.active {
            end_descendants(GRACE);
        }
        // The agents' cgroups, empty now (each agent's stop removes its own; one whose last
        // process was still going then is removed here).
        switchboard_backend::cgroup::sweep_ours();
    }
}

/// `prctl(PR_SET_CHILD_SUBREAPER, 1)`; false where there is no such thing.
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with integer arguments only.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Stop being a subreaper: what is started from now on and orphaned (a host, double-forked
/// away from the terminal that started it) is not ours to end.
pub fn stop_being_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    }
}

#[cfg(target_os = "linux")]
pub use linux::{descendants, end_descendants, reap_orphans};

#[cfg(not(target_os = "linux"))]
pub fn end_descendants(_grace: Duration) {}

#[cfg(not(target_os = "linux"))]
pub fn reap_orphans() -> usize {
    0
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::{HashMap, HashSet};
    use std::time::{Duration, Instant};

    /// From `/proc/<pid>/stat`: state, parent, process group, session.
    #[derive(Debug, Clone, Copy)]
    pub struct Stat {
        pub state: char,
        pub ppid: i32,
        pub pgrp: i32,
        pub session: i32,
    }

    pub fn stat(pid: i32) -> Option<Stat> {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The name may hold anything, `)` included: the fields start after the last one.
        let mut f = s.rsplit_once(')')?.1.split_whitespace();
        Some(Stat {
            state: f.next()?.chars().next()?,
            ppid: f.next()?.parse().ok()?,
            pgrp: f.next()?.parse().ok()?,
            session: f.next()?.parse().ok()?,
        })
    }

    fn all() -> Vec<(i32, Stat)> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(|p| Some((p, stat(p)?)))
            .collect()
    }

    fn me() -> i32 {
        // SAFETY: getpid has no preconditions.
        unsafe { libc::getpid() }
    }

    /// Every process below us in the tree, alive or zombie, parents before children.
    pub fn descendants() -> Vec<(i32, Stat)> {
        let mut by_parent: HashMap<i32, Vec<(i32, Stat)>> = HashMap::new();
        for (p, s) in all() {
            by_parent.entry(s.ppid).or_default().push((p, s));
        }
        let mut out = Vec::new();
        let mut next = vec![me()];
        while let Some(p) = next.pop() {
            for (c, s) in by_parent.remove(&p).unwrap_or_default() {
                next.push(c);
                out.push((c, s));
            }
        }
        out
    }

    /// Signal `pid` only if it is still below us: through a pidfd opened before the check,
    /// so a pid reused by a stranger in between is never signalled.
    fn signal_descendant(pid: i32, tree: &HashSet<i32>, sig: i32) {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
        if fd < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
                // Before Linux 5.3: the parent check just made is all there is.
                // SAFETY: only sends a signal.
                unsafe { libc::kill(pid, sig) };
            }
            return;
        }
        if stat(pid).is_some_and(|s| s.ppid == me() || tree.contains(&s.ppid)) {
            // SAFETY: a pidfd we own, a signal number, no siginfo.
            unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd,
                    sig,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                )
            };
        }
        // SAFETY: closing the descriptor opened above.
        unsafe { libc::close(fd) };
    }

    /// Signal every live descendant; returns how many there were.
    fn signal_all(sig: i32) -> usize {
        let d = descendants();
        let tree: HashSet<i32> = d.iter().map(|(p, _)| *p).collect();
        let live: Vec<i32> = d
            .iter()
            .filter(|(_, s)| s.state != 'Z')
            .map(|(p, _)| *p)
            .collect();
        for p in &live {
            signal_descendant(*p, &tree, sig);
        }
        live.len()
    }

    /// Reap every zombie child, ours or not (on the way out nothing waits for them any more).
    fn reap_all() {
        loop {
            // SAFETY: WNOHANG wait for any child; the status is discarded.
            let r = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) };
            if r <= 0 {
                return;
            }
        }
    }

    /// Whether the zombie child `s` is an orphan we inherited, not a child we started (see the
    /// module comment for the rule).
    fn inherited(pid: i32, s: &Stat) -> bool {
        // SAFETY: getpgrp and getsid(0) have no preconditions.
        let (our_group, our_session) = unsafe { (libc::getpgrp(), libc::getsid(0)) };
        s.session != our_session || (s.pgrp != pid && s.pgrp != our_group)
    }

    /// Reap the zombie orphans that were reparented to us; returns how many.
    pub fn reap_orphans() -> usize {
        let me = me();
        let mut n = 0;
        for (pid, s) in all() {
            if s.ppid == me && s.state == 'Z' && inherited(pid, &s) {
                // SAFETY: a zombie child of ours that no one else waits for.
                if unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) } == pid {
                    n += 1;
                }
            }
        }
        n
    }

    /// SIGTERM to every descendant, up to `grace` for them to go, then SIGKILL until none is
    /// left (bounded: a process that keeps forking faster than we kill is given up on after
    /// two seconds), reaping as we go.
    pub fn end_descendants(grace: Duration) {
        if signal_all(libc::SIGTERM) == 0 {
            reap_all();
            return;
        }
        let deadline = Instant::now() + grace;
        loop {
            reap_all();
            if !descendants().iter().any(|(_, s)| s.state != 'Z') || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let give_up = Instant::now() + Duration::from_secs(2);
        while signal_all(libc::SIGKILL) > 0 && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(10));
            reap_all();
        }
        reap_all();
    }
}

#[cfg(all(test, target_os = "linux"))]
#[path = "reaper_tests.rs"]
mod tests;
