//! A gateway profile's keys, checked as `switchboard gateway` checks its flags.

use toml::Value;

use super::files::readable_dir;
use super::{GatewayProfile, Resolve, shown};

/// The gateway keys, with the checks of `switchboard gateway`'s flags; every problem reported.
pub(super) fn check_gateway(
    table: &toml::Table,
    resolve: &Resolve,
    bad: &mut impl FnMut(&str, String),
) -> Option<GatewayProfile> {
    use crate::backend::gateway::session::TokenSource;
    let mut text = |key: &str, required: bool| -> Option<String> {
        match table.get(key) {
            Some(Value::String(s)) if s.trim().is_empty() => {
                bad(key, "must not be empty".into());
                None
            }
            Some(Value::String(s)) if s.chars().any(char::is_control) => {
                bad(
                    key,
                    format!("{}: control characters are not allowed", shown(s)),
                );
                None
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => {
                bad(key, format!("expected a string, found {}", v.type_str()));
                None
            }
            None if required => {
                bad(key, "missing (a gateway profile needs it)".into());
                None
            }
            None => None,
        }
    };
    let url = text("url", true);
    let workspace = text("workspace", true);
    let root = text("root", true);
    let intention = text("intention", true);
    let mode = text("mode", false);
    let token_file = text("token_file", false);
    let token_env = text("token_env", false);
    if let (Some(u), Some(w)) = (&url, &workspace)
        && let Err(e) = crate::backend::gateway::transport::channel_url(u, w)
    {
        bad("url", e);
    }
    let root =
        root.and_then(
            |r| match resolve.path(&r).and_then(|p| readable_dir(&p).map(|()| p)) {
                Ok(p) => Some(p),
                Err(e) => {
                    bad("root", e);
                    None
                }
            },
        );
    let mode = mode.unwrap_or_else(|| "ask".into());
    let mode_ok = crate::backend::gateway::validate::Mode::parse(&mode).is_some();
    if !mode_ok {
        bad(
            "mode",
            format!("{} is not one of ask, edits, full", shown(&mode)),
        );
    }
    let token = match (token_file, token_env) {
        (Some(_), Some(_)) => {
            bad(
                "token_env",
                "give the token with token_file or token_env, not both".into(),
            );
            None
        }
        (Some(f), None) => match resolve.path(&f) {
            Ok(p) => Some(("token_file", TokenSource::File(p))),
            Err(e) => {
                bad("token_file", e);
                None
            }
        },
        (None, Some(v)) => Some(("token_env", TokenSource::Env(v))),
        (None, None) => {
            if !table.contains_key("token_file") && !table.contains_key("token_env") {
                bad(
                    "token_file",
                    "missing: give the bearer token with token_file or token_env".into(),
                );
            }
            None
        }
    };
    let token = token.and_then(|(key, t)| match t.check() {
        Ok(()) => Some(t),
        Err(e) => {
            bad(key, e);
            None
        }
    });
    let url = url?;
    workspace.as_ref()?;
    if crate::backend::gateway::transport::channel_url(&url, workspace.as_deref()?).is_err()
        || !mode_ok
    {
        return None;
    }
    Some(GatewayProfile {
        url,
        workspace: workspace?,
        root: root?,
        intention: intention?,
        mode,
        token: token?,
    })
}
