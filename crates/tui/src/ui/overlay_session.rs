//! Overlay views about sessions: the shown session's status, the new-session dialog, and the
//! shown session's queued messages.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::theme::Theme;
use super::wrap::clip;
use switchboard_core::state::State;

pub(super) fn status_lines(state: &State, theme: &Theme) -> Vec<Line<'static>> {
    let s = &state.session;
    let mut l = Vec::new();
    // Agent-supplied facts (a model name, a cwd): control characters shown, on one line.
    let kv = |l: &mut Vec<Line<'static>>, k: &str, v: String| {
        l.push(Line::from(vec![
            Span::styled(format!("{k:<20} "), theme.dim),
            Span::raw(switchboard_core::text::visible_line(&v).into_owned()),
        ]));
    };
    kv(&mut l, "backend", s.backend.name().to_string());
    kv(&mut l, "agent", s.program.clone().unwrap_or_default());
    kv(
        &mut l,
        "pid",
        s.pid.map(|p| p.to_string()).unwrap_or_default(),
    );
    kv(
        &mut l,
        "version",
        s.agent_version.clone().unwrap_or_default(),
    );
    kv(&mut l, "session", s.session_id.clone().unwrap_or_default());
    kv(&mut l, "cwd", s.cwd.clone().unwrap_or_default());
    kv(&mut l, "model", s.model.clone().unwrap_or_default());
    kv(
        &mut l,
        "mode",
        s.permission_mode.clone().unwrap_or_default(),
    );
    kv(
        &mut l,
        "recording",
        s.recording.clone().unwrap_or_else(|| "off".into()),
    );
    kv(&mut l, "tools", s.tools.join(", "));
    kv(&mut l, "answered", format!("{} gate(s)", state.answered));
    for (k, v) in &s.capabilities.extra {
        kv(&mut l, k, v.clone());
    }
    for (k, v) in &s.info {
        kv(&mut l, k, v.clone());
    }
    if !s.capabilities.options.is_empty() {
        l.push(Line::default());
        l.push(Line::from(Span::styled(
            format!("options ({}) · O changes one", s.capabilities.options.len()),
            theme.title,
        )));
        for o in &s.capabilities.options {
            let what = match &o.category {
                Some(c) => format!("{c}, {} choice(s)", o.choices.len()),
                None => format!("{} choice(s)", o.choices.len()),
            };
            l.push(Line::from(vec![
                Span::styled(format!("  {:<24}", clip(&o.name, 24)), theme.accent),
                Span::styled(format!("{}  ", clip(o.current_label(), 40)), theme.text),
                Span::styled(what, theme.dim),
            ]));
        }
    }
    for (title, list) in [
        (
            "modes",
            &s.capabilities
                .modes
                .iter()
                .map(|m| (m.clone(), String::new()))
                .collect::<Vec<_>>(),
        ),
        ("models", &s.capabilities.models),
        ("agents", &s.capabilities.agents),
        ("commands", &s.capabilities.commands),
    ] {
        l.push(Line::default());
        l.push(Line::from(Span::styled(
            format!("{title} ({})", list.len()),
            theme.title,
        )));
        for (name, desc) in list {
            l.push(Line::from(vec![
                Span::styled(format!("  {name:<24}"), theme.accent),
                Span::styled(desc.clone(), theme.dim),
            ]));
        }
    }
    l
}

/// The new-session dialog: the profiles (and an ACP command line), then cwd and first prompt.
pub(super) fn new_session(
    state: &State,
    form: &switchboard_core::state::NewSessionForm,
    theme: &Theme,
) -> (&'static str, Vec<Line<'static>>, u16, u16) {
    use switchboard_core::state::NewSessionField as F;
    let mut l: Vec<Line<'static>> = Vec::new();
    let w = 72usize;
    let field_style = |f: F| {
        if form.field == f {
            theme.choice_active
        } else {
            theme.choice
        }
    };
    l.push(Line::from(Span::styled(
        "Start a session (↑↓ pick · Tab next field · Enter start · Esc cancel)",
        theme.dim,
    )));
    if state.profiles.is_empty() {
        l.push(Line::from(Span::styled(
            "  no [[session]] profiles in config.toml",
            theme.dim,
        )));
    }
    for (i, p) in state.profiles.iter().enumerate() {
        let on = i == form.cursor;
        let style = if on && form.field == F::Choice {
            theme.choice_active
        } else {
            theme.choice
        };
        l.push(Line::from(Span::styled(
            clip(
                &format!(
                    "{} {} · {} · {}",
                    if on { "▶" } else { " " },
                    p.name,
                    p.backend,
                    p.cwd
                ),
                w,
            ),
            style,
        )));
    }
    let cmd_on = form.is_command(state.profiles.len());
    l.push(Line::from(Span::styled(
        format!(
            "{} ACP agent by command line…",
            if cmd_on { "▶" } else { " " }
        ),
        if cmd_on && form.field == F::Choice {
            theme.choice_active
        } else {
            theme.choice
        },
    )));
    let harness_on = form.harness(state.profiles.len());
    for (i, (_, url)) in state.harness_hosts().iter().enumerate() {
        let on = harness_on == Some(i);
        l.push(Line::from(Span::styled(
            clip(
                &format!(
                    "{} new harness session on {url}",
                    if on { "▶" } else { " " }
                ),
                w,
            ),
            if on && form.field == F::Choice {
                theme.choice_active
            } else {
                theme.choice
            },
        )));
    }
    l.push(Line::from(""));
    let caret = |f: F| if form.field == f { "▌" } else { "" };
    if harness_on.is_some() {
        for (f, label, text) in [
            (F::Model, "model:    ", &form.model),
            (F::Provider, "provider: ", &form.provider),
            (F::Title, "title:    ", &form.title),
            (F::Allow, "allow:    ", &form.allow),
            (F::Prompt, "message:  ", &form.prompt),
        ] {
            l.push(Line::from(Span::styled(
                clip(&format!("{label}{text}{}", caret(f)), w),
                field_style(f),
            )));
            if f == F::Provider && form.provider.trim().is_empty() {
                // Said, so an empty field reads as a choice rather than something missing.
                l.push(Line::from(Span::styled(
                    clip("          empty: the router's default provider", w),
                    theme.dim,
                )));
            }
            if f == F::Allow {
                let (_, dropped) = switchboard_core::msg::split_allow(&form.allow);
                let (text, style) = if dropped.is_empty() {
                    (
                        "          function ids, comma separated; never approval::* or configuration::*"
                            .to_string(),
                        theme.dim,
                    )
                } else {
                    (
                        format!(
                            "          left out (human-only, or not an exact id): {}",
                            dropped.join(", ")
                        ),
                        theme.warn,
                    )
                };
                l.push(Line::from(Span::styled(clip(&text, w), style)));
            }
        }
        let h = l.len() as u16 + 2;
        return (" new session ", l, w as u16 + 4, h);
    }
    if cmd_on {
        l.push(Line::from(Span::styled(
            clip(
                &format!("command: {}{}", form.command, caret(F::Command)),
                w,
            ),
            field_style(F::Command),
        )));
    }
    l.push(Line::from(Span::styled(
        clip(&format!("cwd:     {}{}", form.cwd, caret(F::Cwd)), w),
        field_style(F::Cwd),
    )));
    l.push(Line::from(Span::styled(
        clip(&format!("prompt:  {}{}", form.prompt, caret(F::Prompt)), w),
        field_style(F::Prompt),
    )));
    let h = l.len() as u16 + 2;
    (" new session ", l, w as u16 + 4, h)
}

/// `u`: the shown session's queued messages, oldest first, one row each.
pub(super) fn queue(
    state: &State,
    cursor: usize,
    confirm_remove: Option<&str>,
    theme: &Theme,
    area: Rect,
) -> (&'static str, Vec<Line<'static>>, u16, u16) {
    let w = area.width.saturating_sub(8).min(100);
    let q = &state.queue;
    let mut l: Vec<Line<'static>> = vec![Line::from(Span::styled(
        "↑↓ pick · e edit in the prompt · d d remove · Esc closes",
        theme.dim,
    ))];
    if q.entries.is_empty() {
        l.push(Line::from(Span::styled(
            "  the queue is empty: every message was sent or removed",
            theme.dim,
        )));
    }
    let inner = w.saturating_sub(2) as usize;
    for (i, e) in q.entries.iter().enumerate() {
        let on = i == cursor;
        let age = e.queued_at.map_or(String::new(), |t| {
            format!(
                "{} ago",
                switchboard_core::text::human_duration(state.now_ms.saturating_sub(t))
            )
        });
        let mark = if confirm_remove == Some(e.entry_id.as_str()) {
            "d again removes · "
        } else if !e.exact {
            "(cut: not editable) "
        } else {
            ""
        };
        let text = switchboard_core::text::one_line(&e.text, inner);
        let head = format!("{} {:>2}. ", if on { "▶" } else { " " }, i + 1);
        let tail = format!("  {mark}{age}");
        let room = inner.saturating_sub(head.chars().count() + tail.chars().count());
        let shown = clip(&text, room);
        let pad = room.saturating_sub(unicode_width::UnicodeWidthStr::width(shown.as_str()));
        l.push(Line::from(vec![
            Span::styled(
                format!("{head}{shown}{}", " ".repeat(pad)),
                if on {
                    theme.choice_active
                } else {
                    theme.choice
                },
            ),
            Span::styled(
                tail,
                if confirm_remove == Some(e.entry_id.as_str()) {
                    theme.warn
                } else {
                    theme.dim
                },
            ),
        ]));
    }
    if q.more > 0 {
        l.push(Line::from(Span::styled(
            format!("  and {} more (not shown)", q.more),
            theme.dim,
        )));
    }
    let h = (l.len() as u16 + 2).min(area.height.saturating_sub(2));
    (
        " queued messages: they land when the current step ends ",
        l,
        w,
        h,
    )
}
