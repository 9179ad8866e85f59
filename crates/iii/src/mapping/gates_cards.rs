//! Approval-gate records decoded (both schema spellings), and the permission cards they
//! show as: the summary, the arguments (full or the redacted excerpt), the options.

use crate::mapping::json::Field;
use serde_json::{Value, json};

use super::{
    DEFAULT_DENY, EXCERPT_MARKER, OPT_ALLOW_ALWAYS, OPT_ALLOW_ONCE, OPT_DENY, OPT_FS_ALWAYS,
    OPT_FS_SESSION,
};
use crate::mapping::json::{self as j, id_field, str_field, u64_field};
use crate::mapping::node_key;
use switchboard_core::gate::{Gate, GateKind, PermOption, Permission};
use switchboard_core::text::pretty_json;

/// A filesystem-access request (either spelling).
#[derive(Clone, Debug, PartialEq)]
pub struct FsAccess {
    pub root: String,
    pub path: String,
    pub code: String,
}

/// A decoded `PendingApprovalRecord`.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub session: String,
    pub turn: String,
    pub call: String,
    pub function_id: String,
    /// The kind word as sent (`function` when absent).
    pub kind: String,
    pub fs: Option<FsAccess>,
    pub pending_at: u64,
    pub excerpt: Option<String>,
    pub depth: u64,
    pub title: Option<String>,
    pub parent: Option<String>,
}

impl Record {
    pub(super) fn revision(&self) -> String {
        format!(
            "{}|{}|{}|{:?}",
            self.pending_at,
            self.function_id,
            if self.fs.is_some() { "fs" } else { "fn" },
            self.fs
        )
    }
}

/// Decode a record, tolerating both schema spellings; `Err` names what is missing.
pub fn decode_record(v: &Value) -> Result<Record, String> {
    if !v.is_object() {
        return Err("approval record is not an object".into());
    }
    let need = |k: &str| {
        id_field(v, k)
            .map(str::to_string)
            .ok_or_else(|| format!("approval record without a valid `{k}`"))
    };
    let session = need("session_id")?;
    let call = need("function_call_id")?;
    let function_id = need("function_id")?;
    let turn = id_field(v, "turn_id").unwrap_or("").to_string();
    let kind = match v.field("kind") {
        None | Some(Value::Null) => "function".to_string(),
        Some(Value::String(k)) => j::clip(k, 64),
        Some(_) => return Err("approval record `kind` is not a string".into()),
    };
    let fs = match kind.as_str() {
        "filesystem_access" | "folder_access" => {
            let (req, root_k, path_k) = match v.field("access_request").filter(|a| a.is_object()) {
                Some(a) => (Some(a), "requested_root", "attempted_path"),
                None => (
                    v.field("grant_request").filter(|a| a.is_object()),
                    "dir",
                    "offending_path",
                ),
            };
            let get = |k: &str| {
                req.and_then(|r| str_field(r, k))
                    .map(|s| j::clip(s, 4096))
                    .unwrap_or_default()
            };
            Some(FsAccess {
                root: get(root_k),
                path: get(path_k),
                code: get("error_code"),
            })
        }
        _ => None,
    };
    Ok(Record {
        session,
        turn,
        call,
        function_id,
        kind,
        fs,
        pending_at: u64_field(v, "pending_at").unwrap_or(0),
        excerpt: v.field("arguments_excerpt").map(|e| match e {
            Value::String(s) => j::clip(s, j::MAX_TEXT),
            other => j::compact(other),
        }),
        depth: u64_field(v, "depth").unwrap_or(0),
        title: str_field(v, "session_title").map(|t| j::clip(t, 200)),
        parent: v
            .field("session_metadata")
            .and_then(|m| id_field(m, "parent_session_id"))
            .map(str::to_string),
    })
}

/// Exec-like functions: their argument is a shell line for the chaining guard.
fn command_of(function_id: &str, args: &Value) -> Option<String> {
    if let Some(c) = ["command", "cmd", "script"]
        .iter()
        .find_map(|k| str_field(args, k))
    {
        return Some(c.to_string());
    }
    let exec_like = {
        let f = function_id.to_ascii_lowercase();
        ["exec", "shell", "bash", "terminal", "run_command", "spawn"]
            .iter()
            .any(|w| f.contains(w))
    };
    let argv = ["argv", "args"]
        .iter()
        .find_map(|k| args.get(*k)?.as_array())?;
    if !exec_like {
        return None;
    }
    let words: Vec<String> = argv
        .iter()
        .map(|w| match w.as_str() {
            Some(s)
                if !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c)) =>
            {
                s.to_string()
            }
            Some(s) => format!("'{}'", s.replace('\'', "'\\''")),
            None => w.to_string(),
        })
        .collect();
    Some(words.join(" "))
}

fn is_exec(function_id: &str) -> bool {
    let f = function_id.to_ascii_lowercase();
    ["exec", "shell", "bash", "terminal", "run_command", "spawn"]
        .iter()
        .any(|w| f.contains(w))
}

fn options(fs: bool) -> Vec<PermOption> {
    let o = |id: &str, name: &str, kind: &str| PermOption {
        option_id: id.into(),
        name: name.into(),
        kind: kind.into(),
    };
    if fs {
        vec![
            o(OPT_ALLOW_ONCE, "Allow once", "allow_once"),
            o(OPT_FS_SESSION, "Allow for this session", "allow_session"),
            o(
                OPT_FS_ALWAYS,
                "Allow always (persist the root)",
                "allow_always",
            ),
            o(OPT_DENY, "Deny", "reject_once"),
        ]
    } else {
        vec![
            o(OPT_ALLOW_ONCE, "Allow once", "allow_once"),
            o(OPT_ALLOW_ALWAYS, "Allow always", "allow_always"),
            o(OPT_DENY, "Deny", "reject_once"),
        ]
    }
}

/// The card for a record: full arguments when the transcript had them, else the excerpt.
pub(super) fn card(
    id: &str,
    root: &str,
    r: &Record,
    full: Option<&Value>,
    title: &str,
    now_ms: u64,
) -> Gate {
    let exec = is_exec(&r.function_id);
    let (summary, rule_arg, input, description, command, env, shell, blocked) = match (&r.fs, full)
    {
        (Some(fs), _) => (
            format!("access {} (tried {}, {})", fs.root, fs.path, fs.code),
            fs.root.clone(),
            pretty_json(
                &json!({"requested_root": fs.root, "attempted_path": fs.path, "error_code": fs.code}),
            ),
            Some(format!(
                "filesystem access for {} (record kind `{}`)",
                r.function_id, r.kind
            )),
            None,
            Vec::new(),
            false,
            Some(fs.path.clone()),
        ),
        (None, Some(args)) => {
            let command = command_of(&r.function_id, args);
            let shell = exec || command.is_some();
            // Printed once: the pretty form is made from the compact one.
            let full = serde_json::to_string(args).unwrap_or_default();
            let pretty = j::clip(
                &switchboard_core::pretty::pretty_from_compact(&full),
                j::MAX_TEXT,
            );
            let compact = j::clip(&full, j::MAX_TEXT);
            (
                switchboard_core::gate::command_summary(
                    &command.clone().unwrap_or_else(|| compact.clone()),
                ),
                command.clone().unwrap_or(compact),
                pretty,
                None,
                command,
                Vec::new(),
                shell,
                None,
            )
        }
        (None, None) => {
            let excerpt = r.excerpt.clone().unwrap_or_default();
            (
                format!("excerpt: {}", switchboard_core::text::one_line(&excerpt, 160)),
                format!("excerpt: {excerpt}"),
                excerpt,
                Some(
                    "arguments excerpt (redacted by the approval gate): the full arguments are not known; rules never allow on an excerpt"
                        .into(),
                ),
                None,
                vec![(
                    EXCERPT_MARKER.to_string(),
                    "the card shows a redacted excerpt, not the full arguments".to_string(),
                )],
                exec,
                None,
            )
        }
    };
    let allow = match r.fs {
        Some(_) if r.kind == "folder_access" => {
            json!({"session_id": r.session, "function_call_id": r.call, "decision": "allow", "grant_scope": "once"})
        }
        Some(_) => {
            json!({"session_id": r.session, "function_call_id": r.call, "decision": "allow", "access_duration": "once"})
        }
        None => json!({"session_id": r.session, "function_call_id": r.call, "decision": "allow"}),
    };
    let opened = if r.pending_at > 0 && r.pending_at <= now_ms {
        r.pending_at
    } else {
        now_ms
    };
    Gate {
        id: id.to_string(),
        node_key: node_key(root, &r.session),
        asked_by: Some(if r.depth > 0 {
            format!("{title} (sub-agent, depth {})", r.depth)
        } else {
            title.to_string()
        }),
        kind: GateKind::Permission(Permission {
            tool: r.function_id.clone(),
            summary,
            rule_arg,
            input,
            title: Some(format!("iii session {title} · call {}", r.call)),
            description,
            decision_reason: None,
            blocked_path: blocked,
            suggestions: Vec::new(),
            always_allowed: false,
            default_to_no: false,
            diff: None,
            options: options(r.fs.is_some()),
            shell,
            command,
            env,
            covered_by: None,
            // `approval::resolve` carries a `reason` the model reads: the deny asks for it.
            deny_reason: Some(DEFAULT_DENY.into()),
            editable: false,
            environment: Vec::new(),
            own_terminal: None,
        }),
        opened_ms: opened,
        default_reply: pretty_json(&allow),
        reply_definition: "",
    }
}

/// A held call's card id: `iii:<session>:<call>`, `#<version>` after for a changed record's.
/// The engine names sessions and calls with any text: a `%`, `:` or `#` in them is written
/// `%25`, `%3A`, `%23`, so two calls never share an id (`a:b`+`c` and `a`+`b:c`; `c#2` and
/// `c` at version 2). Ids without those characters read as they always did.
pub(super) fn gate_id(r: &Record, version: u32) -> String {
    fn part(s: &str) -> std::borrow::Cow<'_, str> {
        if !s.contains(['%', ':', '#']) {
            return s.into();
        }
        s.replace('%', "%25")
            .replace(':', "%3A")
            .replace('#', "%23")
            .into()
    }
    let (session, call) = (part(&r.session), part(&r.call));
    if version <= 1 {
        format!("iii:{session}:{call}")
    } else {
        format!("iii:{session}:{call}#{version}")
    }
}
