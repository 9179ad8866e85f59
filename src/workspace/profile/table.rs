//! One `[[session]]` table checked key by key into a [`SessionProfile`], every problem noted.

use toml::Value;

use super::files::{check_command, check_rules_file, readable_dir};
use super::gateway::check_gateway;
use super::{
    COMMON_KEYS, MAX_LIST, MAX_NAME, MAX_PROMPT, Problem, ProfileKind, Resolve, SessionProfile,
    for_terminal, shown, valid_name, valid_word,
};

pub(super) fn check_one(
    table: &toml::Table,
    resolve: &Resolve,
    problems: &mut Vec<Problem>,
) -> Option<SessionProfile> {
    let mut bad = |key: &str, what: String| {
        problems.push(Problem {
            line: None,
            key: key.to_string(),
            what,
        })
    };
    let string = |key: &str, bad: &mut dyn FnMut(&str, String)| -> Option<String> {
        match table.get(key)? {
            Value::String(s) => Some(s.clone()),
            v => {
                bad(key, format!("expected a string, found {}", v.type_str()));
                None
            }
        }
    };
    let boolean = |key: &str, bad: &mut dyn FnMut(&str, String)| -> Option<bool> {
        match table.get(key)? {
            Value::Boolean(b) => Some(*b),
            v => {
                bad(
                    key,
                    format!("expected true or false, found {}", v.type_str()),
                );
                None
            }
        }
    };
    let strings = |key: &str, bad: &mut dyn FnMut(&str, String)| -> Option<Vec<String>> {
        match table.get(key)? {
            Value::Array(a) if a.len() > MAX_LIST => {
                bad(key, format!("more than {MAX_LIST} entries"));
                None
            }
            Value::Array(a) => {
                let mut out = Vec::new();
                for (i, v) in a.iter().enumerate() {
                    match v {
                        Value::String(s) => out.push(s.clone()),
                        v => {
                            bad(
                                key,
                                format!("entry {} is {}, expected a string", i + 1, v.type_str()),
                            );
                            return None;
                        }
                    }
                }
                Some(out)
            }
            v => {
                bad(
                    key,
                    format!("expected an array of strings, found {}", v.type_str()),
                );
                None
            }
        }
    };

    let name = match string("name", &mut bad) {
        None if !table.contains_key("name") => {
            bad("name", "missing (every profile needs a unique name)".into());
            None
        }
        None => None,
        Some(s) => match valid_name(&s) {
            Ok(()) => Some(s),
            Err(e) => {
                bad("name", e);
                None
            }
        },
    };
    let backend = match string("backend", &mut bad) {
        None if !table.contains_key("backend") => {
            bad(
                "backend",
                format!("missing (one of {})", ProfileKind::accepted()),
            );
            None
        }
        None => None,
        Some(s) => match ProfileKind::parse(&s) {
            Some(k) => Some(k),
            None => {
                bad(
                    "backend",
                    format!("{} is not one of {}", shown(&s), ProfileKind::accepted()),
                );
                None
            }
        },
    };

    // Keys: unknown ones, and known ones this backend does not use (never silently ignored).
    for key in table.keys() {
        if COMMON_KEYS.contains(&key.as_str()) {
            continue;
        }
        let users: Vec<&str> = ProfileKind::ALL
            .into_iter()
            .filter(|k| k.keys().contains(&key.as_str()))
            .map(|k| k.label())
            .collect();
        match backend {
            Some(k) if k.keys().contains(&key.as_str()) => {}
            Some(k) if !users.is_empty() => bad(
                key,
                format!(
                    "not used by {} profiles (only {})",
                    k.label(),
                    users.join(", ")
                ),
            ),
            None if !users.is_empty() => {}
            _ => {
                let mut accepted: Vec<&str> = COMMON_KEYS.to_vec();
                match backend {
                    Some(k) => accepted.extend(k.keys()),
                    None => {
                        for x in ProfileKind::ALL.iter().flat_map(|k| k.keys()) {
                            if !accepted.contains(x) {
                                accepted.push(x);
                            }
                        }
                    }
                }
                let shown_key = shown(key);
                problems_unknown(&mut bad, key, &shown_key, &accepted);
            }
        }
    }

    let cwd = match string("cwd", &mut bad) {
        Some(s) => match resolve.path(&s).and_then(|p| readable_dir(&p).map(|()| p)) {
            Ok(p) => Some(p),
            Err(e) => {
                bad("cwd", e);
                None
            }
        },
        None if table.contains_key("cwd") => None,
        // No cwd: the directory `up` runs in, as for the one-session commands.
        None => Some(std::env::current_dir().unwrap_or_else(|_| resolve.base.clone())),
    };

    let prompt = string("prompt", &mut bad).filter(|p| {
        if p.len() > MAX_PROMPT {
            bad("prompt", format!("longer than {MAX_PROMPT} bytes"));
            return false;
        }
        true
    });

    let model = string("model", &mut bad).filter(|m| match valid_word(m) {
        Ok(()) if m.starts_with('-') => {
            bad("model", format!("{}: must not start with `-`", shown(m)));
            false
        }
        Ok(()) => true,
        Err(e) => {
            bad("model", e);
            false
        }
    });

    let permission_mode = string("permission_mode", &mut bad).filter(|m| {
        if crate::core::state::PERMISSION_MODES.contains(&m.as_str()) {
            return true;
        }
        bad(
            "permission_mode",
            format!(
                "{} is not one of {}",
                shown(m),
                crate::core::state::PERMISSION_MODES.join(", ")
            ),
        );
        false
    });

    let mut command = strings("command", &mut bad);
    if let Some(c) = &mut command {
        match check_command(c, resolve) {
            Ok(()) => {}
            Err(e) => {
                bad("command", e);
                command = None;
            }
        }
    }
    if backend == Some(ProfileKind::Acp) && !table.contains_key("command") {
        bad(
            "command",
            "missing: an acp profile needs the agent's argv, e.g. [\"claude-agent-acp\"]".into(),
        );
    }

    let mut rules = Vec::new();
    for r in strings("rules", &mut bad).unwrap_or_default() {
        match check_rules_file(&r, resolve) {
            Ok(p) => rules.push(p),
            Err(e) => bad("rules", e),
        }
    }

    let breaks = strings("breaks", &mut bad)
        .unwrap_or_default()
        .into_iter()
        .filter(|b| match valid_word(b) {
            Ok(()) => true,
            Err(e) => {
                bad("breaks", e);
                false
            }
        })
        .collect();

    let script = string("script", &mut bad).filter(|s| {
        let ok = !s.is_empty()
            && s.len() <= MAX_NAME
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            bad(
                "script",
                format!(
                    "{}: a script name is 1 to {MAX_NAME} letters, digits, `-` or `_`",
                    shown(s)
                ),
            );
        }
        ok
    });

    let gateway = if backend == Some(ProfileKind::Gateway) {
        Some(check_gateway(table, resolve, &mut bad)?)
    } else {
        None
    };
    let engine =
        string("engine", &mut bad).filter(|u| match crate::backend::iii::transport::check_url(u) {
            Ok(()) => true,
            Err(e) => {
                bad("engine", for_terminal(&e));
                false
            }
        });

    let headers = strings("headers", &mut bad)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .filter(
            |(i, h)| match crate::backend::iii::transport::Header::parse(h) {
                // The value may be a secret: the message names the entry, never its text.
                Ok(_) => true,
                Err(e) => {
                    bad("headers", format!("entry {}: {}", i + 1, for_terminal(&e)));
                    false
                }
            },
        )
        .map(|(_, h)| h)
        .collect();

    let sessions = strings("sessions", &mut bad)
        .unwrap_or_default()
        .into_iter()
        .filter(|id| match valid_word(id) {
            Ok(()) => true,
            Err(e) => {
                bad("sessions", e);
                false
            }
        })
        .collect();

    let provider = string("provider", &mut bad).filter(|p| {
        let why = if p.trim().is_empty() {
            Err("must not be empty (leave the key out for the router's default)".to_string())
        } else {
            crate::core::msg::check_provider(p)
        };
        why.map_err(|e| bad("provider", format!("{}: {e}", shown(p))))
            .is_ok()
    });

    // Offered unless a profile says `false` (the client capabilities of `initialize`).
    let withhold_fs = boolean("fs", &mut bad) == Some(false);
    let withhold_terminal = boolean("terminal", &mut bad) == Some(false);

    Some(SessionProfile {
        name: name?,
        backend: backend?,
        cwd: cwd?,
        prompt,
        model,
        permission_mode,
        command: command.unwrap_or_default(),
        rules,
        breaks,
        script,
        gateway,
        engine,
        headers,
        sessions,
        provider,
        withhold_fs,
        withhold_terminal,
    })
}

fn problems_unknown(
    bad: &mut impl FnMut(&str, String),
    key: &str,
    shown_key: &str,
    accepted: &[&str],
) {
    bad(
        key,
        format!("unknown key {shown_key}; accepted: {}", accepted.join(", ")),
    );
}
