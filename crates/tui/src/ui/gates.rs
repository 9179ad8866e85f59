//! The gate card in the bottom panel: its title, frame, scrolling and editor (the body's
//! lines, one renderer per gate kind, are in `gate_body`).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

pub use super::gate_body::card_lines;
use super::gate_body::card_parts;
use super::theme::Theme;
use switchboard_core::gate::{Gate, GateKind};
use switchboard_core::state::{EditorPurpose, GateUi, State};
// Spans built here without `wrap`/`clip` neutralize agent text themselves (`^[`, `<U+202E>`):
// the last-line scrub would only drop the control bytes and leave the rest reading as plain.
use switchboard_core::text::visible_line;

/// The card's title: kind, tool, page, origin, queue position.
pub fn card_title(state: &State, gate: &Gate, ui: &GateUi, theme: &Theme) -> Line<'static> {
    let pos = state
        .gates
        .iter()
        .position(|g| g.id == gate.id)
        .map(|i| i + 1)
        .unwrap_or(0);
    let what = match &gate.kind {
        GateKind::Permission(p) => format!("‖ Permission · {}", visible_line(&p.tool)),
        GateKind::Question(q) => {
            let page = ui.page.min(q.questions.len().saturating_sub(1));
            let header = q
                .questions
                .get(page)
                .map(|s| s.header.clone())
                .unwrap_or_default();
            format!(
                "? Question [{}/{}] {header}",
                page + 1,
                q.questions.len().max(1)
            )
        }
        GateKind::Dialog(d) => format!("◆ Dialog · {}", d.dialog_kind),
        GateKind::Elicitation(e) => format!("✎ Elicitation · {}", e.server),
        GateKind::Breakpoint(b) => format!("⛔ Breakpoint · {}", b.tool),
    };
    let node = state.tree.resolve(Some(&gate.node_key));
    let n = &state.tree.nodes[node];
    let who = if node == 0 {
        n.name.clone()
    } else {
        format!(
            "{} {}",
            n.name,
            switchboard_core::text::one_line(&n.description, 30)
        )
    };
    Line::from(vec![
        Span::styled(format!(" {} ", what.trim_end()), theme.waiting),
        Span::styled(format!("· asked by {who} "), theme.dim),
        Span::styled(format!("· {pos}/{} ", state.gates.len()), theme.dim),
    ])
}

/// The lines that fit in `h` rows, and how far the body can scroll. When the card is too
/// short, the footer (the choices) stays, the body shows a window from `scroll`, and a line
/// says how many lines are hidden: nothing is clipped silently.
fn fit_card(
    lines: Vec<Line<'static>>,
    footer: usize,
    h: usize,
    scroll: usize,
    hint: bool,
    theme: &Theme,
) -> (Vec<Line<'static>>, usize) {
    let n = lines.len();
    if n <= h {
        return (lines, 0);
    }
    if h == 0 {
        return (Vec::new(), 0);
    }
    if h == 1 {
        return (lines[n - 1..].to_vec(), 0);
    }
    let footer = footer.min(n);
    // The marker takes a line; the body keeps at least half of the rest (the command must
    // not vanish behind a long error), the footer keeps its tail.
    let body_min = ((h - 1) / 2).min(footer);
    let keep_tail = (n - footer).min(h - 1 - body_min);
    let avail = h - 1 - keep_tail;
    let max_scroll = footer.saturating_sub(avail);
    let top = scroll.min(max_scroll);
    let mut v: Vec<Line<'static>> = lines[top..top + avail.min(footer)].to_vec();
    let below = footer.saturating_sub(top + avail);
    let hidden = n - v.len() - keep_tail;
    let wher = match (top, below) {
        (0, _) => String::new(),
        (a, 0) => format!(" ({a} above)"),
        (a, b) => format!(" ({a} above, {b} below)"),
    };
    v.push(Line::from(Span::styled(
        format!(
            "… {hidden} lines hidden{wher}{}",
            if hint {
                " · PgUp PgDn scroll · v shows all"
            } else {
                ""
            }
        ),
        theme.warn,
    )));
    v.extend(lines[n - keep_tail..].iter().cloned());
    (v, max_scroll)
}

/// Height the card wants at `width` (body + editor + borders).
pub fn card_height(state: &State, gate: &Gate, ui: &GateUi, width: u16, theme: &Theme) -> u16 {
    let body = card_lines(state, gate, ui, width.saturating_sub(2), theme).len() as u16;
    body + editor_height(ui) + 2
}

fn editor_height(ui: &GateUi) -> u16 {
    match &ui.editor {
        Some(ed) if ed.purpose.multiline() => (ed.area.lines().len() as u16 + 2).clamp(5, 16),
        Some(_) => 3,
        None => 0,
    }
}

/// Draw the card; returns how far its body can scroll at this size (0: it all fits).
pub fn render_card(
    f: &mut Frame,
    area: Rect,
    state: &State,
    gate: &Gate,
    ui: &GateUi,
    focused: bool,
    theme: &Theme,
) -> usize {
    f.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(if focused { theme.waiting } else { theme.border })
        .title(card_title(state, gate, ui, theme));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let eh = editor_height(ui).min(inner.height);
    let body_area = Rect {
        height: inner.height - eh,
        ..inner
    };
    let (lines, footer) = card_parts(state, gate, ui, inner.width, theme);
    // With an editor open the keys go to it: the marker then only counts.
    let hint = ui.editor.is_none();
    let (shown, max_scroll) = fit_card(
        lines,
        footer,
        body_area.height as usize,
        ui.scroll,
        hint,
        theme,
    );
    f.render_widget(Paragraph::new(shown), body_area);
    if let Some(ed) = &ui.editor {
        let area = Rect {
            y: inner.y + inner.height - eh,
            height: eh,
            ..inner
        };
        let rule_title;
        let title = match ed.purpose {
            EditorPurpose::Rule => {
                rule_title = format!(
                    " rule: allow|ask|deny TOOL [PATTERN] · Enter saves to {} · Esc back ",
                    state.rules_file.as_deref().unwrap_or("this session only")
                );
                rule_title.as_str()
            }
            EditorPurpose::DenyMessage => match &gate.kind {
                // iii: the text is the `reason` the model reads; empty sends the default.
                switchboard_core::gate::GateKind::Permission(p) if p.deny_reason.is_some() => {
                    " the reason the model reads (Enter denies with it, empty = default reason, Esc back) "
                }
                _ => " tell the agent why (Enter sends, empty = plain deny, Esc back) ",
            },
            EditorPurpose::EditInput => " tool input JSON (Ctrl-S allows with it, Esc back) ",
            EditorPurpose::RawReply => {
                " raw reply body JSON (Ctrl-S validates and sends, Esc back) "
            }
            EditorPurpose::Other => match &gate.kind {
                switchboard_core::gate::GateKind::Question(q)
                    if q.questions
                        .get(ui.page)
                        .is_some_and(|s| s.options.is_empty()) =>
                {
                    " your answer (Enter sends, Esc declines) "
                }
                _ => " your answer (Enter keeps it, Esc back) ",
            },
            EditorPurpose::BlockReason => " reason for blocking (Enter blocks, Esc back) ",
            EditorPurpose::Field => " value (Enter keeps it, Esc back) ",
        };
        let mut area_widget = super::field::widget(&ed.area);
        area_widget.set_block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme.border_focus)
                .title(title),
        );
        f.render_widget(&area_widget, area);
    }
    if let Some(why) = &state.session.offline {
        // The card stays readable, greyed; its keys are refused until the connection is back.
        super::grey(f.buffer_mut(), area, theme);
        let label = format!(
            " ⟳ {}: decisions disabled ",
            switchboard_core::text::sanitize(why)
        );
        let w = unicode_width::UnicodeWidthStr::width(label.as_str()) as u16;
        if area.width > w + 4 && area.height > 0 {
            let at = Rect {
                x: area.x + area.width - w - 2,
                y: area.y,
                width: w,
                height: 1,
            };
            f.render_widget(Paragraph::new(Span::styled(label, theme.warn)), at);
        }
    }
    max_scroll
}
