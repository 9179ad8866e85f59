//! A process group's watchdog: it dies with us, however we die.
//!
//! A tiny `sh` in its own process group reads a pipe only we write to. When switchboard ends,
//! even by SIGKILL, the kernel closes the pipe, the watchdog's `read` ends, and it SIGKILLs
//! the group it watches (a host killed outright takes its agents with it). When the group
//! ends first, its owner kills and reaps the watchdog (`stop`), so it never signals a group
//! id that may have been reused.

use std::process::{Child, Command, Stdio};

/// Start the watchdog of the group `pgid`.
pub fn start(pgid: i32) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    let mut w = Command::new("/bin/sh");
    w.arg("-c")
        .arg(r#"read _ ; kill -KILL "-$1" 2>/dev/null"#)
        .arg("switchboard-watchdog")
        .arg(pgid.to_string())
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
