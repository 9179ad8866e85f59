//! The gate card's body: the lines each gate kind shows, then its key rows flowed to the
//! width and its footer (a recorded answer, an error).

use ratatui::text::{Line, Span};

use super::diffs::{diff_lines, side_by_side_lines};
use super::theme::Theme;
use super::wrap::{clip, wrap};
use switchboard_core::bindings::{self as keys, Hint};
use switchboard_core::gate::{FieldKind, Gate, GateKind, dangerous_env};
use switchboard_core::state::{GateUi, State};
// Spans built here without `wrap`/`clip` neutralize agent text themselves (`^[`, `<U+202E>`):
// the last-line scrub would only drop the control bytes and leave the rest reading as plain.
use switchboard_core::text::{neutralize, visible_line};

fn pad(n: usize) -> Span<'static> {
    Span::raw(" ".repeat(n))
}

/// Lines of the card body (without the editor, which is drawn as a widget below them).
pub fn card_lines(
    state: &State,
    gate: &Gate,
    ui: &GateUi,
    width: u16,
    theme: &Theme,
) -> Vec<Line<'static>> {
    card_parts(state, gate, ui, width, theme).0
}

/// The card's lines and where its footer (the choices, a recorded answer, an error) starts:
/// the footer stays in view when the body scrolls.
pub(super) fn card_parts(
    state: &State,
    gate: &Gate,
    ui: &GateUi,
    width: u16,
    theme: &Theme,
) -> (Vec<Line<'static>>, usize) {
    // Key hint rows: flowed to the width, and left out in replay (nothing can be answered).
    let mut key_lines: Vec<usize> = Vec::new();
    let w = width;
    let mut l: Vec<Line<'static>> = Vec::new();
    let kv = |l: &mut Vec<Line<'static>>, k: &str, v: &str| {
        l.extend(wrap(
            v,
            w,
            theme.text,
            Span::styled(format!("{k}: "), theme.dim),
            pad(2),
        ));
    };
    if let Some(t) = gate.kind.own_terminal() {
        // Where else the request waits, before anything else on the card.
        l.extend(wrap(
            &t.shows,
            w,
            theme.warn,
            Span::styled("its own terminal: ", theme.dim),
            pad(2),
        ));
    }
    match &gate.kind {
        GateKind::Permission(p) => {
            if let Some(t) = &p.title {
                l.extend(wrap(t, w, theme.title, Span::raw(""), Span::raw("")));
            }
            if let Some(d) = &p.description {
                l.extend(wrap(d, w, theme.dim, Span::raw(""), Span::raw("")));
            }
            if let Some(c) = &p.covered_by {
                // Shown only when an ask rule stopped it: say what it would have passed as.
                kv(&mut l, "covered by", &format!("{c} (an ask rule shows it)"));
            }
            match &p.diff {
                // `t`: side by side when there is room for two readable columns.
                Some(d) if state.side_by_side && w >= 100 => {
                    l.extend(side_by_side_lines(d, w, theme))
                }
                Some(d) => l.extend(diff_lines(d, w, theme, false)),
                // The whole command, every line: a second line runs too.
                None => match &p.command {
                    Some(c) => {
                        let n = c.lines().count();
                        if n > 1 {
                            l.push(Line::from(Span::styled(
                                format!("a {n}-line command: every line runs"),
                                theme.warn,
                            )));
                        }
                        l.extend(wrap(
                            c,
                            w,
                            theme.accent,
                            Span::styled("$ ", theme.dim),
                            pad(2),
                        ));
                    }
                    None => l.extend(wrap(&p.input, w, theme.accent, pad(0), pad(2))),
                },
            }
            // Every variable the request sets; the ones that change what runs are marked.
            for (k, v) in &p.env {
                // `wrap` shows hostile characters visibly.
                let kv = format!("{k}={v}");
                if dangerous_env(k) {
                    l.extend(wrap(
                        &format!("{kv}  ⚠ may change what runs: no rule allows this"),
                        w,
                        theme.warn,
                        Span::styled("env ", theme.warn),
                        pad(4),
                    ));
                } else {
                    l.extend(wrap(
                        &kv,
                        w,
                        theme.text,
                        Span::styled("env ", theme.dim),
                        pad(4),
                    ));
                }
            }
            if !p.environment.is_empty() {
                // The whole environment it starts with, by name (values in `v`).
                let names: Vec<&str> = p.environment.iter().map(|(k, _)| k.as_str()).collect();
                kv(
                    &mut l,
                    "environment",
                    &format!("only {} (v shows the values)", names.join(" ")),
                );
            }
            if let Some(r) = &p.decision_reason {
                kv(&mut l, "reason", r);
            }
            if let Some(b) = &p.blocked_path {
                kv(&mut l, "blocked path", &visible_line(b));
            }
            if p.always_allowed {
                for s in &p.suggestions {
                    kv(&mut l, "always allows", &format!("{s} → this session"));
                }
            }
            if p.default_to_no {
                l.push(Line::from(Span::styled(
                    "the agent asks to default to no: y is disabled, use ↑↓ and Enter on Allow once",
                    theme.warn,
                )));
            }
            l.push(choices_line(
                &p.choices()
                    .iter()
                    .map(|c| (shown_key(state, p.choice_key(*c)), p.choice_label(*c)))
                    .collect::<Vec<_>>(),
                ui.picked.then_some(ui.choice),
                &keys::hint_line(&state.keymap, keys::hints::PERMISSION_MORE),
                theme,
            ));
            key_lines.push(l.len() - 1);
        }
        GateKind::Breakpoint(b) => {
            l.push(Line::from(vec![
                Span::styled(format!("{} ", neutralize(&b.hook_event)), theme.dim),
                Span::styled(format!("{} ", neutralize(&b.tool)), theme.tool),
                Span::styled(neutralize(&b.summary).into_owned(), theme.text),
            ]));
            l.extend(wrap(&b.input, w, theme.dim, pad(2), pad(2)));
            l.push(choices_line(
                &keys::BREAKPOINT
                    .bindings
                    .iter()
                    .map(|b| (keys::first_key(&state.keymap, b), b.label.to_string()))
                    .collect::<Vec<_>>(),
                ui.picked.then_some(ui.choice),
                &keys::hint_line(&state.keymap, keys::hints::CARD_MORE),
                theme,
            ));
            key_lines.push(l.len() - 1);
        }
        GateKind::Dialog(d) => {
            if let Some(t) = &d.title {
                l.extend(wrap(t, w, theme.title, pad(0), pad(0)));
            }
            if let Some(m) = &d.message {
                l.extend(wrap(m, w, theme.text, pad(0), pad(0)));
            }
            if d.options.is_empty() {
                l.extend(wrap(&d.payload, w, theme.dim, pad(2), pad(2)));
            }
            for (i, o) in d.options.iter().enumerate() {
                let active = i == ui.choice;
                l.push(Line::from(Span::styled(
                    format!("{} {}", if active { "›" } else { " " }, neutralize(o)),
                    if active {
                        theme.choice_active
                    } else {
                        theme.choice
                    },
                )));
            }
            l.push(hints(
                state,
                &[(&keys::DIALOG, "complete"), (&keys::DIALOG, "cancel")],
                theme,
            ));
            key_lines.push(l.len() - 1);
        }
        GateKind::Elicitation(e) => {
            l.extend(wrap(&e.message, w, theme.title, pad(0), pad(0)));
            if let Some(url) = &e.url {
                kv(&mut l, "open", url);
            }
            for (i, f) in e.fields.iter().enumerate() {
                let active = i == ui.cursor;
                let value = ui.fields.get(i).cloned().unwrap_or_default();
                let shown = match &f.kind {
                    FieldKind::Boolean => {
                        if value == "true" {
                            "[x]".to_string()
                        } else {
                            "[ ]".to_string()
                        }
                    }
                    FieldKind::Enum(opts) => format!(
                        "‹ {} › ({})",
                        if value.is_empty() { "choose" } else { &value },
                        opts.join(" | ")
                    ),
                    _ => {
                        if value.is_empty() {
                            "…".to_string()
                        } else {
                            value
                        }
                    }
                };
                let req = if f.required { "*" } else { "" };
                let line = format!(
                    "{} {}{req}: {shown}",
                    if active { "›" } else { " " },
                    f.title
                );
                l.push(Line::from(Span::styled(
                    clip(&line, w as usize),
                    if active {
                        theme.choice_active
                    } else {
                        theme.choice
                    },
                )));
                if let (true, Some(d)) = (active, &f.description) {
                    l.extend(wrap(d, w, theme.dim, pad(4), pad(4)));
                }
            }
            // A URL-mode request has no fields: only the answers apply.
            let e_ = &keys::ELICITATION;
            let mut h: Vec<Hint> = Vec::new();
            if !e.fields.is_empty() {
                h.extend([(e_, "field"), (e_, "edit")]);
            }
            h.extend([(e_, "accept"), (e_, "decline"), (e_, "cancel")]);
            l.push(hints(state, &h, theme));
            key_lines.push(l.len() - 1);
        }
        GateKind::Question(q) => {
            if let Some(why) = &q.malformed {
                l.extend(wrap(
                    &format!("cannot be answered: {why}"),
                    w,
                    theme.error,
                    pad(0),
                    pad(0),
                ));
                let mut h: Vec<Hint> = vec![(&keys::QUESTION, "deny")];
                if q.own_terminal.is_some() {
                    h.push((&keys::QUESTION, "hand_back"));
                }
                l.push(hints(state, &h, theme));
                key_lines.push(l.len() - 1);
            } else if q.questions[ui.page.min(q.questions.len() - 1)]
                .options
                .is_empty()
            {
                // A free-text question: the question, then its answer field (below).
                let spec = &q.questions[ui.page.min(q.questions.len() - 1)];
                l.extend(wrap(&spec.question, w, theme.title, pad(0), pad(0)));
                l.push(Line::from(Span::styled(
                    "type your answer: Enter sends it, Esc declines",
                    theme.dim,
                )));
            } else {
                let page = ui.page.min(q.questions.len() - 1);
                let spec = &q.questions[page];
                l.extend(wrap(&spec.question, w, theme.title, pad(0), pad(0)));
                let mode = if spec.multi {
                    "multi-select: Space toggles, Enter confirms"
                } else {
                    "single choice: Enter picks"
                };
                l.push(Line::from(Span::styled(mode, theme.dim)));
                for (i, o) in spec.options.iter().enumerate() {
                    let on = ui
                        .chosen
                        .get(page)
                        .and_then(|c| c.get(i))
                        .copied()
                        .unwrap_or(false);
                    let mark = match (spec.multi, on) {
                        (true, true) => "[x]",
                        (true, false) => "[ ]",
                        (false, true) => "(•)",
                        (false, false) => "( )",
                    };
                    let active = i == ui.cursor;
                    let style = if active {
                        theme.choice_active
                    } else {
                        theme.choice
                    };
                    let mut spans = vec![Span::styled(
                        format!(
                            "{} {}. {mark} {}",
                            if active { "›" } else { " " },
                            i + 1,
                            neutralize(&o.label)
                        ),
                        style,
                    )];
                    if !o.description.is_empty() {
                        spans.push(Span::styled(
                            format!("  {}", neutralize(&o.description)),
                            theme.dim,
                        ));
                    }
                    l.push(Line::from(spans));
                }
                let other_active = ui.cursor == spec.options.len();
                let other_text = ui.other.get(page).cloned().unwrap_or_default();
                let other_on = ui.other_on.get(page).copied().unwrap_or(false);
                let mark = match (spec.multi, other_on) {
                    (true, true) => "[x]",
                    (true, false) => "[ ]",
                    (false, true) => "(•)",
                    (false, false) => "( )",
                };
                let shown = if other_text.is_empty() {
                    "Other… (type an answer)".to_string()
                } else {
                    format!("Other: {other_text}")
                };
                l.push(Line::from(Span::styled(
                    format!("{}    {mark} {shown}", if other_active { "›" } else { " " }),
                    if other_active {
                        theme.choice_active
                    } else {
                        theme.choice
                    },
                )));
                let chosen = ui
                    .chosen
                    .get(page)
                    .map(|c| c.iter().filter(|x| **x).count())
                    .unwrap_or(0)
                    + usize::from(other_on);
                let q_ = &keys::QUESTION;
                let mut h: Vec<Hint> = vec![(q_, "move")];
                if q.questions.len() > 1 {
                    h.push((q_, "page"));
                }
                h.extend([(q_, "confirm"), (q_, "decline")]);
                if q.own_terminal.is_some() {
                    h.push((q_, "hand_back"));
                }
                let mut line = hints(state, &h, theme);
                if spec.multi {
                    line.spans.insert(
                        0,
                        Span::styled(format!("{chosen} selected  "), theme.accent),
                    );
                }
                l.push(line);
                key_lines.push(l.len() - 1);
            }
        }
    }
    let body_end = l.len();
    if let Some(answer) = state.replay.as_ref().and_then(|r| r.answers.get(&gate.id)) {
        l.extend(wrap(
            answer,
            w,
            theme.accent,
            Span::styled("recorded answer: ", theme.dim),
            pad(2),
        ));
    }
    if let Some(err) = &ui.error {
        l.extend(wrap(
            err,
            w,
            theme.error,
            Span::styled("✘ ", theme.error),
            pad(2),
        ));
    }
    let live = state.replay.is_none();
    let mut out = Vec::with_capacity(l.len());
    let mut footer = None;
    for (i, line) in l.into_iter().enumerate() {
        if key_lines.first() == Some(&i) || (i == body_end && footer.is_none()) {
            footer = Some(out.len());
        }
        if !key_lines.contains(&i) {
            out.push(line);
        } else if live {
            out.extend(flow(line, w as usize));
        }
    }
    let footer = footer.unwrap_or(out.len());
    (out, footer)
}

/// The key to show for a default key: the user's override from `[keys]` when there is one
/// (the first of `keymap::keys_for`, which the help and footer hints use too).
fn shown_key(state: &State, default: char) -> String {
    switchboard_core::keymap::keys_for(&state.keymap, default)
        .first()
        .copied()
        .unwrap_or(default)
        .to_string()
}

/// Break a row of spans across lines at span boundaries so no key hint is cut off.
fn flow(line: Line<'static>, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for span in line.spans {
        let w = span.width();
        if used + w > width && !cur.is_empty() {
            out.push(Line::from(std::mem::take(&mut cur)));
            used = 0;
        }
        used += w;
        cur.push(span);
    }
    if !cur.is_empty() {
        out.push(Line::from(cur));
    }
    out
}

/// The card's choices; `active` is highlighted (none until an arrow key picks one).
fn choices_line(
    choices: &[(String, String)],
    active: Option<usize>,
    hint: &str,
    theme: &Theme,
) -> Line<'static> {
    let mut spans = Vec::new();
    for (i, (key, label)) in choices.iter().enumerate() {
        let style = if Some(i) == active {
            theme.choice_active
        } else {
            theme.choice
        };
        spans.push(Span::styled(
            format!("[{key}] {}", neutralize(label)),
            style,
        ));
        spans.push(Span::raw("  "));
    }
    spans.push(Span::styled(hint.to_string(), theme.dim));
    Line::from(spans)
}

/// A card's key row from the binding table, with the user's keys.
fn hints(state: &State, which: &[Hint], theme: &Theme) -> Line<'static> {
    let mut spans = Vec::new();
    for (k, v) in keys::hint_pairs(&state.keymap, which) {
        spans.push(Span::styled(k, theme.key));
        spans.push(Span::styled(format!(" {v}  "), theme.dim));
    }
    Line::from(spans)
}
