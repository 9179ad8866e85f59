//! `switchboard export FILE --markdown`: a readable transcript for an issue or a review.

use std::fmt::Write;

use super::feed::Feeder;
use super::load::Loaded;
use crate::core::State;
use crate::core::text::{human_count, human_duration, neutralize};
use crate::core::transcript::{ItemKind, Level, Tone};

/// The whole document neutralized (`^[`, `<U+202E>`): it goes to a terminal or into an issue,
/// where an agent's escape sequences or bidi overrides must not act. The recording keeps them.
pub fn markdown(loaded: &Loaded, title: &str) -> String {
    let feeder = Feeder::until(loaded, loaded.frames.len());
    neutralize(&render(&feeder.state, title, loaded)).into_owned()
}

fn fence(out: &mut String, lang: &str, body: &str) {
    let ticks = if body.contains("```") { "````" } else { "```" };
    let _ = writeln!(out, "{ticks}{lang}\n{}\n{ticks}", body.trim_end());
}

fn render(state: &State, title: &str, loaded: &Loaded) -> String {
    let mut out = String::new();
    let s = &state.session;
    let _ = writeln!(out, "# switchboard session: {title}\n");
    let _ = writeln!(
        out,
        "- backend: {} · model: {} · mode: {}",
        s.backend,
        s.model.as_deref().unwrap_or("?"),
        s.permission_mode.as_deref().unwrap_or("?")
    );
    if let Some(cwd) = &s.cwd {
        let _ = writeln!(out, "- cwd: `{cwd}`");
    }
    let _ = writeln!(
        out,
        "- {} frames · {} turn(s) · {} in / {} out tokens · ${:.4} · {} gate(s) answered",
        loaded.frames.len(),
        s.turns,
        human_count(s.input_tokens),
        human_count(s.output_tokens),
        s.cost_usd,
        state.answered
    );
    let _ = writeln!(out, "\n## Session tree\n");
    for id in state.tree.preorder() {
        let n = &state.tree.nodes[id];
        let indent = "  ".repeat(n.depth);
        let desc = if n.description.is_empty() {
            String::new()
        } else {
            format!(": {}", n.description)
        };
        let _ = writeln!(
            out,
            "{indent}- **{}**{desc} ({}{})",
            n.name,
            n.status.label(),
            if n.tool_uses > 0 {
                format!(", {} tool uses", n.tool_uses)
            } else {
                String::new()
            }
        );
    }
    for id in state.tree.preorder() {
        let n = &state.tree.nodes[id];
        if n.transcript.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\n## {}{}\n",
            n.name,
            if n.description.is_empty() {
                String::new()
            } else {
                format!(" — {}", n.description)
            }
        );
        let items = &n.transcript.items;
        items.scan(0, items.len(), |_, item| {
            item_md(&mut out, &item.kind);
            std::ops::ControlFlow::Continue(())
        });
    }
    out
}

fn item_md(out: &mut String, kind: &ItemKind) {
    match kind {
        ItemKind::User { text } => {
            let _ = writeln!(out, "**User:**\n");
            for l in text.lines() {
                let _ = writeln!(out, "> {l}");
            }
            out.push('\n');
        }
        ItemKind::Assistant { text, aborted, .. } => {
            let _ = writeln!(
                out,
                "{text}{}\n",
                if *aborted { " *(aborted)*" } else { "" }
            );
        }
        ItemKind::Thinking { text, redacted, .. } => {
            if *redacted {
                let _ = writeln!(out, "*thinking (redacted)*\n");
            } else {
                let _ = writeln!(
                    out,
                    "<details><summary>thinking</summary>\n\n{text}\n\n</details>\n"
                );
            }
        }
        ItemKind::ToolCall {
            name,
            summary,
            input,
            diff,
            ..
        } => {
            let _ = writeln!(
                out,
                "**Tool `{name}`** {}\n",
                if summary.is_empty() {
                    String::new()
                } else {
                    format!("`{summary}`")
                }
            );
            match diff {
                Some(d) => {
                    fence(out, "diff", &d.to_text());
                }
                None => {
                    let _ = writeln!(out, "<details><summary>input</summary>\n");
                    fence(out, "json", input);
                    let _ = writeln!(out, "</details>\n");
                }
            }
        }
        ItemKind::ToolResult { text, is_error, .. } => {
            let _ = writeln!(
                out,
                "{}",
                if *is_error {
                    "Result (error):"
                } else {
                    "Result:"
                }
            );
            fence(out, "", if text.is_empty() { "(no output)" } else { text });
        }
        ItemKind::System { label, text } => {
            let _ = writeln!(out, "*{label}: {text}*\n");
        }
        ItemKind::TurnResult {
            ok,
            subtype,
            text,
            cost_usd,
            input_tokens,
            output_tokens,
            duration_ms,
        } => {
            let _ = writeln!(
                out,
                "---\n*turn {} · {} · {} in / {} out{}*{}\n",
                if *ok { "done" } else { subtype },
                human_duration(*duration_ms),
                human_count(*input_tokens),
                human_count(*output_tokens),
                cost_usd.map(|c| format!(" · ${c:.4}")).unwrap_or_default(),
                if *ok {
                    String::new()
                } else {
                    format!("\n\n{text}")
                }
            );
        }
        ItemKind::Audit { text, tone } => {
            let mark = match tone {
                Tone::Allowed => "✔",
                Tone::Denied => "✘",
                Tone::Neutral => "•",
            };
            let _ = writeln!(out, "> **{mark} {text}**\n");
        }
        ItemKind::Protocol { level, text } => {
            let l = match level {
                Level::Info => "note",
                Level::Warn => "warning",
                Level::Error => "error",
            };
            let _ = writeln!(out, "*protocol {l}: {text}*\n");
        }
        ItemKind::Generic { label, raw } => {
            let _ = writeln!(out, "*{label}:*");
            fence(out, "json", raw);
        }
        #[allow(unreachable_patterns)]
        _ => {
            let _ = writeln!(out, "{}\n", kind.text());
        }
    }
}
