//! The environments of the processes we start (docs/gateway.md: "Environments of the processes
//! we start"). Two rules hold for every spawn site:
//!
//! - A variable that holds a secret we read at startup (the gateway's bearer token, named by
//!   `--token-env` or a profile's `token_env`) is registered here and withheld from every
//!   process: agents, terminals, the pager, the editor, notifications and gateway commands.
//!   Nothing we start needs it; switchboard keeps the token in memory.
//! - Commands a remote agent asks for (gateway exec and extra tools) start from an empty
//!   environment plus `ALLOWLIST` and what the owner lists (`tools::env::ExecEnv`); processes
//!   an agent asks for (ACP terminals) lose switchboard's own `SWITCHBOARD_*` too.
//!
//! Local agents, the pager, `$EDITOR` and `notify_command` are the owner's own programs and
//! keep the owner's environment otherwise: an agent needs its credentials and settings.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::sync::Mutex;

/// What a gateway command takes from our environment unasked: where programs are, who and
/// where the user is, language and time zone, the terminal type and the temporary directory.
/// Enough for `sh`, compilers and test runners; no credentials. `LC_*` covers every locale
/// category.
pub const ALLOWLIST: [&str; 10] = [
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_*", "TZ", "TERM", "TMPDIR",
];

/// Whether `name` is on `ALLOWLIST`.
pub fn allowlisted(name: &str) -> bool {
    ALLOWLIST.iter().any(|a| match a.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => *a == name,
    })
}

/// Switchboard's own variables (config and data dirs, log level, test switches): never
/// handed to a process another party asked for.
pub fn is_switchboard(name: &str) -> bool {
    name.starts_with("SWITCHBOARD_")
}

static SECRETS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// `name` holds a secret this process read (a bearer token): from now on no process we
/// start gets it.
pub fn register_secret(name: &str) {
    SECRETS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(name.to_string());
}

/// The names registered with `register_secret`.
pub fn secrets() -> Vec<String> {
    SECRETS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .cloned()
        .collect()
}

/// The variables of our environment a process started for an agent must not get: every
/// registered secret, and with `and_switchboard` every `SWITCHBOARD_*` we hold. Each site
/// removes them from the command it builds (`env_remove`).
pub fn withheld(and_switchboard: bool) -> Vec<OsString> {
    let mut out: Vec<OsString> = secrets().into_iter().map(OsString::from).collect();
    if and_switchboard {
        out.extend(
            std::env::vars_os()
                .map(|(k, _)| k)
                .filter(|k| k.to_str().is_some_and(is_switchboard)),
        );
    }
    out
}

/// Remove `withheld(and_switchboard)` from what `cmd` will get (for a tokio command, through
/// `as_std_mut`).
pub fn scrub(cmd: &mut std::process::Command, and_switchboard: bool) {
    for k in withheld(and_switchboard) {
        cmd.env_remove(k);
    }
}

/// Keep what we start from reading our own environment and memory: a command run for a remote
/// agent runs as the same user, and `/proc/<our pid>/environ` would hand it the token variable
/// we withheld from its environment (found by review). Not dumpable, our `/proc` files belong
/// to root and `ptrace` by the same user is refused. What the user can read anyway (the token
/// file itself) stays readable: this is not a sandbox.
pub fn hide_own_environment() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowlist_matches_names_and_the_locale_prefix() {
        for n in ["PATH", "HOME", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ"] {
            assert!(allowlisted(n), "{n}");
        }
        for n in [
            "PATHX",
            "AWS_SECRET_ACCESS_KEY",
            "SB_GW_TOKEN",
            "LD_PRELOAD",
            "LC",
        ] {
            assert!(!allowlisted(n), "{n}");
        }
        assert!(is_switchboard("SWITCHBOARD_DATA_DIR"));
        assert!(!is_switchboard("SWITCHBOARDX"));
    }

    #[test]
    fn a_registered_secret_is_withheld() {
        register_secret("SB_CHILD_ENV_TEST_SECRET");
        assert!(secrets().contains(&"SB_CHILD_ENV_TEST_SECRET".to_string()));
        let w = withheld(false);
        assert!(w.contains(&OsString::from("SB_CHILD_ENV_TEST_SECRET")));
        assert!(!w.iter().any(|n| n.to_str().is_some_and(is_switchboard)));
    }
}
