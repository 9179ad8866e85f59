//! Rendering: reads `&State`, draws a frame. No state changes beyond render caches.

pub mod convert;
pub mod diffs;
pub mod field;
pub mod gates;
pub mod inbox;
pub mod items;
pub mod overlay;
pub mod status;
pub mod svg;
pub mod theme;
pub mod wrap;

mod gate_body;
mod overlay_session;
mod transcript_pane;
mod tree_pane;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use switchboard_core::msg::TurnState;
use switchboard_core::state::{Focus, State, ViewMetrics};

use theme::Theme;
use transcript_pane::render_transcript;
use tree_pane::{grey_offline_rows, render_tree};

/// Draw `state` on `f`; returns what the frame measured, for the reducer (`draw` hands it over).
#[must_use = "the reducer needs what the frame measured: hand it over with Msg::Drawn (see draw)"]
pub fn render(state: &State, theme: &Theme, f: &mut Frame) -> ViewMetrics {
    let mut drawn = ViewMetrics::default();
    let area = f.area();
    let banners = banner_lines(state, theme);
    let banner_h = if area.height > 8 {
        banners.len() as u16
    } else {
        0
    };
    let strip_h = u16::from(status::strip_shown(state, shows_gate(state)) && area.height > 6);
    let [banner, main, strip, bottom, footer] = Layout::vertical([
        Constraint::Length(banner_h),
        Constraint::Min(3),
        Constraint::Length(strip_h),
        Constraint::Length(bottom_height(state, area, theme)),
        Constraint::Length(1),
    ])
    .areas(area);
    if banner_h > 0 {
        f.render_widget(Paragraph::new(banners), banner);
    }
    let tree_w = if area.width >= 160 {
        (area.width / 4).min(56)
    } else if area.width >= 120 {
        38
    } else if area.width >= 90 {
        30
    } else {
        (area.width / 3).max(16)
    };
    let [tree_area, transcript_area] =
        Layout::horizontal([Constraint::Length(tree_w), Constraint::Min(10)]).areas(main);
    render_tree(state, theme, f, tree_area, &mut drawn);
    grey_offline_rows(state, theme, f, &drawn);
    render_transcript(state, theme, f, transcript_area, &mut drawn);
    if state.session.offline.is_some() {
        grey(f.buffer_mut(), transcript_area, theme);
    }
    if strip_h > 0 {
        f.render_widget(Paragraph::new(status::waiting_strip(state, theme)), strip);
    }
    render_bottom(state, theme, f, bottom, &mut drawn);
    match &state.replay {
        Some(r) => render_replay_footer(r, state.status_line.as_deref(), theme, f, footer),
        None => status::render_footer(state, theme, f, footer),
    }
    overlay::render(state, theme, f);
    scrub(f.buffer_mut());
    drawn
}

/// Draw `state` on `term` and hand the reducer what the frame measured (`Msg::Drawn`, only
/// when it changed): the one way a frame is drawn, for the app, the player, tests and benches.
pub fn draw<B: ratatui::backend::Backend>(
    term: &mut ratatui::Terminal<B>,
    state: &mut State,
    theme: &Theme,
) -> Result<(), B::Error> {
    let mut drawn = ViewMetrics::default();
    term.draw(|f| drawn = render(state, theme, f))?;
    if state.view != drawn {
        let _ = switchboard_core::update(state, switchboard_core::Msg::Drawn(drawn));
    }
    Ok(())
}

/// The persistent lines above the panes: an offline connection, what the backend cannot see,
/// a stopped recording.
fn banner_lines(state: &State, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if let Some(why) = &state.session.offline {
        // The last state stays on screen, greyed, until the re-read after the reconnect.
        lines.push(Line::from(Span::styled(
            format!(
                " ⟳ {}: the last state is shown greyed; decisions are disabled until it is back ",
                switchboard_core::text::sanitize(why)
            ),
            theme.warn,
        )));
    }
    if let Some(blind) = &state.session.blind {
        // Persistent until the backend says it sees again: a supervisor that cannot see what
        // an agent does must never look safe (the words lead, so a narrow screen keeps them).
        lines.push(Line::from(Span::styled(
            format!(" ⚠ {} ", switchboard_core::text::sanitize(blind)),
            theme.error,
        )));
    }
    if let Some(why) = &state.session.recording_failed {
        // Persistent: the session goes on, but nothing more reaches the recording.
        lines.push(Line::from(Span::styled(
            format!(
                " ⚠ recording stopped, the rest of this session is not recorded: {} ",
                switchboard_core::text::sanitize(why)
            ),
            theme.error,
        )));
    }
    lines
}

/// Draw `area` in the theme's dim style, keeping the text: what an offline session shows is
/// its last known state, not a live one.
pub fn grey(buf: &mut ratatui::buffer::Buffer, area: Rect, theme: &Theme) {
    use ratatui::style::{Color, Modifier};
    let area = area.intersection(buf.area);
    // Every colour goes: one muted foreground (the dim role's, else the terminal's own),
    // dimmed, over the theme's backgrounds.
    let fg = theme.dim.fg.unwrap_or(Color::Reset);
    let modifier = (theme.dim.add_modifier | Modifier::DIM) - theme.dim.sub_modifier;
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let cell = &mut buf[(x, y)];
            cell.fg = fg;
            cell.modifier = modifier;
        }
    }
}

/// The last line of defence: whatever a widget drew (a span built without `wrap`/`clip`, the
/// text editor showing exact input bytes), no cell may carry a control, bidi or invisible
/// format character to the terminal. ratatui drops C0 itself but appends zero-width
/// characters such as U+202E to the previous cell.
pub fn scrub(buf: &mut ratatui::buffer::Buffer) {
    // `\n` and `\t` too: inside a cell they move the cursor and shift everything after.
    let bad = |c: char| c.is_control() || switchboard_core::text::is_hostile(c);
    for cell in buf.content.iter_mut() {
        if cell.symbol().chars().any(bad) {
            let kept: String = cell.symbol().chars().filter(|c| !bad(*c)).collect();
            cell.set_symbol(if kept.is_empty() { " " } else { &kept });
        }
    }
}

/// A drawn buffer as text: one line per row, trailing spaces trimmed, each ending in `\n`.
/// Tests and the headless app read screens this way.
pub fn buffer_text(buf: &ratatui::buffer::Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The gate card when a gate is shown, else the prompt box.
fn shows_gate(state: &State) -> bool {
    state.active().is_some() && state.focus != Focus::Prompt
}

fn bottom_height(state: &State, area: Rect, theme: &Theme) -> u16 {
    let max = (area.height * 3 / 5).max(5);
    if shows_gate(state) {
        let gate = state.active().expect("checked by shows_gate");
        let ui = state.active_ui();
        let default_ui;
        let ui = match ui {
            Some(u) => u,
            None => {
                default_ui = switchboard_core::state::GateUi::for_gate(gate);
                &default_ui
            }
        };
        gates::card_height(state, gate, ui, area.width, theme).min(max)
    } else if !state.session.abilities.prompt && state.replay.is_none() {
        // No prompt box where no prompt is taken: the strip stands in its place.
        0
    } else {
        (state.prompt.lines().len() as u16 + 2).clamp(3, 8).min(max)
    }
}

fn focus_border(state: &State, focus: Focus, theme: &Theme) -> ratatui::style::Style {
    if state.focus == focus {
        theme.border_focus
    } else {
        theme.border
    }
}

fn render_bottom(state: &State, theme: &Theme, f: &mut Frame, area: Rect, drawn: &mut ViewMetrics) {
    if area.height == 0 {
        return;
    }
    if shows_gate(state) {
        let gate = state.active().expect("checked by shows_gate");
        if let Some(ui) = state.active_ui() {
            drawn.card_max_scroll =
                gates::render_card(f, area, state, gate, ui, state.focus == Focus::Gate, theme);
        } else {
            let ui = switchboard_core::state::GateUi::for_gate(gate);
            drawn.card_max_scroll =
                gates::render_card(f, area, state, gate, &ui, state.focus == Focus::Gate, theme);
        }
        return;
    }
    let mut prompt = field::widget(&state.prompt);
    prompt.set_placeholder_text(if state.replay.is_some() {
        "Replay: read-only, nothing is sent."
    } else if state.session.exited.is_some() {
        "The agent has exited; the session is read-only (q quits)."
    } else {
        "Message the agent (Enter sends, Alt-Enter newline)"
    });
    let title = match (&state.session.exited, state.session.turn) {
        _ if state.replay.is_some() => " replay ".to_string(),
        (Some(_), _) => " agent exited: read-only ".to_string(),
        (None, Some(TurnState::Running | TurnState::RequiresAction)) => {
            " prompt (the agent queues it while a turn runs) ".to_string()
        }
        _ => " prompt ".to_string(),
    };
    let title = if state.queue_edit.is_some() {
        " editing a queued message: Enter saves it in place, Esc cancels ".to_string()
    } else if state.queue.entries.is_empty() {
        title
    } else {
        let n = state.queue.entries.len() + state.queue.more;
        format!("{title}· {n} queued (u edits) ")
    };
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(focus_border(state, Focus::Prompt, theme))
        .title(Span::styled(title, theme.title));
    // The card is hidden while the prompt has focus: say that gates still wait.
    if !state.gates.is_empty() && state.replay.is_none() {
        block = block.title(
            Line::from(Span::styled(
                format!(" ‖ {} waiting · g shows it ", state.gates.len()),
                theme.waiting,
            ))
            .right_aligned(),
        );
    }
    prompt.set_block(block);
    if state.focus != Focus::Prompt {
        prompt.set_cursor_style(ratatui::style::Style::default());
    }
    f.render_widget(&prompt, area);
}

/// The replay's footer: where it is, then what just happened (a seek's progress, "seek
/// cancelled") or else the keys.
fn render_replay_footer(
    r: &switchboard_core::state::ReplayView,
    status: Option<&str>,
    theme: &Theme,
    f: &mut Frame,
    area: Rect,
) {
    let spans = vec![
        Span::styled(" replay ", theme.waiting),
        Span::styled(format!("· frame {}/{} ", r.frame, r.total), theme.accent),
        Span::styled(format!("· {} ", r.time), theme.footer),
        Span::styled(
            format!(
                "· {} {} ",
                if r.playing {
                    "▶ playing"
                } else {
                    "‖ paused"
                },
                r.speed
            ),
            theme.footer,
        ),
        match status {
            Some(s) => Span::styled(format!("· {s}"), theme.warn),
            None => Span::styled(
                format!(
                    "· {}",
                    switchboard_core::bindings::hint_line(
                        &Default::default(),
                        switchboard_core::bindings::hints::REPLAY_KEYS
                    )
                ),
                theme.dim,
            ),
        },
    ];
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

#[cfg(test)]
mod flat_tests {
    use super::items::item_lines;
    use super::transcript_pane::REINDEX_PER_FRAME;
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use switchboard_core::transcript::{ItemKind, ItemOp};

    fn state_with(n: usize) -> State {
        let mut s = State::new(switchboard_core::BackendKind::Claude, "main", 0);
        s.size = (200, 50);
        let t = &mut s.tree.nodes[0].transcript;
        for i in 0..n {
            let kind = if i % 3 == 0 {
                ItemKind::User {
                    text: format!("prompt {i}\nwith a second line"),
                }
            } else {
                ItemKind::Assistant {
                    text: format!("answer {i} ").repeat(1 + i % 40),
                    streaming: false,
                    aborted: false,
                }
            };
            t.push(kind, 0);
        }
        s
    }

    fn frame(s: &mut State, term: &mut Terminal<TestBackend>) -> usize {
        let theme = Theme::dark();
        items::HEIGHTS_ASKED.with(|c| c.set(0));
        crate::ui::draw(term, s, &theme).unwrap();
        items::HEIGHTS_ASKED.with(|c| c.get())
    }

    fn stream_word(s: &mut State) {
        s.tree.nodes[0].transcript.apply(
            ItemOp::AppendText {
                key: "live".into(),
                thinking: false,
                delta: "word ".into(),
            },
            0,
        );
    }

    /// Heights measured by a frame while streaming, following or scrolled: the same at 100k
    /// items as at 1k (it used to measure every item of the session every frame).
    #[test]
    fn frame_cost_is_the_screens_not_the_sessions() {
        let mut costs = Vec::new();
        for n in [1_000, 100_000] {
            let mut s = state_with(n);
            let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap();
            // The index is built a few thousand rows per frame while following.
            while s.tree.nodes[0].transcript.heights.borrow().len() < n {
                frame(&mut s, &mut term);
            }
            stream_word(&mut s);
            frame(&mut s, &mut term);
            stream_word(&mut s);
            let follow = frame(&mut s, &mut term);
            s.scroll_back = 500;
            frame(&mut s, &mut term);
            stream_word(&mut s);
            let scrolled = frame(&mut s, &mut term);
            s.scroll_back = 0;
            s.selected_item = Some(n / 2);
            frame(&mut s, &mut term);
            let selected = frame(&mut s, &mut term);
            costs.push((follow, scrolled, selected));
        }
        // The tail's items differ in height, so the counts may differ by a few rows.
        let near = |a: usize, b: usize| a.abs_diff(b) <= 5;
        assert!(
            near(costs[0].0, costs[1].0)
                && near(costs[0].1, costs[1].1)
                && near(costs[0].2, costs[1].2),
            "1k vs 100k items: {costs:?}"
        );
        assert!(costs[1].0 < 100 && costs[1].1 < 100, "{costs:?}");
    }

    /// The first visible row found through the index is the one a full sum finds, at every
    /// scroll position and after rows change height.
    #[test]
    fn scrolled_view_matches_a_full_sum() {
        let theme = Theme::dark();
        let mut s = state_with(3_000);
        let mut term = Terminal::new(TestBackend::new(120, 30)).unwrap();
        frame(&mut s, &mut term);
        let iw = s.view.transcript_area.width - 1;
        let h = s.view.transcript_area.height as usize;
        for back in [1usize, 7, 100, 2_500, 40_000, usize::MAX / 2] {
            // Change heights behind the view: an expanded row and a grown stream.
            s.tree.nodes[0].transcript.set_expanded(5, true);
            stream_word(&mut s);
            s.scroll_back = back;
            frame(&mut s, &mut term);
            let items = &s.tree.nodes[0].transcript.items;
            let heights: Vec<usize> = items
                .iter()
                .map(|i| item_lines(i, iw, &theme).len())
                .collect();
            let total: usize = heights.iter().sum();
            let back = back.min(total - h);
            let top = total - h - back;
            let (mut y, mut first) = (0, 0);
            while y + heights[first] <= top {
                y += heights[first];
                first += 1;
            }
            assert_eq!(s.view.drawn_scroll_back, back);
            assert_eq!(s.view.item_rows[0], first, "back {back}");
            assert_eq!(
                s.view.item_rows.iter().filter(|r| **r == first).count(),
                (y + heights[first] - top).min(h)
            );
        }
    }

    /// A resize while following draws the tail at once and re-indexes a bounded number of
    /// rows per frame; scrolling up then completes the index.
    #[test]
    fn resize_draws_the_tail_without_reindexing_everything() {
        let mut s = state_with(50_000);
        let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap();
        frame(&mut s, &mut term);
        term.backend_mut().resize(150, 40);
        let asked = frame(&mut s, &mut term);
        assert!(asked < REINDEX_PER_FRAME + 200, "{asked}");
        let last = *s.view.item_rows.last().unwrap();
        assert_eq!(last, 49_999, "the tail is drawn");
        s.scroll_back = 10;
        frame(&mut s, &mut term);
        let t = &s.tree.nodes[0].transcript;
        assert_eq!(t.heights.borrow().len(), 50_000);
    }

    /// The tree pane with thousands of sub-agents formats only its window, and the rows it
    /// reports for clicks are the window of the full list.
    #[test]
    fn tree_pane_draws_its_window() {
        let mut s = state_with(10);
        for a in 0..3_000 {
            let parent = (a % 3 == 1).then(|| format!("a{}", a - 1));
            let id = s.tree.open(&format!("a{a}"), parent.as_deref(), 0);
            s.tree.nodes[id].name = format!("agent-{a}");
        }
        for (sel, height) in [(2_345usize, 41u16), (1_000, 40), (0, 40), (3_000, 33)] {
            let mut term = Terminal::new(TestBackend::new(200, height)).unwrap();
            s.selected_node = sel;
            frame(&mut s, &mut term);
            let order = switchboard_core::update::visible_nodes(&s);
            let full: Vec<usize> = order.iter().flat_map(|id| [*id, *id]).collect();
            let h = s.view.tree_area.height as usize;
            let sel_row = 2 * order.iter().position(|id| *id == sel).unwrap();
            let top = (sel_row + 2).saturating_sub(h);
            let want: Vec<(usize, usize)> =
                full.iter().skip(top).take(h).map(|n| (0, *n)).collect();
            assert_eq!(*s.view.tree_rows, want, "selected {sel}, height {h}");
            let screen = buffer_text(term.backend().buffer());
            let name = s.tree.nodes[sel].name.clone();
            assert!(screen.contains(&name), "{name} shown");
        }
    }

    /// A workspace of five sessions, each with `n` sub-agents nested up to three deep, built
    /// through the reducer; the last session's middle node (three deep) selected.
    fn workspace_of(n: usize) -> State {
        use switchboard_core::msg::BackendEvent;
        use switchboard_core::state::SessionId;
        let mut s = State::new(switchboard_core::BackendKind::Claude, "s0", 0);
        let mut ids = vec![SessionId::FIRST];
        for k in 1..5 {
            ids.push(s.add_session(switchboard_core::BackendKind::Claude, &format!("s{k}")));
        }
        for &session in &ids {
            for a in 0..n {
                let parent = matches!(a % 4, 1 | 2).then(|| format!("a{}", a - 1));
                let event = BackendEvent::NodeOpen {
                    key: format!("a{a}"),
                    parent,
                    patch: Default::default(),
                };
                let at_ms = 0;
                let _ = switchboard_core::update(
                    &mut s,
                    switchboard_core::Msg::Backend {
                        session,
                        at_ms,
                        event,
                    },
                );
            }
        }
        let mid = (n / 2) / 4 * 4 + 2;
        let node = s.sessions[4].tree.get(&format!("a{mid}")).unwrap();
        s.select_session(4, node);
        s
    }

    fn visited(f: impl FnOnce()) -> usize {
        switchboard_core::tree::NODES_VISITED.with(|c| c.set(0));
        f();
        switchboard_core::tree::NODES_VISITED.with(|c| c.get())
    }

    /// Nodes a frame's tree pane steps over (its totals, the selected row's position, its
    /// window) and nodes one event on a node steps over: the same with 20,000 sub-agents as
    /// with 1,000 (the frame used to walk every node of every session for its totals and the
    /// selected row, and a badge counted every pending gate).
    #[test]
    fn tree_frame_and_node_events_cost_the_same_whatever_the_node_count() {
        use switchboard_core::msg::BackendEvent;
        use switchboard_core::tree::NodePatch;
        let mut costs = Vec::new();
        for n in [200, 4_000] {
            let mut s = workspace_of(n);
            let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap();
            let theme = Theme::dark();
            let frame = visited(|| {
                crate::ui::draw(&mut term, &mut s, &theme).unwrap();
            });
            let screen = buffer_text(term.backend().buffer());
            let selected = s.tree.nodes[s.selected_node].key.clone();
            assert!(screen.contains("5 sessions") || screen.contains("Sessions (5)"));
            let session = s.sessions[4].id;
            let event = |s: &mut State, event| {
                visited(|| {
                    let _ = switchboard_core::update(
                        s,
                        switchboard_core::Msg::Backend {
                            session,
                            at_ms: 1,
                            event,
                        },
                    );
                })
            };
            let status = event(
                &mut s,
                BackendEvent::NodeUpdate {
                    key: selected.clone(),
                    patch: NodePatch {
                        status: Some(switchboard_core::tree::NodeStatus::Completed),
                        ..Default::default()
                    },
                },
            );
            let opened = event(
                &mut s,
                BackendEvent::NodeOpen {
                    key: "late".into(),
                    parent: Some(selected.clone()),
                    patch: Default::default(),
                },
            );
            let rows = switchboard_core::update::tree_rows(&s);
            assert_eq!(rows.len(), 5 * (n + 1) + 1, "every node is a row");
            let totals = switchboard_core::update::row_totals(&s);
            assert_eq!((totals.done, totals.running), (1, 5 * n));
            let frame2 = visited(|| {
                crate::ui::draw(&mut term, &mut s, &theme).unwrap();
            });
            costs.push((frame, frame2, status, opened));
        }
        assert_eq!(costs[0], costs[1], "200 vs 4,000 sub-agents per session");
        let (frame, _, status, opened) = costs[1];
        // The window (about 25 nodes, each a few steps) and the selected node's depth.
        assert!(frame < 120, "{costs:?}");
        assert!(status <= 4 && opened <= 5, "{costs:?}");
    }
}
