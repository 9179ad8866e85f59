//! The gate inbox (`I`): every pending gate of every session, oldest first, with the marks of
//! a batch and the exact list a batch answer covers. Only the rows in the window are
//! formatted, so drawing it costs the screen, whatever the sessions' transcripts hold.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::theme::Theme;
use super::wrap::clip;
use switchboard_core::gate::{Gate, GateKind, command_summary};
use switchboard_core::state::{GateRef, SessionState, State};
use switchboard_core::text::human_duration;
use switchboard_core::update::workspace::not_batchable;

/// Kind of a gate, as the inbox's kind column names it.
fn kind_label(g: &Gate) -> &'static str {
    match &g.kind {
        GateKind::Permission(_) => "permission",
        GateKind::Breakpoint(_) => "breakpoint",
        GateKind::Question(_) => "question",
        GateKind::Dialog(_) => "dialog",
        GateKind::Elicitation(_) => "form",
    }
}

fn tool_of(g: &Gate) -> &str {
    match &g.kind {
        GateKind::Permission(p) => &p.tool,
        GateKind::Breakpoint(b) => &b.tool,
        _ => "-",
    }
}

/// The one-line summary: the command (never hiding that more lines follow), path or question.
fn summary(g: &Gate) -> String {
    match &g.kind {
        GateKind::Permission(p) => match &p.command {
            Some(c) => command_summary(c),
            None => p.summary.clone(),
        },
        GateKind::Breakpoint(b) => b.summary.clone(),
        _ => switchboard_core::update::gate_subject(g),
    }
}

/// The rule that matches this gate (an ask rule, since allow and deny rules answer at once).
fn rule_of(state: &State, s: &SessionState, g: &Gate) -> String {
    let GateKind::Permission(p) = &g.kind else {
        return String::new();
    };
    let subject = switchboard_core::update::rule_subject(p);
    match state.rules.evaluate_in(&subject, Some(s.id)) {
        Some(i) => {
            let r = &state.rules.list[i];
            format!("{} {}", r.spec.action.label(), r.describe())
        }
        None => "no rule".into(),
    }
}

/// Lines, width and height of the inbox overlay for a screen of `area`.
pub fn render(state: &State, theme: &Theme, area: Rect) -> (Vec<Line<'static>>, u16, u16) {
    let w = area.width.saturating_sub(4).max(20);
    let h = area.height.saturating_sub(2).max(6);
    let inner_w = w.saturating_sub(2) as usize;
    let inner_h = h.saturating_sub(2) as usize;
    // The inbox order is kept by the reducer as gates open and close: the frame reads its
    // length, the rows of its window and the marked gates, never every gate.
    let total = state.inbox_len();
    let is_marked = |i: usize, g: &Gate| {
        state.inbox.marked.contains(&GateRef {
            session: state.sessions[i].id,
            id: g.id.clone(),
        })
    };
    let mut lines: Vec<Line<'static>> = Vec::new();
    lines.push(Line::from(Span::styled(
        clip(
            &format!(
                "{} pending in {} session(s) · {}",
                total,
                state
                    .sessions
                    .iter()
                    .filter(|s| !s.gates.is_empty())
                    .count(),
                // The inbox reads its keys untranslated: its hints are the fixed keys.
                switchboard_core::bindings::hint_line(
                    &state.keymap,
                    switchboard_core::bindings::hints::INBOX_KEYS
                )
            ),
            inner_w,
        ),
        theme.dim,
    )));
    if total == 0 {
        lines.push(Line::from(Span::styled(
            "Nothing is waiting on you.",
            theme.dim,
        )));
        return (lines, w, h);
    }
    // The batch panel: exactly what `y` / `n` would answer, one gate per line.
    let batch: Vec<(usize, &Gate)> = switchboard_core::update::workspace::batch(state)
        .iter()
        .filter_map(|r| {
            let i = state.index_of(r.session)?;
            Some((i, state.sessions[i].gate(&r.id)?))
        })
        .collect();
    let panel_h = if batch.is_empty() {
        0
    } else {
        (batch.len() + 2).min(inner_h / 2)
    };
    let list_h = inner_h.saturating_sub(2 + panel_h).max(1);
    let cursor = state.inbox.cursor.min(total - 1);
    let top = (cursor + 1).saturating_sub(list_h);
    lines.push(Line::from(Span::styled(
        clip(
            &format!(
                "  {:>6}  {:<12} {:<14} {:<10} {:<12} {}",
                "age", "session", "node", "kind", "tool", "summary · rule"
            ),
            inner_w,
        ),
        theme.title,
    )));
    let window = (top..total.min(top + list_h)).filter_map(|row| Some((row, state.inbox_at(row)?)));
    for (row, (i, g)) in window {
        let s = &state.sessions[i];
        let node = &s.tree.nodes[s.tree.resolve(Some(&g.node_key))].name;
        let mark = if is_marked(i, g) {
            "✓"
        } else if not_batchable(g).is_some() {
            "·"
        } else {
            " "
        };
        // An offline session's gates wait greyed: nothing can be sent until it reconnects.
        let rule = match &s.session.offline {
            Some(_) => "offline: decisions disabled".to_string(),
            None => rule_of(state, s, g),
        };
        let text = format!(
            "{mark} {:>6}  {:<12} {:<14} {:<10} {:<12} {}{}{rule}",
            human_duration(state.now_ms.saturating_sub(g.opened_ms)),
            clip(s.name(), 12),
            clip(if node.is_empty() { "agent" } else { node }, 14),
            kind_label(g),
            clip(tool_of(g), 12),
            summary(g),
            if rule.is_empty() { "" } else { " · " },
        );
        let style = if row == cursor {
            theme.choice_active
        } else if s.session.offline.is_some() {
            theme.dim
        } else if is_marked(i, g) {
            theme.waiting
        } else {
            theme.choice
        };
        lines.push(Line::from(Span::styled(clip(&text, inner_w), style)));
    }
    if panel_h > 0 {
        while lines.len() < 2 + list_h {
            lines.push(Line::from(""));
        }
        let head = match &state.inbox.deny_message {
            Some(m) => format!(
                "deny message: {m}▌ (Enter denies all {}, Esc cancels)",
                batch.len()
            ),
            None => format!(
                "batch of {}: y allows each once · n denies each with one message",
                batch.len()
            ),
        };
        lines.push(Line::from(Span::styled(clip(&head, inner_w), theme.accent)));
        let room = panel_h.saturating_sub(1);
        let shown = if batch.len() > room {
            room.saturating_sub(1)
        } else {
            room
        };
        for (i, g) in batch.iter().take(shown) {
            let text = format!(
                "  {} · {} · {}",
                state.sessions[*i].name(),
                tool_of(g),
                summary(g)
            );
            lines.push(Line::from(Span::styled(clip(&text, inner_w), theme.footer)));
        }
        if batch.len() > shown {
            lines.push(Line::from(Span::styled(
                format!(
                    "  (+{} more marked: widen the terminal to list them)",
                    batch.len() - shown
                ),
                theme.warn,
            )));
        }
    }
    (lines, w, h)
}
