//! Gates raised for the agent: permission requests, file writes, terminals, cancellations.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::RawJson;
use super::actions::TerminalSpec;
use super::wire::{command_of, wire_name};
use super::{Incoming, Mapper, Out, Theirs};
use crate::codec;
use crate::codec::schema;
use switchboard_core::diff::Diff;
use switchboard_core::gate::{Gate, GateKind, PermOption, Permission};
use switchboard_core::msg::BackendEvent;
use switchboard_core::text::pretty_json;
use switchboard_core::transcript::Level;
use switchboard_core::tree::ROOT_KEY;

impl Mapper {
    pub(super) fn permission(
        &mut self,
        id: Value,
        gid: String,
        r: schema::RequestPermissionRequest,
        out: &mut Out,
    ) {
        let tid = r.tool_call.tool_call_id.0.to_string();
        let known = self.tools.contains_key(&tid);
        self.patch_tool(&tid, &r.tool_call, out);
        // Asked again (after a reject, say): undecided until this answer.
        if let Some(v) = self.tools.get_mut(&tid).map(std::sync::Arc::make_mut) {
            v.decision = None;
        }
        if !known {
            self.seg += 1;
            self.tool_uses += 1;
        }
        self.tool_rows(&tid, out);
        if !known {
            self.remember_tool(&tid);
        }
        let view = self
            .tools
            .get(&tid)
            .map(|v| (**v).clone())
            .unwrap_or_default();
        let options: Vec<PermOption> = r
            .options
            .iter()
            .map(|o| PermOption {
                option_id: o.option_id.0.to_string(),
                name: o.name.clone(),
                kind: wire_name(&o.kind),
            })
            .collect();
        if options.is_empty() {
            self.tool_decided(&tid, &[], &json!({"outcome":{"outcome":"cancelled"}}), out);
            out.lines.push(codec::result(
                &id,
                json!({"outcome":{"outcome":"cancelled"}}),
            ));
            out.protocol(
                Level::Error,
                "session/request_permission without options: answered cancelled",
            );
            return;
        }
        let tool = view.tool_name.clone().unwrap_or_else(|| {
            if view.kind.is_empty() {
                "tool".into()
            } else {
                view.kind.clone()
            }
        });
        let raw_input = view.raw_input.as_ref().map(RawJson::value);
        let command = command_of(raw_input.as_ref());
        // A shell line whatever the tool is called: an `execute` tool, or an input that
        // carries a command.
        let shell = view.kind == "execute" || command.is_some() || tool == "Bash";
        let input = match (&command, &raw_input) {
            (Some(c), _) => format!("$ {c}"),
            (None, Some(r)) => pretty_json(r),
            (None, None) => String::new(),
        };
        let default = options
            .iter()
            .find(|o| o.kind == "allow_once")
            .unwrap_or(&options[0]);
        let default_reply =
            pretty_json(&json!({"outcome":{"outcome":"selected","optionId":default.option_id}}));
        let kind = GateKind::Permission(Permission {
            // Every text exactly as sent: the card shows hostile characters visibly
            // (`^[]0;…^G`) instead of losing what follows them.
            tool: tool.clone(),
            summary: switchboard_core::gate::command_summary(
                &command.clone().unwrap_or_else(|| view.title.clone()),
            ),
            rule_arg: match (&command, &view.raw_input) {
                (Some(c), _) => c.clone(),
                (None, Some(r)) => r.0.to_string(),
                (None, None) => view.title.clone(),
            },
            input,
            title: Some(view.title.clone()).filter(|t| !t.is_empty()),
            description: None,
            decision_reason: None,
            blocked_path: None,
            suggestions: Vec::new(),
            always_allowed: false,
            default_to_no: false,
            diff: view.diff.clone(),
            options: options.clone(),
            shell,
            command: command.clone(),
            env: Vec::new(),
            covered_by: None,
            deny_reason: None,
            editable: false,
            environment: Vec::new(),
            own_terminal: None,
        });
        self.theirs.insert(
            gid.clone(),
            Incoming {
                rpc_id: id,
                what: Theirs::Permission {
                    options,
                    tool: tid.clone(),
                },
            },
        );
        self.note_edits(&gid, &view.edits, &view.title);
        out.ev(BackendEvent::GateOpen(Box::new(Gate {
            id: gid,
            node_key: ROOT_KEY.into(),
            asked_by: None,
            kind,
            opened_ms: self.now,
            default_reply,
            reply_definition: "RequestPermissionResponse",
        })));
    }

    pub(super) fn client_gate(
        &mut self,
        id: Value,
        gid: String,
        what: Theirs,
        perm: Permission,
        def: &'static str,
        out: &mut Out,
    ) {
        self.theirs
            .insert(gid.clone(), Incoming { rpc_id: id, what });
        out.ev(BackendEvent::GateOpen(Box::new(Gate {
            id: gid,
            node_key: ROOT_KEY.into(),
            asked_by: None,
            kind: GateKind::Permission(perm),
            opened_ms: self.now,
            default_reply: "{}".into(),
            reply_definition: def,
        })));
    }

    pub(super) fn yes_no(yes: &str) -> Vec<PermOption> {
        vec![
            PermOption {
                option_id: "allow".into(),
                name: yes.into(),
                kind: "allow_once".into(),
            },
            PermOption {
                option_id: "reject".into(),
                name: "Refuse".into(),
                kind: "reject_once".into(),
            },
        ]
    }

    /// The `fs/write_text_file` gate, once the session read the file on disk (`None`: missing).
    pub fn write_gate(
        &mut self,
        id: Value,
        path: PathBuf,
        content: String,
        old: Option<String>,
    ) -> Out {
        let mut out = Out::default();
        let gid = Self::gate_id(&id);
        if self.theirs.contains_key(&gid) {
            out.protocol(
                Level::Error,
                format!("the agent reused request id {id} while it is pending"),
            );
            return out;
        }
        // Covered by an approved edit: still a gate, so deny and ask rules for the write are
        // checked first; the core allows it without a card when none applies.
        let covered_by = self.covered_write(&id, &path, &content, old.as_deref(), &mut out);
        let shown = path.display().to_string();
        let diff = Diff::unified(&shown, old.as_deref().unwrap_or(""), &content, 3);
        let perm = Permission {
            tool: "fs/write_text_file".into(),
            summary: shown.clone(),
            rule_arg: switchboard_core::rules::normalise_path(&shown),
            input: shown.clone(),
            title: Some(format!(
                "{} {} ({} bytes)",
                if old.is_some() { "overwrite" } else { "create" },
                // One line, a newline in the path shown (`^J`): the card names this file.
                switchboard_core::text::visible_line(&shown),
                content.len()
            )),
            description: None,
            decision_reason: None,
            blocked_path: None,
            suggestions: Vec::new(),
            always_allowed: false,
            default_to_no: false,
            diff: Some(diff),
            options: Self::yes_no("Write the file"),
            shell: false,
            command: None,
            env: Vec::new(),
            covered_by,
            deny_reason: None,
            editable: false,
            environment: Vec::new(),
            own_terminal: None,
        };
        self.client_gate(
            id,
            gid,
            Theirs::Write {
                path,
                content,
                base: old
                    .as_deref()
                    .map(|o| switchboard_backend::contain::digest(o.as_bytes())),
            },
            perm,
            "WriteTextFileResponse",
            &mut out,
        );
        out
    }

    pub(super) fn terminal_gate(
        &mut self,
        id: Value,
        gid: String,
        spec: TerminalSpec,
        out: &mut Out,
    ) {
        // Shown exactly as it runs (argv quoted, `sh -c` for a bare shell line); rules match
        // the variables it sets, then the line (`FOO=1 cargo test`).
        let line = spec.command_line();
        let run = if spec.args.is_empty() {
            spec.command.clone()
        } else {
            line.clone()
        };
        let mut rule_arg = String::new();
        for (k, v) in &spec.env {
            rule_arg.push_str(&format!(
                "{}={} ",
                k,
                super::actions::shell_join([v.as_str()])
            ));
        }
        rule_arg.push_str(&run);
        let perm = Permission {
            tool: "terminal".into(),
            summary: switchboard_core::gate::command_summary(&line),
            rule_arg,
            input: format!("$ {line}\n(in {})", spec.cwd.display()),
            title: Some("run a command in a client terminal".into()),
            description: Some(format!("in {}", spec.cwd.display())),
            decision_reason: None,
            blocked_path: None,
            suggestions: Vec::new(),
            always_allowed: false,
            default_to_no: false,
            diff: None,
            options: Self::yes_no("Run it"),
            shell: true,
            command: Some(line.clone()),
            env: spec.env.clone(),
            covered_by: None,
            deny_reason: None,
            editable: false,
            environment: Vec::new(),
            own_terminal: None,
        };
        self.client_gate(
            id,
            gid,
            Theirs::Terminal { spec },
            perm,
            "CreateTerminalResponse",
            out,
        );
    }

    pub(super) fn cancel_request(&mut self, params: &Value, out: &mut Out) {
        let Some(rid) = params.get("requestId") else {
            return out.protocol(Level::Warn, "$/cancel_request without requestId");
        };
        let gid = Self::gate_id(rid);
        let Some(inc) = self.theirs.remove(&gid) else {
            return out.protocol(
                Level::Info,
                format!("$/cancel_request for {rid}, which is not pending"),
            );
        };
        let line = match &inc.what {
            Theirs::Permission { options, tool } => {
                let body = json!({"outcome":{"outcome":"cancelled"}});
                self.tool_decided(tool, options, &body, out);
                codec::result(&inc.rpc_id, body)
            }
            _ => codec::error(
                &inc.rpc_id,
                codec::REQUEST_CANCELLED,
                "Request cancelled",
                None,
            ),
        };
        out.lines.push(line);
        out.ev(BackendEvent::GateWithdrawn { id: gid });
    }

    // ---- commands from the core -------------------------------------------------------------
}
