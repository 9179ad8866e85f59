//! A session's profile as the workspace manifest keeps it (`resume.profile`), so a workspace
//! that ended without being stopped (a crash, a kill, a reboot) can start each session again
//! as it was started. No secret is kept: a gateway token is named by the file or variable it
//! is read from (as in config.toml), and an iii engine's handshake headers by their names only
//! (their values may be credentials; a resumed session whose headers came from config.toml
//! reads them there again).

use std::path::PathBuf;

use serde_json::{Value, json};

use super::profile::{GatewayProfile, ProfileKind, SessionProfile};
use crate::backend::gateway::session::TokenSource;

/// The profile as JSON.
pub fn to_json(p: &SessionProfile) -> Value {
    let path = |p: &PathBuf| p.display().to_string();
    let mut v = json!({
        "name": p.name,
        "backend": p.backend.label(),
        "cwd": path(&p.cwd),
        "command": p.command,
        "rules": p.rules.iter().map(path).collect::<Vec<_>>(),
        "breaks": p.breaks,
        "sessions": p.sessions,
        "header_names": p.headers.iter().map(|h| h.split(':').next().unwrap_or("").trim().to_string()).collect::<Vec<_>>(),
        "withhold_fs": p.withhold_fs,
        "withhold_terminal": p.withhold_terminal,
    });
    let o = v.as_object_mut().expect("an object");
    for (k, x) in [
        ("model", &p.model),
        ("permission_mode", &p.permission_mode),
        ("script", &p.script),
        ("engine", &p.engine),
        ("provider", &p.provider),
    ] {
        if let Some(x) = x {
            o.insert(k.into(), json!(x));
        }
    }
    if let Some(g) = &p.gateway {
        let token = match &g.token {
            TokenSource::File(f) => json!({"file": path(f)}),
            TokenSource::Env(e) => json!({"env": e}),
        };
        o.insert(
            "gateway".into(),
            json!({
                "url": g.url,
                "workspace": g.workspace,
                "root": path(&g.root),
                "intention": g.intention,
                "mode": g.mode,
                "token": token,
            }),
        );
    }
    v
}

/// A profile read back from `to_json`: what resuming starts. The first prompt is not kept
/// (a resumed conversation goes on where it was).
pub fn from_json(v: &Value) -> Result<SessionProfile, String> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let list = |k: &str| -> Vec<String> {
        v.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let name = s("name").ok_or("the saved profile has no name")?;
    let backend = s("backend")
        .as_deref()
        .and_then(ProfileKind::parse)
        .ok_or("the saved profile names no known backend")?;
    let cwd = PathBuf::from(s("cwd").ok_or("the saved profile has no cwd")?);
    let mut p = SessionProfile::new(name, backend, cwd);
    p.model = s("model");
    p.permission_mode = s("permission_mode");
    p.command = list("command");
    p.rules = list("rules").into_iter().map(PathBuf::from).collect();
    p.breaks = list("breaks");
    p.script = s("script");
    p.engine = s("engine");
    p.sessions = list("sessions");
    p.provider = s("provider");
    p.withhold_fs = v
        .get("withhold_fs")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    p.withhold_terminal = v
        .get("withhold_terminal")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if let Some(g) = v.get("gateway") {
        let gs = |k: &str| {
            g.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("the saved gateway has no {k}"))
        };
        let token = match (
            g.pointer("/token/file").and_then(Value::as_str),
            g.pointer("/token/env").and_then(Value::as_str),
        ) {
            (Some(f), _) => TokenSource::File(PathBuf::from(f)),
            (None, Some(e)) => TokenSource::Env(e.to_string()),
            _ => return Err("the saved gateway names no token source".into()),
        };
        p.gateway = Some(GatewayProfile {
            url: gs("url")?,
            workspace: gs("workspace")?,
            root: PathBuf::from(gs("root")?),
            intention: gs("intention")?,
            mode: gs("mode")?,
            token,
        });
    }
    Ok(p)
}

/// The handshake header names a saved iii profile had (their values were not kept).
pub fn header_names(v: &Value) -> Vec<String> {
    v.get("header_names")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_comes_back_without_its_secrets_or_first_prompt() {
        let mut p = SessionProfile::new("api", ProfileKind::Acp, PathBuf::from("/w/api"));
        p.command = vec!["claude-agent-acp".into(), "--x".into()];
        p.prompt = Some("fix it".into());
        p.rules = vec![PathBuf::from("/w/rules.toml")];
        p.withhold_fs = true;
        let v = to_json(&p);
        let back = from_json(&v).unwrap();
        assert_eq!(back.command, p.command);
        assert_eq!(back.rules, p.rules);
        assert!(back.withhold_fs);
        assert_eq!(
            back.prompt, None,
            "a resumed conversation is not prompted again"
        );

        let mut iii = SessionProfile::new("eng", ProfileKind::Iii, PathBuf::from("/w"));
        iii.engine = Some("wss://e.example".into());
        iii.headers = vec!["Authorization: Bearer s3cr3t".into()];
        let v = to_json(&iii);
        assert!(!v.to_string().contains("s3cr3t"), "{v}");
        assert_eq!(header_names(&v), ["Authorization"]);

        let mut gw = SessionProfile::new("gw", ProfileKind::Gateway, PathBuf::from("/w"));
        gw.gateway = Some(GatewayProfile {
            url: "wss://h".into(),
            workspace: "ws".into(),
            root: PathBuf::from("/w/root"),
            intention: "tidy".into(),
            mode: "ask".into(),
            token: TokenSource::Env("GW_TOKEN".into()),
        });
        let back = from_json(&to_json(&gw)).unwrap();
        assert_eq!(back.gateway, gw.gateway);
        assert!(from_json(&json!({"name": "x"})).is_err());
    }
}
