//! The agent's requests to us (fs, terminal, permission, cancel) and the session-directory check.

use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use super::actions::{Action, TerminalSpec};
use super::wire::s;
use super::{Mapper, Out};
use crate::codec;
use crate::codec::schema;
use switchboard_core::text::sanitize;
use switchboard_core::transcript::Level;

/// Lexically normalised absolute path (no `.`/`..`), or None when it is relative.
pub(super) fn normalise(p: &Path) -> Option<PathBuf> {
    if !p.is_absolute() {
        return None;
    }
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    Some(out)
}

impl Mapper {
    pub(super) fn gate_id(id: &Value) -> String {
        format!("acp:{}", codec::id_key(id))
    }

    pub(super) fn agent_request(&mut self, id: Value, method: &str, params: &Value, out: &mut Out) {
        let gid = Self::gate_id(&id);
        if self.theirs.contains_key(&gid) || self.waiting.contains_key(&gid) {
            // Not answered on its own: an answer with this id would land on the first request.
            out.protocol(
                Level::Error,
                format!(
                    "duplicate id: the agent reused request id {id} while it is pending ({}); not answered separately",
                    sanitize(method)
                ),
            );
            out.actions.push(Action::Note(format!(
                "duplicate-id: request id {id} ({method}) arrived again while pending; not answered separately"
            )));
            return;
        }
        let bad = |out: &mut Out, e: String| {
            out.lines.push(codec::error(
                &id,
                codec::INVALID_PARAMS,
                &format!("invalid params: {e}"),
                None,
            ));
            out.protocol(
                Level::Warn,
                format!("{method} with invalid params (answered -32602): {e}"),
            );
        };
        // A capability we did not offer is not served, whatever the agent asks.
        let withheld = (method.starts_with("fs/") && self.opts.withhold_fs)
            || (method.starts_with("terminal/") && self.opts.withhold_terminal);
        match method {
            _ if withheld => {
                out.lines.push(codec::error(
                    &id,
                    codec::METHOD_NOT_FOUND,
                    "Method not found: the client capability was not offered",
                    Some(json!(method)),
                ));
                out.protocol(
                    Level::Warn,
                    format!(
                        "the agent called {} although switchboard did not offer it: answered -32601",
                        sanitize(method)
                    ),
                );
            }
            "session/request_permission" => {
                match codec::typed::<schema::RequestPermissionRequest>(params) {
                    Ok(r) => self.permission(id, gid, r, out),
                    Err(e) => bad(out, e),
                }
            }
            "fs/read_text_file" => match codec::typed::<schema::ReadTextFileRequest>(params) {
                Ok(r) => match self.within_cwd(&r.path) {
                    Ok(path) => out.actions.push(Action::ReadFile {
                        id,
                        path,
                        line: r.line,
                        limit: r.limit,
                    }),
                    Err(e) => self.refuse(&id, method, &e, out),
                },
                Err(e) => bad(out, e),
            },
            "fs/write_text_file" => match codec::typed::<schema::WriteTextFileRequest>(params) {
                Ok(r) => match self.within_cwd(&r.path) {
                    Ok(path) => out.actions.push(Action::PrepareWrite {
                        id,
                        path,
                        content: r.content,
                    }),
                    Err(e) => self.refuse(&id, method, &e, out),
                },
                Err(e) => bad(out, e),
            },
            "terminal/create" => match codec::typed::<schema::CreateTerminalRequest>(params) {
                Ok(r) => {
                    let cwd = match r.cwd.as_deref() {
                        None => Ok(self.opts.cwd.clone()),
                        Some(c) => self.within_cwd(c),
                    };
                    let cwd = match cwd {
                        Ok(c) => c,
                        Err(e) => return self.refuse(&id, method, &e, out),
                    };
                    let spec = TerminalSpec {
                        command: r.command,
                        args: r.args,
                        env: r.env.into_iter().map(|e| (e.name, e.value)).collect(),
                        cwd,
                        output_byte_limit: r.output_byte_limit,
                    };
                    self.terminal_gate(id, gid, spec, out);
                }
                Err(e) => bad(out, e),
            },
            "terminal/output" | "terminal/wait_for_exit" | "terminal/kill" | "terminal/release" => {
                let Some(tid) = s(params, "terminalId") else {
                    return bad(out, "missing terminalId".into());
                };
                out.actions.push(match method {
                    "terminal/output" => Action::TerminalOutput {
                        id,
                        terminal_id: tid,
                    },
                    "terminal/wait_for_exit" => {
                        // Answered when the process exits: in flight until then.
                        self.waiting.insert(gid, id.clone());
                        Action::WaitForExit {
                            id,
                            terminal_id: tid,
                        }
                    }
                    "terminal/kill" => Action::KillTerminal {
                        id,
                        terminal_id: tid,
                    },
                    _ => Action::ReleaseTerminal {
                        id,
                        terminal_id: tid,
                    },
                });
            }
            other => {
                out.lines.push(codec::error(
                    &id,
                    codec::METHOD_NOT_FOUND,
                    "Method not found",
                    Some(json!(other)),
                ));
                out.protocol(
                    Level::Warn,
                    format!(
                        "the agent called {} which switchboard does not serve: answered -32601",
                        sanitize(other)
                    ),
                );
            }
        }
    }

    /// The session sent the answer to a request it answered later (`terminal/wait_for_exit`):
    /// its id is free again.
    pub fn waited(&mut self, id: &Value) {
        self.waiting.remove(&Self::gate_id(id));
    }

    /// Requests the session still owes an answer outside any gate.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// On exit, an error answer for each request still in flight whose waiter did not answer.
    pub fn waiting_answers(&mut self) -> Vec<String> {
        std::mem::take(&mut self.waiting)
            .into_values()
            .map(|id| codec::error(&id, codec::INTERNAL_ERROR, "switchboard exited", None))
            .collect()
    }

    pub(super) fn refuse(&mut self, id: &Value, method: &str, why: &str, out: &mut Out) {
        out.lines.push(codec::error(id, codec::REFUSED, why, None));
        out.protocol(Level::Warn, format!("{method} refused: {why}"));
    }

    /// `p` if it lies within the session cwd (lexically), else why not.
    pub fn within_cwd(&self, p: &Path) -> Result<PathBuf, String> {
        let Some(n) = normalise(p) else {
            return Err(format!("path {} is not absolute", p.display()));
        };
        let root = normalise(&self.opts.cwd).unwrap_or_else(|| self.opts.cwd.clone());
        if n.starts_with(&root) {
            Ok(n)
        } else {
            Err(format!(
                "path {} is outside the session directory {}",
                p.display(),
                root.display()
            ))
        }
    }
}
