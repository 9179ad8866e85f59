//! The workspace: several sessions, one inbox, batch triage, closing sessions. Headless, like
//! every reducer test.

use super::*;
use crate::gate::PermOption;
use crate::state::{GateRef, SessionId};

const A: SessionId = SessionId::FIRST;

/// A workspace of `api` (claude), `web` (claude) and `docs` (acp), the first one shown.
fn ws() -> (State, SessionId, SessionId) {
    let mut s = State::new(crate::BackendKind::Claude, "api", 0);
    let b = s.add_session(crate::BackendKind::Claude, "web");
    let c = s.add_session(crate::BackendKind::Acp, "docs");
    (s, b, c)
}

fn ev_in(s: &mut State, session: SessionId, at_ms: u64, event: BackendEvent) -> Vec<Effect> {
    update(
        s,
        crate::Msg::Backend {
            session,
            at_ms,
            event,
        },
    )
}

fn open_in(s: &mut State, session: SessionId, at_ms: u64, mut g: Gate) -> Vec<Effect> {
    g.opened_ms = at_ms;
    ev_in(s, session, at_ms, BackendEvent::GateOpen(Box::new(g)))
}

/// An ACP permission whose options include allow-once and reject-once.
fn acp_perm(id: &str, command: &str) -> Gate {
    let mut g = bash(id, command);
    if let GateKind::Permission(p) = &mut g.kind {
        p.options = vec![
            PermOption {
                option_id: "allow".into(),
                name: "Allow".into(),
                kind: "allow_once".into(),
            },
            PermOption {
                option_id: "reject".into(),
                name: "Reject".into(),
                kind: "reject_once".into(),
            },
        ];
    }
    g
}

fn answers(fx: &[Effect]) -> Vec<(SessionId, String, Decision)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Send(sid, Command::Answer { gate_id, decision }) => {
                Some((*sid, gate_id.clone(), decision.clone()))
            }
            _ => None,
        })
        .collect()
}

fn allow_once() -> Decision {
    Decision::Allow {
        updated_input: None,
        always: false,
    }
}

#[test]
fn a_background_gate_never_takes_the_keyboard_and_rings_once_per_burst() {
    let (mut s, b, c) = ws();
    s.focus = Focus::Transcript;
    let fx = open_in(&mut s, b, 1_000, bash("g1", "npm test"));
    assert_eq!(fx, vec![Effect::Bell]);
    assert_eq!(s.focus, Focus::Transcript, "focus stays");
    assert_eq!(s.selected, 0, "the shown session stays");
    assert!(s.active().is_none(), "the shown session has no card");
    // Another background gate within the burst: no second bell.
    assert_eq!(open_in(&mut s, c, 1_500, bash("acp:0", "ls")), vec![]);
    // Later: a new burst rings again.
    assert_eq!(
        open_in(&mut s, b, 10_000, bash("g2", "ls")),
        vec![Effect::Bell]
    );
    assert_eq!(s.pending_total(), 3);
}

#[test]
fn a_gate_in_the_shown_session_still_opens_its_card() {
    let (mut s, b, _) = ws();
    s.focus = Focus::Transcript;
    open_in(&mut s, b, 1_000, bash("bg", "npm test"));
    let fx = open_in(&mut s, A, 2_000, bash("fg", "ls"));
    assert_eq!(fx, vec![Effect::Bell]);
    assert_eq!(s.focus, Focus::Gate);
    assert_eq!(s.active().unwrap().id, "fg");
}

#[test]
fn g_jumps_to_the_oldest_gate_anywhere_and_brackets_cross_sessions() {
    let (mut s, b, c) = ws();
    s.focus = Focus::Tree;
    open_in(&mut s, b, 1_000, bash("b1", "npm test"));
    open_in(&mut s, c, 2_000, acp_perm("acp:0", "ls"));
    open_in(&mut s, b, 3_000, bash("b2", "make"));
    ch(&mut s, 'g');
    assert_eq!((s.selected, s.active().unwrap().id.as_str()), (1, "b1"));
    assert_eq!(s.focus, Focus::Gate);
    ch(&mut s, ']');
    assert_eq!((s.selected, s.active().unwrap().id.as_str()), (2, "acp:0"));
    ch(&mut s, ']');
    assert_eq!((s.selected, s.active().unwrap().id.as_str()), (1, "b2"));
    ch(&mut s, ']');
    assert_eq!((s.selected, s.active().unwrap().id.as_str()), (1, "b1"));
    ch(&mut s, '[');
    assert_eq!((s.selected, s.active().unwrap().id.as_str()), (1, "b2"));
    // Answering goes to that session's agent, tagged with its id.
    let fx = ch(&mut s, 'y');
    assert_eq!(answers(&fx), vec![(b, "b2".into(), allow_once())]);
}

#[test]
fn the_same_acp_gate_id_in_two_sessions_never_collides() {
    let mut s = State::new(crate::BackendKind::Acp, "one", 0);
    let two = s.add_session(crate::BackendKind::Acp, "two");
    open_in(&mut s, A, 1_000, acp_perm("acp:0", "ls"));
    open_in(&mut s, two, 2_000, acp_perm("acp:0", "rm -rf build"));
    assert_eq!(s.pending_total(), 2);
    // Answer the second session's acp:0 from the inbox; the first stays pending.
    let fx = crate::update::workspace::answer_in(
        &mut s,
        &GateRef {
            session: two,
            id: "acp:0".into(),
        },
        allow_once(),
    );
    assert_eq!(answers(&fx), vec![(two, "acp:0".into(), allow_once())]);
    assert_eq!(s.sessions[0].gates.len(), 1);
    assert_eq!(s.sessions[1].gates.len(), 0);
    // A withdraw for acp:0 in session one closes only session one's.
    open_in(&mut s, two, 3_000, acp_perm("acp:0", "again"));
    ev_in(
        &mut s,
        A,
        4_000,
        BackendEvent::GateWithdrawn { id: "acp:0".into() },
    );
    assert_eq!(s.sessions[0].gates.len(), 0);
    assert_eq!(s.sessions[1].gates.len(), 1);
}

#[test]
fn inbox_batch_allow_answers_each_marked_gate_in_its_own_session_once() {
    let (mut s, b, c) = ws();
    s.focus = Focus::Tree;
    open_in(&mut s, b, 1_000, bash("b1", "npm test"));
    open_in(&mut s, c, 2_000, acp_perm("acp:0", "npm test"));
    open_in(&mut s, A, 3_000, question("q1", questions_input()));
    open_in(&mut s, b, 4_000, bash("b2", "npm test"));
    open_in(&mut s, A, 5_000, bash("a1", "rm -rf /"));
    s.focus = Focus::Tree;
    s.overlay = None;
    ch(&mut s, 'I');
    assert_eq!(s.overlay, Some(Overlay::Inbox));
    // `=` on the oldest (npm test) marks every identical batchable request, across sessions.
    ch(&mut s, '=');
    let marked: Vec<String> = crate::update::workspace::batch(&s)
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(marked, vec!["b1", "acp:0", "b2"]);
    // The question cannot join a batch.
    press(&mut s, KeyCode::Down);
    press(&mut s, KeyCode::Down);
    ch(&mut s, ' ');
    assert_eq!(s.inbox.marked.len(), 3, "a question is never marked");
    assert!(s.status_line.as_deref().unwrap().contains("one by one"));
    let fx = ch(&mut s, 'y');
    let mut got = answers(&fx);
    got.sort_by(|x, y| x.1.cmp(&y.1));
    let acp_allow = Decision::Option {
        option_id: "allow".into(),
        name: "allow once".into(),
        allow: true,
    };
    assert_eq!(
        got,
        vec![
            (c, "acp:0".into(), acp_allow),
            (b, "b1".into(), allow_once()),
            (b, "b2".into(), allow_once()),
        ]
    );
    // Each has its own audit row naming the batch.
    let web = &s.sessions[1].tree.nodes[0].transcript;
    let audits = web
        .items
        .iter()
        .filter(|i| matches!(&i.kind, ItemKind::Audit { text, .. } if text.contains("inbox batch of 3")))
        .count();
    assert_eq!(audits, 2);
    // What stays: the question and rm -rf, untouched.
    assert_eq!(s.pending_total(), 2);
    // A second `y` answers nothing more (the marks are gone).
    assert!(answers(&ch(&mut s, 'y')).is_empty());
}

#[test]
fn inbox_batch_deny_sends_one_message_to_each() {
    let (mut s, b, _) = ws();
    open_in(&mut s, b, 1_000, bash("b1", "curl x"));
    open_in(&mut s, b, 2_000, bash("b2", "wget y"));
    s.focus = Focus::Tree;
    ch(&mut s, 'I');
    ch(&mut s, ' ');
    ch(&mut s, ' ');
    assert_eq!(s.inbox.marked.len(), 2);
    assert!(ch(&mut s, 'n').is_empty());
    // Letters are the message now, not commands (`y` must not allow).
    typ(&mut s, "no network, use the cache");
    let fx = press(&mut s, KeyCode::Enter);
    let deny = Decision::Deny {
        message: "no network, use the cache".into(),
        interrupt: false,
    };
    assert_eq!(
        answers(&fx),
        vec![(b, "b1".into(), deny.clone()), (b, "b2".into(), deny)]
    );
    assert_eq!(s.overlay, None, "nothing left: the inbox closes");
}

#[test]
fn a_default_to_no_gate_never_joins_a_batch() {
    let (mut s, b, _) = ws();
    let mut g = bash("b1", "npm test");
    if let GateKind::Permission(p) = &mut g.kind {
        p.default_to_no = true;
    }
    open_in(&mut s, b, 1_000, g);
    open_in(&mut s, b, 2_000, bash("b2", "npm test"));
    s.focus = Focus::Tree;
    ch(&mut s, 'I');
    press(&mut s, KeyCode::Down);
    ch(&mut s, '=');
    let marked: Vec<String> = crate::update::workspace::batch(&s)
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(marked, vec!["b2"]);
}

#[test]
fn closing_a_session_answers_its_gates_and_stops_only_it() {
    let (mut s, b, _) = ws();
    open_in(&mut s, A, 1_000, bash("a1", "ls"));
    open_in(&mut s, b, 2_000, bash("b1", "ls"));
    s.focus = Focus::Tree;
    assert!(ch(&mut s, 'x').is_empty());
    assert_eq!(s.overlay, Some(Overlay::ConfirmClose { session: A }));
    let fx = ch(&mut s, 'y');
    assert_eq!(answers(&fx).len(), 1);
    assert_eq!(answers(&fx)[0].0, A);
    assert!(matches!(answers(&fx)[0].2, Decision::Deny { .. }));
    assert!(fx.contains(&Effect::Send(A, Command::Shutdown)));
    assert!(
        !fx.iter()
            .any(|e| matches!(e, Effect::Send(sid, _) if *sid == b))
    );
    assert!(s.sessions[0].closed);
    assert_eq!(
        s.sessions[1].gates.len(),
        1,
        "the other session's gate stays"
    );
    assert_eq!(s.sessions[0].status_label(), "closed");
}

#[test]
fn quitting_answers_every_session_and_shuts_every_source_down() {
    let (mut s, b, c) = ws();
    open_in(&mut s, b, 1_000, bash("b1", "ls"));
    open_in(&mut s, c, 2_000, acp_perm("acp:0", "ls"));
    s.focus = Focus::Tree;
    ch(&mut s, 'q');
    assert_eq!(s.overlay, Some(Overlay::ConfirmQuit));
    let fx = ch(&mut s, 'y');
    let got: Vec<SessionId> = answers(&fx).iter().map(|a| a.0).collect();
    assert_eq!(got, vec![b, c]);
    for sid in [A, b, c] {
        assert!(fx.contains(&Effect::Send(sid, Command::Shutdown)), "{sid}");
    }
    assert!(fx.contains(&Effect::Quit));
}

#[test]
fn a_session_rule_applies_to_its_own_session_only() {
    let (mut s, b, _) = ws();
    open_in(&mut s, A, 1_000, bash("a1", "make"));
    // `a` remembers "allow exactly this" for session one.
    let fx = ch(&mut s, 'a');
    assert_eq!(answers(&fx).len(), 1);
    // The same request in session one is allowed by the rule; in session two it asks.
    let fx = open_in(&mut s, A, 2_000, bash("a2", "make"));
    assert_eq!(answers(&fx).len(), 1, "ruled in its own session");
    let fx = open_in(&mut s, b, 3_000, bash("b1", "make"));
    assert!(answers(&fx).is_empty(), "another session asks");
    assert_eq!(s.rules.list[0].hits_by, vec![(A, 1)]);
}

#[test]
fn the_tree_lists_every_session_and_folds_one() {
    let (mut s, b, _) = ws();
    ev_in(
        &mut s,
        b,
        1_000,
        BackendEvent::NodeOpen {
            key: "t1".into(),
            parent: None,
            patch: Default::default(),
        },
    );
    let rows = crate::update::tree_rows(&s);
    assert_eq!(rows, vec![(0, 0), (1, 0), (1, 1), (2, 0)]);
    // Walk down into the second session: it becomes the shown one.
    s.focus = Focus::Tree;
    press(&mut s, KeyCode::Down);
    press(&mut s, KeyCode::Down);
    assert_eq!((s.selected, s.selected_node), (1, 1));
    ch(&mut s, 'z');
    assert_eq!(crate::update::tree_rows(&s), vec![(0, 0), (1, 0), (2, 0)]);
    assert_eq!((s.selected, s.selected_node), (1, 0));
}

#[test]
fn a_prompt_being_typed_is_not_taken_by_a_gate_from_another_session() {
    let (mut s, b, _) = ws();
    s.focus = Focus::Prompt;
    typ(&mut s, "hello");
    open_in(&mut s, b, 1_000, bash("b1", "rm -rf ~"));
    typ(&mut s, " y");
    assert_eq!(s.prompt_text(), "hello y");
    assert_eq!(s.sessions[1].gates.len(), 1);
}

#[test]
fn the_new_session_dialog_asks_the_app_to_start_a_profile_or_a_command() {
    let (mut s, _, _) = ws();
    s.profiles = vec![crate::state::ProfileChoice {
        name: "api".into(),
        backend: "claude".into(),
        cwd: "/src/api".into(),
        provider: None,
    }];
    s.focus = Focus::Tree;
    ctrl(&mut s, 'n');
    assert!(matches!(s.overlay, Some(Overlay::NewSession(_))));
    // Tab to cwd, then prompt; letters are text there.
    press(&mut s, KeyCode::Tab);
    press(&mut s, KeyCode::Tab);
    typ(&mut s, "fix it");
    let fx = press(&mut s, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::StartSession(crate::msg::NewSession {
            profile: Some("api".into()),
            command_line: None,
            cwd: "/src/api".into(),
            prompt: "fix it".into(),
            resume: None,
        })]
    );
    // The command-line choice.
    ctrl(&mut s, 'n');
    press(&mut s, KeyCode::Down);
    press(&mut s, KeyCode::Tab);
    typ(&mut s, "claude-agent-acp --debug");
    let fx = press(&mut s, KeyCode::Enter);
    let Effect::StartSession(req) = &fx[0] else {
        panic!("{fx:?}")
    };
    assert_eq!(
        req.command_line.as_deref(),
        Some("claude-agent-acp --debug")
    );
    assert_eq!(req.profile, None);
}

#[test]
fn a_closed_session_restarts_from_its_profile_resuming_claude() {
    let (mut s, _, _) = ws();
    s.sessions[0].profile = Some("api".into());
    s.sessions[0].session.session_id = Some("sess-1".into());
    s.focus = Focus::Tree;
    ch(&mut s, 'x');
    let fx = ch(&mut s, 'X');
    let Effect::StartSession(req) = &fx[0] else {
        panic!("{fx:?}")
    };
    assert_eq!(req.profile.as_deref(), Some("api"));
    assert_eq!(req.resume.as_deref(), Some("sess-1"));
}

#[test]
fn late_events_of_a_closed_or_unknown_session_change_nothing() {
    let (mut s, _, _) = ws();
    let fx = open_in(&mut s, SessionId(99), 1_000, bash("z", "ls"));
    assert!(fx.is_empty());
    assert_eq!(s.pending_total(), 0);
}

#[test]
fn the_new_session_chord_can_be_remapped() {
    let (mut s, _, _) = ws();
    s.keymap = crate::keymap::build(&std::collections::BTreeMap::from([(
        "new_session".to_string(),
        "ctrl-t".to_string(),
    )]))
    .unwrap();
    s.focus = Focus::Tree;
    ctrl(&mut s, 't');
    assert!(matches!(s.overlay, Some(Overlay::NewSession(_))));
    press(&mut s, KeyCode::Esc);
    // The default chord keeps working.
    ctrl(&mut s, 'n');
    assert!(matches!(s.overlay, Some(Overlay::NewSession(_))));
}

#[test]
fn durable_holds_are_left_pending_on_quit_never_answered() {
    let (mut s, b, _) = ws();
    s.sessions[1].keeps_gates_on_quit = true;
    open_in(&mut s, b, 1_000, bash("held-1", "rm -rf build"));
    open_in(&mut s, A, 2_000, bash("a1", "ls"));
    s.focus = Focus::Tree;
    ch(&mut s, 'q');
    let fx = ch(&mut s, 'y');
    // Only the process-backed session's gate is answered (fail-closed); the held call is not.
    let got: Vec<(SessionId, String)> = answers(&fx).into_iter().map(|a| (a.0, a.1)).collect();
    assert_eq!(got, vec![(A, "a1".to_string())]);
    assert!(fx.contains(&Effect::Send(b, Command::Shutdown)));
    let web = &s.sessions[1].tree.nodes[0].transcript;
    assert!(web.items.iter().any(
        |i| matches!(&i.kind, ItemKind::Audit { text, .. } if text.starts_with("left pending"))
    ));
}

#[test]
fn a_paste_goes_into_the_open_dialog_never_the_hidden_prompt() {
    let (mut s, b, _) = ws();
    s.focus = Focus::Tree;
    ctrl(&mut s, 'n');
    // The choice list has no text field: the paste is dropped.
    update(&mut s, crate::Msg::Paste("rm -rf ~".into()));
    assert_eq!(s.prompt_text(), "");
    press(&mut s, KeyCode::Down);
    press(&mut s, KeyCode::Tab);
    update(&mut s, crate::Msg::Paste("claude-agent-acp\n--evil".into()));
    let Some(Overlay::NewSession(form)) = &s.overlay else {
        panic!("the dialog stays open")
    };
    assert_eq!(form.command, "claude-agent-acp", "one line only");
    assert_eq!(s.prompt_text(), "");
    press(&mut s, KeyCode::Esc);
    // The inbox's deny message takes a paste too.
    open_in(&mut s, b, 1_000, bash("b1", "curl x"));
    s.focus = Focus::Tree;
    ch(&mut s, 'I');
    ch(&mut s, ' ');
    ch(&mut s, 'n');
    update(&mut s, crate::Msg::Paste("use\nthe cache".into()));
    assert_eq!(s.inbox.deny_message.as_deref(), Some("use the cache"));
    assert_eq!(s.prompt_text(), "");
}

#[test]
fn a_closed_row_restarts_once() {
    let (mut s, _, _) = ws();
    s.sessions[0].profile = Some("api".into());
    s.focus = Focus::Tree;
    ch(&mut s, 'x');
    assert_eq!(ch(&mut s, 'X').len(), 1);
    assert!(ch(&mut s, 'X').is_empty(), "a second X starts nothing");
}

#[test]
fn a_folded_session_still_shows_the_node_you_are_on() {
    let (mut s, _, _) = ws();
    ev_in(
        &mut s,
        A,
        1_000,
        BackendEvent::NodeOpen {
            key: "t1".into(),
            parent: None,
            patch: Default::default(),
        },
    );
    s.sessions[0].collapsed = true;
    s.selected_node = 1;
    assert!(crate::update::tree_rows(&s).contains(&(0, 1)));
}
