//! Floating views: help, log, status, mode picker, quit confirmation.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::overlay_session::{new_session, queue, status_lines};
use super::theme::Theme;
use super::wrap::clip;
use switchboard_core::state::{Overlay, Pick, State};

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

pub fn render(state: &State, theme: &Theme, f: &mut Frame) {
    let Some(overlay) = &state.overlay else {
        return;
    };
    let area = f.area();
    let (title, lines, w, h): (&str, Vec<Line>, u16, u16) = match overlay {
        Overlay::Help => {
            let mut l = Vec::new();
            // The binding tables, with the user's keys (the README lists the same).
            for ctx in switchboard_core::bindings::CONTEXTS {
                l.push(Line::from(Span::styled(ctx.name, theme.title)));
                for (k, v) in switchboard_core::bindings::help_rows(&state.keymap, ctx) {
                    l.push(Line::from(vec![
                        Span::styled(format!("  {k:<20}"), theme.key),
                        Span::raw(v),
                    ]));
                }
            }
            (
                " keys (↑↓ scroll, Esc closes) ",
                l,
                76,
                area.height.saturating_sub(2),
            )
        }
        Overlay::Log => {
            let l: Vec<Line> = if state.log.is_empty() {
                vec![Line::from(Span::styled("nothing on stderr yet", theme.dim))]
            } else {
                state
                    .log
                    .iter()
                    .map(|s| Line::from(Span::raw(clip(s, area.width.saturating_sub(4) as usize))))
                    .collect()
            };
            (
                " agent stderr and protocol log (Esc closes) ",
                l,
                area.width.saturating_sub(4),
                area.height.saturating_sub(2),
            )
        }
        Overlay::Status => (
            " session status (Esc closes) ",
            status_lines(state, theme),
            area.width.saturating_sub(8).min(110),
            area.height.saturating_sub(2),
        ),
        Overlay::Picker { pick, cursor } => {
            let cur = state.pick_current(pick);
            let choices = state.pick_choices(pick);
            let l = choices
                .iter()
                .enumerate()
                .map(|(i, (value, label))| {
                    let mark = if Some(value) == cur.as_ref() {
                        " (current)"
                    } else {
                        ""
                    };
                    let style = if i == *cursor {
                        theme.choice_active
                    } else {
                        theme.choice
                    };
                    Line::from(Span::styled(format!(" {}{mark} ", clip(label, 60)), style))
                })
                .collect();
            let title = match pick {
                Pick::Mode => " mode (Enter sets) ",
                Pick::Model => " model (Enter sets) ",
                Pick::Option(_) => " value (Enter sets) ",
            };
            let width = choices
                .iter()
                .map(|(_, l)| unicode_width::UnicodeWidthStr::width(l.as_str()).min(60) + 14)
                .max()
                .unwrap_or(20)
                .max(36) as u16;
            (title, l, width, choices.len().min(40) as u16 + 2)
        }
        Overlay::Options { cursor } => {
            let rows = state.option_rows();
            let l = rows
                .iter()
                .enumerate()
                .map(|(i, (name, value, _))| {
                    let style = if i == *cursor {
                        theme.choice_active
                    } else {
                        theme.choice
                    };
                    Line::from(Span::styled(
                        format!(" {:<22} {} ", clip(name, 22), clip(value, 40)),
                        style,
                    ))
                })
                .collect();
            (
                " session options (Enter picks a value) ",
                l,
                70,
                rows.len().min(40) as u16 + 2,
            )
        }
        Overlay::Text { title, body } => {
            let l = body
                .lines()
                .map(|l| Line::from(Span::raw(l.to_string())))
                .collect();
            (
                title.as_str(),
                l,
                area.width.saturating_sub(6),
                area.height.saturating_sub(2),
            )
        }
        Overlay::Rules { cursor } => {
            let mut l: Vec<Line> = Vec::new();
            if state.rules.list.is_empty() {
                l.push(Line::from(Span::styled(
                    "No rules. `a` on a permission adds a session rule, `A` saves one.",
                    theme.dim,
                )));
            }
            for (i, r) in state.rules.list.iter().enumerate() {
                let style = if i == *cursor {
                    theme.choice_active
                } else {
                    theme.choice
                };
                let action_style = match r.spec.action {
                    switchboard_core::rules::Action::Allow => theme.ok,
                    switchboard_core::rules::Action::Ask => theme.warn,
                    switchboard_core::rules::Action::Deny => theme.error,
                };
                l.push(Line::from(vec![
                    Span::styled(format!(" {:<6}", r.spec.action.label()), action_style),
                    Span::styled(
                        format!(
                            "{:<22} {:<28} {:>4} hit{}  ",
                            clip(&r.spec.tool, 22),
                            // Patterns come from agent requests too (`a`, `A`): one row each.
                            clip(
                                // `clip` shows hostile characters visibly.
                                &match (&r.spec.pattern, r.spec.exact) {
                                    (Some(p), true) => format!("= {p}"),
                                    (Some(p), false) => p.clone(),
                                    (None, _) => "(any)".into(),
                                }
                                .replace('\n', "⏎"),
                                28
                            ),
                            r.hits,
                            if r.hits == 1 { "" } else { "s" }
                        ),
                        style,
                    ),
                    Span::styled(
                        // What is left of the view's inner width after the fixed columns.
                        clip(
                            &rule_origin(state, r),
                            (area.width.saturating_sub(6).min(110) as usize).saturating_sub(2 + 72),
                        ),
                        theme.dim,
                    ),
                ]));
            }
            (
                " rules: deny wins over ask over allow (d deletes, Esc closes) ",
                l,
                area.width.saturating_sub(6).min(110),
                (state.rules.list.len() as u16 + 3).min(area.height.saturating_sub(2)),
            )
        }
        Overlay::Detail { node, item } => {
            let width = area.width.saturating_sub(4);
            let l: Vec<Line> = match item {
                Some(i) => match state
                    .tree
                    .nodes
                    .get(*node)
                    .and_then(|n| n.transcript.items.get(*i))
                {
                    Some(it) => {
                        let full = switchboard_core::transcript::Item {
                            expanded: true,
                            ..switchboard_core::transcript::Item::new(it.kind.clone(), it.at_ms)
                        };
                        super::items::item_lines(&full, width, theme)
                    }
                    None => vec![Line::from("the item is gone")],
                },
                None => match (state.active(), state.active_ui()) {
                    (Some(g), Some(ui)) => {
                        let mut l = vec![super::gates::card_title(state, g, ui, theme)];
                        l.extend(super::gates::card_lines(state, g, ui, width, theme));
                        if let switchboard_core::gate::GateKind::Permission(p) = &g.kind
                            && !p.environment.is_empty()
                        {
                            l.push(Line::from(Span::styled(
                                "the environment it starts with, exactly:",
                                theme.dim,
                            )));
                            for (k, v) in &p.environment {
                                // `wrap` shows hostile characters visibly.
                                l.extend(super::wrap::wrap(
                                    &format!("{k}={v}"),
                                    width,
                                    theme.text,
                                    Span::styled("env ", theme.dim),
                                    Span::raw("    "),
                                ));
                            }
                        }
                        l
                    }
                    _ => vec![Line::from("no gate is pending")],
                },
            };
            (
                " detail (↑↓ PgUp PgDn scroll, Esc closes) ",
                l,
                area.width,
                area.height,
            )
        }
        Overlay::AgentStuck => {
            let secs = state
                .cancel_sent_ms
                .map_or(0, |t| state.now_ms.saturating_sub(t) / 1000);
            let l = vec![
                Line::from(format!("No turn end {secs} s after the cancel.")),
                Line::from("Stopping answers every pending request as on quit"),
                Line::from("and ends the agent's process group; the window stays."),
                Line::from(""),
                Line::from(vec![
                    Span::styled("s", theme.key),
                    Span::raw(" stop it   "),
                    Span::styled("w", theme.key),
                    Span::raw(" keep waiting"),
                ]),
            ];
            (" the agent is not responding ", l, 60, 7)
        }
        Overlay::Inbox => {
            let (l, w, h) = super::inbox::render(state, theme, area);
            (" gate inbox: every session, oldest first ", l, w, h)
        }
        Overlay::NewSession(form) => new_session(state, form, theme),
        Overlay::Queue {
            cursor,
            confirm_remove,
        } => queue(state, *cursor, confirm_remove.as_deref(), theme, area),
        Overlay::ConfirmClose { session } => {
            let (name, n, held) = state
                .session_by_id(*session)
                .map_or(("?".to_string(), 0, false), |s| {
                    (s.name().to_string(), s.gates.len(), s.keeps_gates_on_quit)
                });
            // Durable holds (an engine's, a gateway peer's) are left where they live.
            let (one, two) = if held {
                (
                    "Closing leaves them held where they live",
                    "(another console may answer them).",
                )
            } else {
                (
                    "Closing answers them as quitting does",
                    "(deny / cancel / block) and stops its agent.",
                )
            };
            let l = vec![
                Line::from(clip(
                    &format!("Session {name}: {n} gate(s) are still waiting."),
                    56,
                )),
                Line::from(one),
                Line::from(two),
                Line::from(""),
                Line::from(vec![
                    Span::styled("y", theme.key),
                    Span::raw(" close   "),
                    Span::styled("n", theme.key),
                    Span::raw(" keep it"),
                ]),
            ];
            (" close this session? ", l, 60, 7)
        }
        Overlay::ConfirmQuit => {
            let n = state.pending_total();
            // Durable holds (an engine's, a gateway peer's) are left where they live.
            let held: usize = state
                .sessions
                .iter()
                .filter(|s| s.keeps_gates_on_quit)
                .map(|s| s.gates.len())
                .sum();
            let what = match (n - held, held) {
                (_, 0) => "Quitting answers them: deny / cancel / block.".to_string(),
                (0, h) => format!("Quitting leaves the {h} held where they live."),
                (a, h) => format!("Quitting answers {a} (deny...), leaves {h} held."),
            };
            let l = vec![
                Line::from(format!("{n} gate(s) are still waiting.")),
                Line::from(what),
                Line::from(""),
                Line::from(vec![
                    Span::styled("y", theme.key),
                    Span::raw(" quit   "),
                    Span::styled("n", theme.key),
                    Span::raw(" stay"),
                ]),
            ];
            (" quit switchboard? ", l, 52, 6)
        }
    };
    let rect = centered(area, w, h);
    f.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_focus)
        .title(Span::styled(title, theme.title));
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    // Scrolling counts back from the end for logs, from the top otherwise.
    let n = lines.len();
    let hh = inner.height as usize;
    let skip = match overlay {
        Overlay::Log => n.saturating_sub(hh).saturating_sub(state.overlay_scroll),
        Overlay::Help | Overlay::Status | Overlay::Text { .. } | Overlay::Detail { .. } => {
            state.overlay_scroll.min(n.saturating_sub(hh))
        }
        // The highlighted entry (row 1 + cursor, after the header) stays in view.
        Overlay::Queue { cursor, .. } => (cursor + 2).saturating_sub(hh),
        _ => 0,
    };
    let shown: Vec<Line> = lines.into_iter().skip(skip).take(hh).collect();
    f.render_widget(Paragraph::new(shown), inner);
}

/// Where a rule came from and, in a workspace of several sessions, which session it is
/// scoped to and which sessions its hits came from.
fn rule_origin(state: &State, r: &switchboard_core::rules::Rule) -> String {
    let mut out = r.origin.label();
    if state.sessions.len() < 2 {
        return out;
    }
    let name = |id| state.session_by_id(id).map_or("?", |s| s.name());
    if let Some(id) = r.scope {
        out = format!("{out} ({} only)", name(id));
    }
    if !r.hits_by.is_empty() {
        let by: Vec<String> = r
            .hits_by
            .iter()
            .map(|(id, n)| format!("{} {n}", name(*id)))
            .collect();
        out = format!("{out} · hits: {}", by.join(", "));
    }
    out
}

#[cfg(test)]
#[path = "overlay_tests.rs"]
mod tests;
