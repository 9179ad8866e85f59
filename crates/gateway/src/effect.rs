//! What an approved effect did, as a value (`Outcome`, from the engine) and as the one
//! transcript row that tells it: a write's path, bytes and new revision, a command's exit
//! status and output (updated while it runs, see `watch`), or the refusal after approval in
//! the error style. The card and its audit row say what was asked and who decided; this row
//! says what happened, so a call reads as one story.

use serde_json::{Map, Value};

use super::codec::Refusal;
use super::tools::exec::{Status, Watch};
use switchboard_core::text::{sanitize, visible_line};
use switchboard_core::transcript::{ItemKind, ItemOp};

/// Hex digits of a revision shown on a row (the whole SHA-256 is in the host's result).
pub const SHORT_SHA: usize = 12;

/// What an approved (or mode-approved) effect did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A write, patch or delete applied: `bytes` and `sha256` are `None` for a delete.
    File {
        tool: String,
        path: String,
        created: bool,
        bytes: Option<u64>,
        sha256: Option<String>,
    },
    /// A command started; its row follows its output (`Out::Output`) until it ends.
    Command {
        command_id: String,
        command: String,
        watch: Watch,
    },
    /// Input, stop or an extra tool: what it answered, in short.
    Other { tool: String, text: String },
    /// Refused after the owner (or the mode) approved it: nothing happened.
    Refused { tool: String, why: String },
}

/// The outcome of `tool`'s effect from its result (`watch`: the started command's handle).
pub fn outcome_of(
    tool: &str,
    args: &Map<String, Value>,
    r: &Result<Value, Refusal>,
    watch: Option<Watch>,
) -> Outcome {
    let v = match r {
        Ok(v) => v,
        Err(r) => return refused(tool, r),
    };
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    match (tool, watch) {
        ("workspace_write" | "workspace_patch" | "workspace_delete", _) => Outcome::File {
            tool: tool.to_string(),
            path: s("path").unwrap_or_default(),
            created: v.get("created").and_then(Value::as_bool) == Some(true),
            bytes: v.get("size").and_then(Value::as_u64),
            sha256: s("sha256"),
        },
        ("workspace_exec", Some(watch)) => Outcome::Command {
            command_id: s("commandId").unwrap_or_default(),
            command: args
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            watch,
        },
        ("workspace_input", _) => Outcome::Other {
            tool: tool.to_string(),
            text: format!(
                "queued {} bytes for command {}",
                v.get("queued").and_then(Value::as_u64).unwrap_or(0),
                s("commandId").unwrap_or_default()
            ),
        },
        ("workspace_stop", _) => Outcome::Other {
            tool: tool.to_string(),
            text: match v.get("stopped").and_then(Value::as_bool) {
                Some(true) => format!("stopped command {}", s("commandId").unwrap_or_default()),
                _ => format!(
                    "command {} had already ended",
                    s("commandId").unwrap_or_default()
                ),
            },
        },
        _ => Outcome::Other {
            tool: tool.to_string(),
            text: match v.get("output") {
                Some(Value::String(o)) => o.clone(),
                Some(o) => switchboard_core::text::pretty_json(o),
                None => switchboard_core::text::pretty_json(v),
            },
        },
    }
}

/// A refusal after approval (re-check, containment, a stale revision, the journal).
pub fn refused(tool: &str, r: &Refusal) -> Outcome {
    Outcome::Refused {
        tool: tool.to_string(),
        why: r.message.clone(),
    }
}

/// Most bytes of a result or an output a row keeps; the rest is the host's (and `v` shows
/// what the row keeps, the collapsed row its first lines).
pub const SHOWN: usize = 16 * 1024;

/// The row of an effect's outcome, keyed so a command's later output replaces it.
pub fn row(session: &str, call_id: &str, o: &Outcome) -> ItemOp {
    match o {
        Outcome::Command {
            command_id,
            command,
            ..
        } => command_row(command_id, command, &Status::Running, "", false),
        Outcome::File {
            tool,
            path,
            created,
            bytes,
            sha256,
        } => {
            let path = visible_line(path);
            let text = match (bytes, sha256) {
                (Some(n), Some(sha)) => {
                    let verb = match (tool.as_str(), created) {
                        (_, true) => "created",
                        ("workspace_patch", _) => "patched",
                        _ => "wrote",
                    };
                    format!("{verb} {path} · {n} bytes · revision {}", short_sha(sha))
                }
                _ => format!("deleted {path}"),
            };
            result(format!("gw:{session}:{call_id}"), call_id, text, false)
        }
        Outcome::Other { tool, text } => result(
            format!("gw:{session}:{call_id}"),
            call_id,
            format!("{}: {}", visible_line(tool), sanitize(clip_tail(text))),
            false,
        ),
        // The audit row above names the call; this one says it did not happen, and why.
        Outcome::Refused { why, .. } => result(
            format!("gw:{session}:{call_id}"),
            call_id,
            format!("refused after approval: {}", sanitize(clip_tail(why))),
            true,
        ),
    }
}

/// A command's row: its line and status first, then the output kept (sanitized already).
pub fn command_row(
    command_id: &str,
    command: &str,
    status: &Status,
    output: &str,
    cut: bool,
) -> ItemOp {
    let (state, failed) = match status {
        Status::Running => ("running".to_string(), false),
        Status::Exited(c) => (format!("exit {c}"), *c != 0),
        Status::Signalled(s) => (format!("killed by signal {s}"), true),
        Status::TimedOut => ("timed out, killed".to_string(), true),
        Status::Stopped => ("stopped (workspace_stop)".to_string(), true),
    };
    let mut text = format!(
        "$ {} · {state}",
        visible_line(&switchboard_core::gate::command_summary(command))
    );
    if cut {
        text.push_str(&format!(" · last {} KiB of output", SHOWN / 1024));
    }
    text.push('\n');
    text.push_str(match (output.is_empty(), status) {
        (false, _) => output,
        (true, Status::Running) => "(no output yet)",
        (true, _) => "(no output)",
    });
    ItemOp::Upsert {
        key: format!("gw-cmd:{command_id}"),
        kind: ItemKind::ToolResult {
            tool_use_id: command_id.to_string(),
            text,
            is_error: failed,
        },
    }
}

fn result(key: String, call_id: &str, text: String, is_error: bool) -> ItemOp {
    ItemOp::Upsert {
        key,
        kind: ItemKind::ToolResult {
            tool_use_id: call_id.to_string(),
            text,
            is_error,
        },
    }
}

fn short_sha(sha: &str) -> &str {
    sha.get(..SHORT_SHA).unwrap_or(sha)
}

/// At most `SHOWN` bytes of `s`, its end kept (the newest output), cut at a character.
pub fn clip_tail(s: &str) -> &str {
    if s.len() <= SHOWN {
        return s;
    }
    let mut cut = s.len() - SHOWN;
    while !s.is_char_boundary(cut) {
        cut += 1;
    }
    &s[cut..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Code;
    use serde_json::json;

    fn text_of(op: &ItemOp) -> (String, bool) {
        match op {
            ItemOp::Upsert {
                kind: ItemKind::ToolResult { text, is_error, .. },
                ..
            } => (text.clone(), *is_error),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_write_reads_with_its_bytes_and_short_revision() {
        let sha = "3f2a9c1b0d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8";
        let o = outcome_of(
            "workspace_write",
            &Map::new(),
            &Ok(json!({"path": "a\nb.txt", "created": false, "size": 14, "sha256": sha})),
            None,
        );
        let op = row("s", "w1", &o);
        let (text, err) = text_of(&op);
        assert_eq!(text, "wrote a^Jb.txt · 14 bytes · revision 3f2a9c1b0d4e");
        assert!(!err);
        let o = outcome_of(
            "workspace_delete",
            &Map::new(),
            &Ok(json!({"path": "gone.txt", "deleted": true, "sha256": null})),
            None,
        );
        assert_eq!(text_of(&row("s", "d1", &o)).0, "deleted gone.txt");
    }

    #[test]
    fn a_refusal_after_approval_is_an_error_row_with_its_reason() {
        let r = Refusal::new(
            Code::PathOutsideRoot,
            "sub/x.txt: leads outside the root\x1b[2J",
        );
        let o = outcome_of("workspace_write", &Map::new(), &Err(r), None);
        let (text, err) = text_of(&row("s", "w1", &o));
        assert!(err);
        assert_eq!(
            text,
            "refused after approval: sub/x.txt: leads outside the root^[[2J"
        );
    }

    #[test]
    fn a_command_row_names_its_status_and_keeps_its_output() {
        let (text, err) = text_of(&command_row(
            "c1",
            "printf x; exit 3",
            &Status::Exited(3),
            "hello\n",
            false,
        ));
        assert_eq!(text, "$ printf x; exit 3 · exit 3\nhello\n");
        assert!(err);
        let op = command_row("c1", "sleep 9\necho", &Status::Running, "", true);
        let (text, err) = text_of(&op);
        assert!(
            text.starts_with("$ sleep 9 (+1 more line) · running · last 16 KiB"),
            "{text}"
        );
        assert!(text.ends_with("(no output yet)"));
        assert!(!err);
        assert!(matches!(op, ItemOp::Upsert { key, .. } if key == "gw-cmd:c1"));
    }

    #[test]
    fn clip_tail_keeps_the_end_at_a_character() {
        let s = format!("é{}", "x".repeat(SHOWN));
        let t = clip_tail(&s);
        assert_eq!(t.len(), SHOWN);
        let s = format!("a{}", "é".repeat(SHOWN / 2));
        assert!(clip_tail(&s).len() <= SHOWN);
        assert!(clip_tail(&s).starts_with('é'));
    }
}
