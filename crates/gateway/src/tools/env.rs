//! The environment of the commands a remote agent runs (exec and extra tools): empty, plus
//! `child_env::ALLOWLIST` taken from ours, plus what the owner lists in `config.toml`:
//!
//! ```toml
//! [gateway]
//! env = ["CARGO_HOME", "RUST_LOG=info"]   # by name (our value), or NAME=value
//! ```
//!
//! Never a secret we read (the bearer token's variable) nor a `SWITCHBOARD_*`: listing one is
//! an error at startup and in `config check`, not a silent drop, so the owner knows. Built once
//! per channel, so what the card shows is exactly what every command gets.

use std::ffi::OsString;
use std::sync::{Arc, OnceLock};

use switchboard_backend::child_env;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecEnv {
    /// Sorted by name, each name once.
    vars: Vec<(String, String)>,
}

/// A portable variable name: what `sh` can expand.
fn valid_name(n: &str) -> bool {
    let mut c = n.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// One `[gateway] env` entry: its name and, for `NAME=value`, its value. `withheld` are the
/// secret variables (token variables) of the channels this config serves.
pub fn parse_entry(entry: &str, withheld: &[String]) -> Result<(String, Option<String>), String> {
    let (name, value) = match entry.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (entry, None),
    };
    if !valid_name(name) {
        return Err(format!(
            "{entry:?}: not a variable name (letters, digits and _, not starting with a digit)"
        ));
    }
    if child_env::is_switchboard(name) {
        return Err(format!(
            "{name}: switchboard's own variables are never passed to commands"
        ));
    }
    if withheld.iter().any(|w| w == name) {
        return Err(format!(
            "{name}: it holds the gateway's bearer token, which is never passed to commands"
        ));
    }
    if value.as_deref().is_some_and(|v| v.contains('\0')) {
        return Err(format!("{name}: the value holds a NUL character"));
    }
    Ok((name.to_string(), value))
}

impl ExecEnv {
    /// From `ours` (our environment), the `configured` entries and the `withheld` secret
    /// names. Every bad entry is reported. A listed name we do not have is left unset; a
    /// non-UTF-8 value of ours is left out (the card could not show it as it is).
    pub fn build(
        ours: impl IntoIterator<Item = (OsString, OsString)>,
        configured: &[String],
        withheld: &[String],
    ) -> Result<ExecEnv, Vec<String>> {
        let mut wanted = Vec::new();
        let mut bad = Vec::new();
        for e in configured {
            match parse_entry(e, withheld) {
                Ok(x) => wanted.push(x),
                Err(m) => bad.push(m),
            }
        }
        if !bad.is_empty() {
            return Err(bad);
        }
        let mut vars = std::collections::BTreeMap::new();
        for (k, v) in ours {
            let (Some(k), Some(v)) = (k.to_str(), v.to_str()) else {
                continue;
            };
            let listed = wanted.iter().any(|(n, val)| n == k && val.is_none());
            let allowed = child_env::allowlisted(k)
                && !child_env::is_switchboard(k)
                && !withheld.iter().any(|w| w == k);
            if allowed || listed {
                vars.insert(k.to_string(), v.to_string());
            }
        }
        for (n, v) in wanted {
            if let Some(v) = v {
                vars.insert(n, v);
            }
        }
        Ok(ExecEnv {
            vars: vars.into_iter().collect(),
        })
    }

    /// From this process's environment, withholding `token_var` and every registered secret.
    pub fn from_process(
        configured: &[String],
        token_var: Option<&str>,
    ) -> Result<ExecEnv, Vec<String>> {
        let mut withheld = child_env::secrets();
        withheld.extend(token_var.map(str::to_string));
        ExecEnv::build(std::env::vars_os(), configured, &withheld)
    }

    /// The allowlist alone, from our environment, computed once: what a command table gets
    /// when no configured environment is handed to it (`Commands::default`).
    pub fn baseline() -> Arc<ExecEnv> {
        static BASE: OnceLock<Arc<ExecEnv>> = OnceLock::new();
        BASE.get_or_init(|| {
            Arc::new(
                ExecEnv::build(std::env::vars_os(), &[], &child_env::secrets())
                    .expect("no configured entries, nothing to refuse"),
            )
        })
        .clone()
    }

    /// The `(name, value)` pairs every command gets, sorted by name: what the card shows.
    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }

    /// Make `c` start with exactly this environment.
    pub fn apply(&self, c: &mut std::process::Command) {
        c.env_clear();
        c.envs(self.vars.iter().map(|(k, v)| (k, v)));
    }
}

/// The channel's command environment, as `switchboard gateway` and `up` build it at startup
/// from the `[gateway] env` list of `config.toml` (`listed`).
pub fn load(listed: &[String], token_var: Option<&str>) -> Result<Arc<ExecEnv>, String> {
    ExecEnv::from_process(listed, token_var)
        .map(Arc::new)
        .map_err(|bad| format!("config.toml [gateway] env: {}", bad.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    /// Only allowlisted and configured names, never the token or `SWITCHBOARD_*`.
    #[test]
    fn only_the_allowlist_and_the_configured_names_pass() {
        let env = ours(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/o"),
            ("LC_ALL", "C.UTF-8"),
            ("SB_GW_TOKEN", "secret-token"),
            ("SWITCHBOARD_DATA_DIR", "/d"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("CARGO_HOME", "/c"),
            ("LD_PRELOAD", "/evil.so"),
        ]);
        let configured = vec!["CARGO_HOME".to_string(), "RUST_LOG=info".to_string()];
        let e = ExecEnv::build(env.clone(), &configured, &["SB_GW_TOKEN".to_string()]).unwrap();
        let names: Vec<&str> = e.vars().iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            ["CARGO_HOME", "HOME", "LC_ALL", "PATH", "RUST_LOG"],
            "{e:?}"
        );
        assert!(e.vars().contains(&("RUST_LOG".into(), "info".into())));
        assert!(!e.vars().iter().any(|(_, v)| v == "secret-token"));
        // The token or our own variables, even listed, refuse the config (every one named).
        let bad = ExecEnv::build(
            env.clone(),
            &[
                "SB_GW_TOKEN".into(),
                "SWITCHBOARD_DATA_DIR".into(),
                "SWITCHBOARD_X=1".into(),
                "1BAD".into(),
                "=x".into(),
            ],
            &["SB_GW_TOKEN".to_string()],
        )
        .unwrap_err();
        assert_eq!(bad.len(), 5, "{bad:?}");
        assert!(bad[0].contains("bearer token"), "{bad:?}");
        assert!(bad[1].contains("switchboard's own"), "{bad:?}");
        // An allowlisted name that is a token variable is withheld too.
        let e = ExecEnv::build(env, &[], &["HOME".to_string()]).unwrap();
        assert!(!e.vars().iter().any(|(k, _)| k == "HOME"));
    }

    #[test]
    fn a_command_starts_with_exactly_the_built_environment() {
        let e = ExecEnv::build(
            ours(&[("PATH", "/usr/bin:/bin"), ("SB_GW_TOKEN", "secret-token")]),
            &["ONLY_THIS=1".into()],
            &["SB_GW_TOKEN".into()],
        )
        .unwrap();
        let mut c = std::process::Command::new("/usr/bin/env");
        e.apply(&mut c);
        let out = String::from_utf8(c.output().unwrap().stdout).unwrap();
        let mut lines: Vec<&str> = out.lines().collect();
        lines.sort();
        assert_eq!(lines, ["ONLY_THIS=1", "PATH=/usr/bin:/bin"]);
    }
}
