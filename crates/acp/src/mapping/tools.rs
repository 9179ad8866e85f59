//! Tool calls and their updates → tree nodes and transcript rows (content, diffs, terminals).

use std::borrow::Cow;

use super::RawJson;
use super::terminals::term_row;
use super::wire::{command_of, content_text, locations, tool_name, wire_name};
use super::{Mapper, Out, ToolView};
use crate::codec::schema;
use switchboard_core::diff::Diff;
use switchboard_core::msg::BackendEvent;
use switchboard_core::pretty::pretty_from_compact;
use switchboard_core::text::{one_line, pretty_json, sanitize, sanitize_owned};
use switchboard_core::transcript::{ItemKind, ItemOp};
use switchboard_core::tree::{NodePatch, ROOT_KEY};

pub(super) fn merge_diff(into: &mut Option<Diff>, d: Diff) {
    match into {
        Some(acc) => {
            acc.added += d.added;
            acc.removed += d.removed;
            acc.lines.extend(d.lines);
        }
        None => *into = Some(d),
    }
}

/// Tool calls whose views a session keeps. A view is what later updates of the call patch, so a
/// settled call (completed, failed, decided by a reject, or left over from an earlier turn) is
/// forgotten only when this many newer ones came after it: a session of days must not keep
/// every call's output twice (the row holds it too). About as many calls as the transcript
/// keeps row keys for (`KEY_CAP`: two a call, and the messages between calls): past that an
/// update of the call would start a fresh row anyway. An update for a forgotten call starts a
/// fresh view, like one for a call never announced.
pub(super) const TOOL_CAP: usize = 512;

impl Mapper {
    /// Note a call seen for the first time, and forget the oldest settled ones past `TOOL_CAP`
    /// (a few looks per call: calls still running go to the back of the line).
    pub(super) fn remember_tool(&mut self, id: &str) {
        let turn = self.turn_no;
        if let Some(v) = self.tools.get_mut(id) {
            std::sync::Arc::make_mut(v).turn = turn;
        }
        self.tool_order.push_back(id.to_string());
        let mut looks = 0;
        while self.tools.len() > TOOL_CAP && looks < 4 {
            looks += 1;
            let Some(old) = self.tool_order.pop_front() else {
                break;
            };
            let settled = self.tools.get(&old).is_none_or(|v| {
                v.decision.is_some()
                    || v.turn < turn
                    || matches!(v.status.as_str(), "completed" | "failed")
            });
            if settled {
                self.tools.remove(&old);
            } else {
                self.tool_order.push_back(old);
            }
        }
    }

    pub(super) fn set_raw_input(view: &mut ToolView, raw: Option<&serde_json::Value>) {
        // Printed once: the pretty form is made from the compact one.
        let compact = raw.map(RawJson::of);
        view.command = command_of(raw);
        view.input_shown = compact
            .as_ref()
            .map(|c| sanitize(&pretty_from_compact(&c.0)))
            .unwrap_or_default();
        view.raw_input = compact;
    }

    pub(super) fn set_raw_output(view: &mut ToolView, raw: Option<&serde_json::Value>) {
        view.output_shown = raw.map(|r| sanitize(&pretty_json(r)));
    }

    pub(super) fn set_content(view: &mut ToolView, content: &[schema::ToolCallContent]) {
        view.text.clear();
        view.diff = None;
        view.edits.clear();
        view.terminals.clear();
        for c in content {
            match c {
                schema::ToolCallContent::Content(c) => {
                    if !view.text.is_empty() {
                        view.text.push('\n');
                    }
                    view.text.push_str(&content_text(&c.content));
                }
                schema::ToolCallContent::Diff(d) => {
                    view.edits.push(super::edits::EditDiff {
                        path: d.path.clone(),
                        old: d.old_text.clone(),
                        new: d.new_text.clone(),
                    });
                    let path = d.path.display().to_string();
                    merge_diff(
                        &mut view.diff,
                        Diff::unified(&path, d.old_text.as_deref().unwrap_or(""), &d.new_text, 3),
                    );
                }
                schema::ToolCallContent::Terminal(t) => {
                    view.terminals.push(t.terminal_id.0.to_string())
                }
                _ => {}
            }
        }
        // Sanitized once here, not at every update drawn from it (a command's coloured
        // output is tens of kilobytes).
        view.text_sent = !view.text.trim().is_empty();
        if !view.text.is_empty() {
            view.text = sanitize_owned(Cow::Owned(std::mem::take(&mut view.text)));
        }
    }

    pub(super) fn patch_tool(&mut self, id: &str, u: &schema::ToolCallUpdate, _out: &mut Out) {
        let view = std::sync::Arc::make_mut(self.tools.entry(id.to_string()).or_default());
        let f = &u.fields;
        if let Some(t) = &f.title {
            view.title = t.clone();
        }
        if let Some(k) = &f.kind {
            view.kind = wire_name(k);
        }
        if let Some(st) = &f.status {
            view.status = wire_name(st);
        }
        if let Some(c) = &f.content {
            Self::set_content(view, c);
        }
        if let Some(l) = &f.locations {
            view.locations = locations(l);
        }
        if let Some(r) = &f.raw_input {
            Self::set_raw_input(view, Some(r));
        }
        if let Some(r) = &f.raw_output {
            Self::set_raw_output(view, Some(r));
        }
        if let Some(n) = tool_name(u.meta.as_ref()) {
            view.tool_name = Some(n);
        }
    }

    /// A permission about tool call `id` was answered with `body`: a reject or a cancel is
    /// written on its row (an allow leaves the row to the agent's own statuses).
    pub(super) fn tool_decided(
        &mut self,
        id: &str,
        options: &[switchboard_core::gate::PermOption],
        body: &serde_json::Value,
        out: &mut Out,
    ) {
        let outcome = &body["outcome"];
        let decision = match outcome["outcome"].as_str() {
            Some("cancelled") => Some("cancelled"),
            Some("selected") => outcome["optionId"].as_str().and_then(|oid| {
                options
                    .iter()
                    .find(|o| o.option_id == oid)
                    .filter(|o| o.kind.starts_with("reject"))
                    .map(|_| "rejected")
            }),
            _ => None,
        };
        let Some(view) = self.tools.get_mut(id).map(std::sync::Arc::make_mut) else {
            return;
        };
        if view.decision != decision {
            view.decision = decision;
            self.tool_rows(id, out);
        }
    }

    /// The tool call row, its text output row and its terminal rows.
    pub(super) fn tool_rows(&mut self, id: &str, out: &mut Out) {
        let Some(view) = self.tools.get(id) else {
            return;
        };
        let label = view.tool_name.clone().unwrap_or_else(|| {
            if view.kind.is_empty() {
                "tool".into()
            } else {
                view.kind.clone()
            }
        });
        // What the human decided outlives the agent's silence; a call that completes after
        // a reject says so.
        let status = match (view.decision, view.status.as_str()) {
            (Some(d), "completed") => format!("completed despite {d}"),
            (Some(d), _) => d.to_string(),
            (None, "") => "pending".to_string(),
            (None, s) => s.to_string(),
        };
        let mut summary = one_line(&sanitize(&view.title), 200);
        if let Some(cmd) = &view.command
            && !summary.contains(cmd.trim())
        {
            summary = format!("{summary} — $ {}", one_line(&sanitize(cmd), 120));
        }
        if !view.locations.is_empty() {
            summary.push_str(&format!(" ({})", view.locations.join(", ")));
        }
        for t in &view.terminals {
            summary.push_str(&format!(" → terminal {t}"));
        }
        // Both parts are sanitized already, and pretty JSON holds no escape to join across
        // the seam: the same text as sanitizing the whole.
        let output = view.output_shown.as_deref();
        let mut input =
            String::with_capacity(view.input_shown.len() + output.map_or(0, |o| o.len() + 9));
        input.push_str(&view.input_shown);
        if let Some(o) = output {
            input.push_str("\noutput: ");
            input.push_str(o);
        }
        out.item(
            None,
            ItemOp::Upsert {
                key: format!("tool:{id}"),
                kind: ItemKind::ToolCall {
                    id: id.to_string(),
                    name: format!("{} · {status}", sanitize(&label)),
                    summary,
                    input,
                    diff: view.diff.clone().map(Box::new),
                },
            },
        );
        if view.text_sent {
            out.item(
                None,
                ItemOp::Upsert {
                    key: format!("toolout:{id}"),
                    kind: ItemKind::ToolResult {
                        tool_use_id: id.to_string(),
                        text: view.text.clone(),
                        is_error: status == "failed",
                    },
                },
            );
        }
        for t in &view.terminals {
            let tv = self.terms.entry(t.clone()).or_default();
            if tv.tool.as_deref() != Some(id) {
                std::sync::Arc::make_mut(tv).tool = Some(id.to_string());
            }
            let row = term_row(t, tv);
            out.item(None, row);
        }
        out.ev(BackendEvent::NodeUpdate {
            key: ROOT_KEY.into(),
            patch: NodePatch {
                tool_uses: Some(self.tool_uses),
                last_tool: Some(sanitize(&label)),
                ..NodePatch::default()
            },
        });
    }
}
