//! Client terminals started for the agent: creation and output updates as transcript rows.

use serde_json::{Value, json};

use super::{Mapper, Out, SHOWN_OUTPUT, TermView};
use crate::codec;
use switchboard_core::text::sanitize;
use switchboard_core::transcript::{ItemKind, ItemOp};

impl Mapper {
    /// A terminal was started for request `id`: answer it and show its row.
    pub fn terminal_created(&mut self, id: &Value, terminal_id: &str, command: &str) -> Out {
        let mut out = Out::default();
        out.lines
            .push(codec::result(id, json!({"terminalId": terminal_id})));
        let tv = std::sync::Arc::make_mut(self.terms.entry(terminal_id.to_string()).or_default());
        tv.command = command.to_string();
        let row = term_row(terminal_id, tv);
        out.item(None, row);
        out
    }

    /// New output or an exit of a terminal: refresh its row (linked to its tool call).
    pub fn terminal_update(
        &mut self,
        terminal_id: &str,
        output: &str,
        truncated: bool,
        exit: Option<String>,
    ) -> Out {
        let mut out = Out::default();
        let tv = std::sync::Arc::make_mut(self.terms.entry(terminal_id.to_string()).or_default());
        let tail = if output.len() > SHOWN_OUTPUT {
            let mut cut = output.len() - SHOWN_OUTPUT;
            while !output.is_char_boundary(cut) {
                cut += 1;
            }
            &output[cut..]
        } else {
            output
        };
        tv.output = sanitize(tail);
        tv.truncated = truncated || tail.len() < output.len();
        if exit.is_some() {
            tv.exit = exit;
        }
        let row = term_row(terminal_id, tv);
        out.item(None, row);
        out
    }
}

pub(super) fn term_row(tid: &str, tv: &TermView) -> ItemOp {
    let mut text = format!("terminal {tid}");
    if !tv.command.is_empty() {
        // Never reads as if only the first line ran.
        text.push_str(&format!(
            " · $ {}",
            switchboard_core::gate::command_summary(&tv.command)
        ));
    }
    match &tv.exit {
        Some(e) => text.push_str(&format!(" · {e}")),
        None => text.push_str(" · running"),
    }
    if tv.truncated {
        text.push_str(" · output truncated");
    }
    text.push('\n');
    text.push_str(if tv.output.is_empty() {
        "(no output yet)"
    } else {
        &tv.output
    });
    let failed = tv.exit.as_deref().is_some_and(|e| e != "exit 0");
    ItemOp::Upsert {
        key: format!("term:{tid}"),
        kind: ItemKind::ToolResult {
            tool_use_id: tv.tool.clone().unwrap_or_else(|| tid.to_string()),
            text,
            is_error: failed,
        },
    }
}
