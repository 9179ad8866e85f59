//! A process group's watchdog: it dies with us, however we die.
//!
//! A tiny `sh` in its own process group reads a pipe only we write to. When switchboard ends,
//! even by SIGKILL, the kernel closes the pipe, the watchdog's `read` ends, and it ends the
//! agent with everything it started (a host killed outright takes its agents with it):
//!
//! - with the agent's cgroup (`cgroup.rs`): `cgroup.kill`, which reaches every descendant
//!   wherever it went (`setsid`, a double fork), then the cgroup is removed;
//! - without one: every process of the group and every process descending from one is found
//!   in /proc, pass after pass until one finds nothing new; then all are stopped (SIGSTOP:
//!   they fork no more), the walk is done again for what was born meanwhile, and all get
//!   SIGKILL. Nothing is stopped before the whole tree is known: a stopped group left without
//!   a parent (ours just died) gets SIGHUP from the kernel (POSIX's orphaned process group),
//!   which ends a shell before its children are found, and they would be nobody's. This
//!   reaches a descendant that left the group while the chain of parents up to the agent is
//!   alive. One whose parent had already exited was reparented to switchboard (a subreaper)
//!   and, switchboard gone, to init: no longer anyone's descendant, it is not found
//!   (docs/host.md).
//!
//! When the group ends first, its owner kills and reaps the watchdog (`stop`), so it never
//! signals a group id that may have been reused.

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// `$1` the group, `$2` its cgroup's directory (empty: none). Reading /proc/PID/status (its
/// `Name:` is escaped, so an agent cannot forge a `PPid:` line), not `stat` (whose name field
/// may hold anything). Every loop is bounded.
const SCRIPT: &str = r#"read _
g=$1 cg=$2
if [ -n "$cg" ]; then
  echo 1 > "$cg/cgroup.kill" 2>/dev/null || {
    i=0
    while [ $i -lt 50 ] && [ -s "$cg/cgroup.procs" ]; do
      kill -KILL $(cat "$cg/cgroup.procs") 2>/dev/null
      i=$((i+1))
    done
  }
  kill -KILL "-$g" 2>/dev/null
  i=0
  until rmdir "$cg" 2>/dev/null || [ $i -ge 50 ]; do sleep 0.1; i=$((i+1)); done
  exit 0
fi
tree=" "
walk() {
  more=1
  n=0
  while [ -n "$more" ] && [ $n -lt 64 ]; do
    more=
    n=$((n+1))
    for d in /proc/[0-9]*; do
      p=${d#/proc/}
      case "$tree" in *" $p "*) continue ;; esac
      pp= pg=
      while read -r k v rest; do
        case $k in
          PPid:) pp=$v ;;
          NSpgid:) pg=$v; break ;;
        esac
      done < "$d/status" 2>/dev/null
      [ -n "$pp" ] || continue
      case "$tree" in *" $pp "*) mine=1 ;; *) mine= ;; esac
      if [ "$pg" = "$g" ] || [ -n "$mine" ]; then
        [ -z "$1" ] || kill -STOP "$p" 2>/dev/null
        tree="$tree$p "
        more=1
      fi
    done
  done
}
walk
kill -STOP $tree 2>/dev/null
walk stop
kill -KILL "-$g" $tree 2>/dev/null
kill -KILL $tree 2>/dev/null
"#;

/// Start the watchdog of the group `pgid` (no cgroup: its tree is walked).
pub fn start(pgid: i32) -> std::io::Result<Child> {
    start_in(pgid, None)
}

/// Start the watchdog of the group `pgid`, whose agent is in `cgroup` when it has one.
pub fn start_in(pgid: i32, cgroup: Option<&Path>) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    let mut w = Command::new("/bin/sh");
    w.arg("-c")
        .arg(SCRIPT)
        .arg("switchboard-watchdog")
        .arg(pgid.to_string())
        .arg(cgroup.map(|c| c.as_os_str()).unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    // SAFETY: only setpgid (async-signal-safe) between fork and exec.
    unsafe {
        w.pre_exec(|| {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    w.spawn()
}

/// The watched group is over: the watchdog goes, killed and reaped here.
pub fn stop(mut w: Child) {
    let _ = w.kill();
    let _ = w.wait();
}
