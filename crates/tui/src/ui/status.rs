//! The two lines that say what waits and what the focused pane takes: the waiting strip
//! (every session with gates waiting, and the key that jumps there) and the status line,
//! laid out by priority so the narrowest terminal still shows what waits (issue 22 item 2).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use unicode_width::UnicodeWidthStr;

use super::theme::Theme;
use super::wrap::clip;
use switchboard_core::msg::TurnState;
use switchboard_core::state::{Focus, State};
use switchboard_core::text::human_count;
use switchboard_core::text::visible_line;

/// Sessions named on the strip before "+N more".
const STRIP_NAMES: usize = 3;

/// Whether the strip is drawn: when something waits in another session, above the prompt
/// when something waits (a card on screen says so itself), and always where there is no
/// prompt box (it stands in its place).
pub fn strip_shown(state: &State, card_shown: bool) -> bool {
    let total = state.pending_total();
    let elsewhere = total > state.shown().gates.len();
    state.replay.is_none()
        && (!state.shown().session.abilities.prompt || elsewhere || (total > 0 && !card_shown))
}

/// "‖ 3 waiting · g opens the oldest: conversation conv-1 2 · web 1": up to three sessions
/// by name with their counts, the shown one marked, then "+N more".
pub fn waiting_strip(state: &State, theme: &Theme) -> Line<'static> {
    let total = state.pending_total();
    let jump = format!(
        "{} opens the oldest",
        switchboard_core::bindings::key_text(
            &state.keymap,
            &switchboard_core::bindings::Key::Act("oldest_gate")
        )
    );
    if total == 0 {
        let text = " nothing waits for you · this session takes no prompt from here (Tab moves between panes) ";
        return Line::from(Span::styled(text, theme.dim));
    }
    // The count and the key first: a narrow terminal cuts names, never the way there.
    let mut spans = vec![
        Span::styled(format!(" ‖ {total} waiting"), theme.waiting),
        Span::styled(format!(" · {jump}: "), theme.key),
    ];
    let shown = state.selected;
    let mut named = 0;
    let mut more = 0;
    for (i, s) in state.sessions.iter().enumerate() {
        if s.gates.is_empty() {
            continue;
        }
        if named == STRIP_NAMES {
            more += 1;
            continue;
        }
        if named > 0 {
            spans.push(Span::styled(" · ", theme.dim));
        }
        named += 1;
        let name = clip(s.name(), 28);
        let style = if i == shown { theme.accent } else { theme.text };
        spans.push(Span::styled(format!("{name} {}", s.gates.len()), style));
        if i == shown {
            spans.push(Span::styled(" (here)", theme.dim));
        }
    }
    if more > 0 {
        spans.push(Span::styled(format!(" +{more} more"), theme.dim));
    }
    Line::from(spans)
}

/// One field of the status line, and how soon it goes when the width runs out (higher goes
/// first).
struct Field {
    text: String,
    style: Style,
    drop: u8,
}

/// The status line. First to stay: what waits, the connection, the focused pane's keys; then
/// the backend, the turn, the mode, the model; first to go: tokens and cost, the session
/// name, facts. Fields the backend does not have are not drawn.
pub fn render_footer(state: &State, theme: &Theme, f: &mut Frame, area: Rect) {
    let s = &state.session;
    let a = &s.abilities;
    let many = state.sessions.len() > 1;
    let mut fields: Vec<Field> = Vec::new();
    let mut add = |text: String, style: Style, drop: u8| fields.push(Field { text, style, drop });
    let total = state.pending_total();
    if total > 0 {
        let text = if many {
            format!("‖ {total} waiting ({} here)", state.gates.len())
        } else {
            format!("‖ {total} waiting")
        };
        add(text, theme.waiting, 0);
    }
    if let Some(why) = &s.offline {
        add(clip(why, 48), theme.warn, 0);
    } else if let Some(link) = &s.link {
        let style = if link == "connected" {
            theme.footer
        } else {
            theme.warn
        };
        add(clip(link, 48), style, 1);
    }
    add(s.backend.name().to_string(), theme.accent, 3);
    if many {
        add(clip(state.name(), 24), theme.accent, 7);
    }
    if let Some((code, ..)) = &s.exited {
        add(
            format!("exited {}", code.map_or("-".into(), |c| c.to_string())),
            theme.warn,
            1,
        );
    } else if a.turns {
        let turn = match s.turn {
            Some(TurnState::Running) => "running",
            Some(TurnState::RequiresAction) => "waiting",
            Some(TurnState::Idle) => "idle",
            Some(TurnState::AwaitingInput) => "waiting for input",
            None => "starting",
        };
        add(turn.into(), theme.footer, 4);
    }
    // As the agent named them: shown visibly, never interpreted.
    if let Some(m) = &s.permission_mode {
        add(visible_line(m).into_owned(), theme.footer, 5);
    }
    if let Some(m) = &s.model {
        add(visible_line(m).into_owned(), theme.footer, 6);
    }
    if a.usage {
        add(
            format!(
                "{}↑ {}↓ ${:.4}",
                human_count(s.input_tokens),
                human_count(s.output_tokens),
                s.cost_usd
            ),
            theme.footer,
            8,
        );
    }
    for (_, v) in &s.info {
        add(clip(v, 40), theme.footer, 9);
    }
    // The sum stands whichever session is selected, if any of them reports usage.
    if many && state.sessions.iter().any(|s| s.session.abilities.usage) {
        let cost: f64 = state.sessions.iter().map(|s| s.session.cost_usd).sum();
        add(
            format!("{} sessions Σ ${cost:.4}", state.sessions.len()),
            theme.footer,
            9,
        );
    }
    let hint = hint(state);
    let warn = state.status_line.is_some();
    let width = area.width as usize;
    // Each field costs "· " plus its text and a space; the hint keeps all of its width, up
    // to half the line, before any field that can go.
    let cost = |f: &Field| f.text.width() + 3;
    let hint_w = hint.width().min(width / 2) + 2;
    let mut keep: Vec<bool> = vec![true; fields.len()];
    let mut used: usize = fields.iter().map(cost).sum::<usize>() + 1;
    while used + hint_w > width {
        let Some((i, _)) = fields
            .iter()
            .enumerate()
            .filter(|(i, f)| keep[*i] && f.drop > 2)
            .max_by_key(|(i, f)| (f.drop, *i))
        else {
            break;
        };
        keep[i] = false;
        used -= cost(&fields[i]);
    }
    let mut spans = vec![Span::raw(" ")];
    for (i, fd) in fields.iter().enumerate().filter(|(i, _)| keep[*i]) {
        if i > 0 {
            spans.push(Span::styled("· ", theme.dim));
        }
        spans.push(Span::styled(format!("{} ", fd.text), fd.style));
    }
    let left: usize = spans.iter().map(|s| s.width()).sum();
    // Two columns at least between the fields and the hint.
    let room = width.saturating_sub(left + 2);
    if room > 3 {
        let hint = clip(&hint, room);
        let fill = room.saturating_sub(hint.width());
        spans.push(Span::raw(" ".repeat(fill + 1)));
        spans.push(Span::styled(
            hint,
            if warn { theme.warn } else { theme.dim },
        ));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// What the focused pane takes, or what just happened.
fn hint(state: &State) -> String {
    let s = &state.session;
    let many = state.sessions.len() > 1;
    let search_hint = state.search.as_ref().map(|s| {
        let scope = if s.all_nodes { "search all" } else { "search" };
        if s.editing {
            format!("{scope}: {}▌ (Enter finds, Esc cancels)", s.query)
        } else {
            format!(
                "{scope}: {} · {} match(es) · n/N move",
                s.query,
                s.hits.len()
            )
        }
    });
    if let Some(st) = state
        .status_line
        .clone()
        .or_else(|| switchboard_core::update::cancel::footer_hint(state))
        .or(search_hint)
    {
        // A status line quotes what happened, not which key to press: left as it is.
        return st;
    }
    // From the binding table, with the user's `[keys]`.
    use switchboard_core::bindings::{hint_line, hints};
    let keys = |h| hint_line(&state.keymap, h);
    let waiting = state.pending_total() > 0;
    match state.focus {
        Focus::Prompt if s.exited.is_some() => {
            format!("read-only: the agent exited · {}", keys(hints::EXITED))
        }
        Focus::Prompt if state.queue_edit.is_some() => keys(hints::QUEUE_EDIT),
        Focus::Prompt if waiting => keys(hints::PROMPT_WAITING),
        Focus::Prompt => keys(hints::PROMPT_KEYS),
        Focus::Gate => format!("keys in the card · {}", keys(hints::GATE)),
        Focus::Tree | Focus::Transcript if waiting => keys(hints::PANE_WAITING),
        Focus::Tree | Focus::Transcript if !state.queue.entries.is_empty() => keys(hints::QUEUED),
        _ if many => keys(hints::WORKSPACE_KEYS),
        _ if !s.abilities.prompt => keys(hints::NO_PROMPT),
        _ => keys(hints::SESSION),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use switchboard_core::gate::{Gate, GateKind, Question};
    use switchboard_core::msg::Abilities;
    use switchboard_core::state::GateUi;

    const LONG: &str = "a session with a very long name indeed, longer than any column";

    fn gate(id: &str) -> Gate {
        Gate {
            id: id.into(),
            node_key: "root".into(),
            asked_by: None,
            kind: GateKind::Question(Question {
                questions: Vec::new(),
                malformed: Some("test".into()),
                own_terminal: None,
            }),
            opened_ms: 0,
            default_reply: "{}".into(),
            reply_definition: "",
        }
    }

    /// A workspace of three sessions with long names, gates waiting in two of them, the
    /// shown one of `backend`'s kind.
    fn workspace(backend: switchboard_core::BackendKind, abilities: Abilities) -> State {
        let mut s = State::new(backend, LONG, 0);
        s.session.abilities = abilities;
        for n in 0..2 {
            let id = s.add_session(
                switchboard_core::BackendKind::Claude,
                &format!("{LONG} {n}"),
            );
            let i = s.index_of(id).unwrap();
            s.with_session(i, |s| {
                let g = gate(&format!("g{n}"));
                let ui = GateUi::for_gate(&g);
                s.push_gate(g, ui)
            });
        }
        s
    }

    fn draw(s: &State, width: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(width, 3)).unwrap();
        let theme = Theme::dark();
        t.draw(|f| {
            let [a, b] = ratatui::layout::Layout::vertical([
                ratatui::layout::Constraint::Length(1),
                ratatui::layout::Constraint::Length(1),
            ])
            .areas(f.area());
            f.render_widget(Paragraph::new(waiting_strip(s, &theme)), a);
            render_footer(s, &theme, f, b);
        })
        .unwrap();
        crate::ui::buffer_text(t.backend().buffer())
    }

    /// Issue 22 item 2: at 80, 120 and 200 columns, with long names, on a local agent and on
    /// a session that carries only calls, the waiting count and the key that reaches them
    /// are on screen; a backend without usage shows no token figures.
    #[test]
    fn what_waits_and_the_way_there_survive_every_width() {
        for (backend, abilities) in [
            (switchboard_core::BackendKind::Claude, Abilities::default()),
            (
                switchboard_core::BackendKind::Gateway,
                Abilities::calls_only("a channel".into()),
            ),
            (
                switchboard_core::BackendKind::Iii,
                Abilities::calls_only("an engine".into()),
            ),
        ] {
            let s = workspace(backend, abilities.clone());
            for width in [80, 100, 120, 200] {
                let text = draw(&s, width);
                let lines: Vec<&str> = text.lines().collect();
                assert!(
                    lines[0].contains("‖ 2 waiting · g opens the oldest"),
                    "{backend} {width}\n{text}"
                );
                assert!(
                    lines[1].contains("‖ 2 waiting"),
                    "{backend} {width}\n{text}"
                );
                assert!(lines[1].contains("g gate"), "{backend} {width}\n{text}");
                assert_eq!(
                    lines[1].contains("0↑ 0↓"),
                    abilities.usage && width >= 200,
                    "{backend} {width}\n{text}"
                );
            }
        }
    }

    fn screen(s: &State, w: u16, h: u16) -> String {
        let mut s = s.clone();
        switchboard_core::update::update(&mut s, switchboard_core::msg::Msg::Resize(w, h));
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        crate::ui::draw(&mut t, &mut s, &Theme::dark()).unwrap();
        crate::ui::buffer_text(t.backend().buffer())
    }

    /// A remote conversation's session: no prompt box, its empty state says what it is, the
    /// strip stands where the prompt would be; then its free-text question, typed at once.
    #[test]
    fn snap_a_session_without_a_prompt() {
        use switchboard_core::msg::{BackendEvent, Msg};
        use switchboard_core::state::SessionId;
        let mut s = State::new(
            switchboard_core::BackendKind::Gateway,
            "conversation conv-1",
            0,
        );
        let ev = |s: &mut State, event| {
            switchboard_core::update::update(
                s,
                Msg::Backend {
                    session: SessionId::FIRST,
                    at_ms: 1,
                    event,
                },
            );
        };
        ev(
            &mut s,
            BackendEvent::Abilities(Abilities::calls_only(
                "Remote conversation conv-1: the agent's calls on your project wait here as cards."
                    .into(),
            )),
        );
        ev(&mut s, BackendEvent::Link("connected".into()));
        for (w, h) in [(80, 24), (120, 40)] {
            insta::assert_snapshot!(format!("no_prompt_idle_{w}x{h}"), screen(&s, w, h));
        }
        let q = Gate {
            id: "gw-1".into(),
            node_key: "root".into(),
            asked_by: Some("remote conversation conv-1".into()),
            kind: GateKind::Question(Question {
                questions: vec![switchboard_core::gate::QSpec {
                    question: "Shall I also add a CHANGELOG.md?".into(),
                    header: "conv-1 asks".into(),
                    multi: false,
                    options: Vec::new(),
                }],
                malformed: None,
                own_terminal: None,
            }),
            opened_ms: 1,
            default_reply: "{}".into(),
            reply_definition: "",
        };
        ev(&mut s, BackendEvent::GateOpen(Box::new(q)));
        for (w, h) in [(80, 24), (120, 40)] {
            insta::assert_snapshot!(format!("no_prompt_free_text_{w}x{h}"), screen(&s, w, h));
        }
    }
}
