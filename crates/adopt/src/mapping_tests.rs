use super::*;
use serde_json::json;

fn ev(v: Value) -> Event {
    let mut v = v;
    let o = v.as_object_mut().unwrap();
    o.entry("session_id").or_insert(json!("s1"));
    o.entry("cwd").or_insert(json!("/w/api"));
    o.entry("transcript_path")
        .or_insert(json!("/h/.claude/projects/-w-api/s1.jsonl"));
    super::super::event::parse(v.to_string().as_bytes()).unwrap()
}

fn bash(name: &str, cmd: &str) -> Event {
    ev(json!({"hook_event_name": name, "tool_name": "Bash", "tool_input": {"command": cmd}}))
}

fn closed(out: &Out) -> Vec<(String, String)> {
    out.events
        .iter()
        .filter_map(|e| match e {
            BackendEvent::GateClosed {
                id,
                decision: Decision::OwnTerminal { why },
            } => Some((id.clone(), why.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_permission_request_opens_a_numbered_card_and_a_decision_is_printed() {
    let mut m = Mapping::new(HookAgent::Claude, "s1", "/w/api");
    let out = m.on_event(&ev(
        json!({"hook_event_name": "SessionStart", "source": "startup"}),
    ));
    assert_eq!(
        out.tails,
        vec![(
            TailKey::Main,
            "/h/.claude/projects/-w-api/s1.jsonl".to_string()
        )]
    );
    let out = m.on_event(&bash("PermissionRequest", "touch a"));
    assert_eq!(out.card.as_deref(), Some("h-1"));
    assert!(out.tails.is_empty(), "followed once");
    let (reply, rows) = m
        .answer(
            "h-1",
            &Decision::Deny {
                message: "no".into(),
                interrupt: false,
            },
        )
        .unwrap();
    assert!(rows.is_empty());
    let HookReply::Decision(out) = reply else {
        panic!("{reply:?}")
    };
    assert!(out.contains(r#""behavior":"deny","message":"no""#), "{out}");
    assert!(
        m.answer("h-1", &Decision::Continue).is_none(),
        "answered once"
    );
    let out = m.on_event(&bash("PermissionRequest", "touch b"));
    assert_eq!(out.card.as_deref(), Some("h-2"));
}

#[test]
fn a_card_answered_in_claudes_own_dialog_leaves_when_the_cli_moves_on() {
    let mut m = Mapping::new(HookAgent::Claude, "s1", "/w/api");
    m.on_event(&bash("PermissionRequest", "touch a"));
    // A concurrent call of the same message finishing says nothing about this one.
    let other = m.on_event(&ev(json!({"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {"file_path": "/w/x"}})));
    assert!(closed(&other).is_empty());
    // Its own PostToolUse: allowed there.
    let out = m.on_event(&bash("PostToolUse", "touch a"));
    assert_eq!(
        closed(&out),
        vec![(
            "h-1".to_string(),
            format!("{ANSWERED_THERE} (allowed there: it ran)")
        )]
    );
    assert_eq!(out.released.len(), 1);
    // Denied there.
    m.on_event(&bash("PermissionRequest", "rm -rf /"));
    let out = m.on_event(&bash("PermissionDenied", "rm -rf /"));
    assert_eq!(
        closed(&out)[0].1,
        format!("{ANSWERED_THERE} (denied there)")
    );
    // The next call, the end of the turn, a new prompt: it moved on.
    for next in [
        bash("PreToolUse", "ls"),
        ev(json!({"hook_event_name": "Stop"})),
        ev(json!({"hook_event_name": "UserPromptSubmit", "prompt": "hi"})),
    ] {
        m.on_event(&bash("PermissionRequest", "touch c"));
        assert_eq!(closed(&m.on_event(&next)).len(), 1, "{:?}", next.name);
    }
    assert!(m.pending_ids().is_empty());
}

#[test]
fn a_sub_agents_card_is_on_its_node_and_only_its_own_moves_release_it() {
    let mut m = Mapping::new(HookAgent::Claude, "s1", "/w/api");
    let start = m.on_event(&ev(
        json!({"hook_event_name": "SubagentStart", "agent_id": "a9", "agent_type": "Explore"}),
    ));
    assert!(start.events.iter().any(|e| matches!(e,
        BackendEvent::NodeOpen { key, patch, .. } if key == "agent:a9" && patch.name.as_deref() == Some("Explore"))));
    assert!(start.tails.contains(&(
        TailKey::Agent("a9".into()),
        "/h/.claude/projects/-w-api/s1/subagents/agent-a9.jsonl".into()
    )));
    let mut ask = bash("PermissionRequest", "make");
    ask.agent_id = Some("a9".into());
    let out = m.on_event(&ask);
    let Some(BackendEvent::GateOpen(g)) = out
        .events
        .iter()
        .find(|e| matches!(e, BackendEvent::GateOpen(_)))
    else {
        panic!()
    };
    assert_eq!(g.node_key, "agent:a9");
    // The main agent moving on does not release the sub-agent's card.
    assert!(closed(&m.on_event(&bash("PreToolUse", "ls"))).is_empty());
    let mut stop = ev(json!({"hook_event_name": "SubagentStop"}));
    stop.agent_id = Some("a9".into());
    assert_eq!(closed(&m.on_event(&stop)).len(), 1);
}

#[test]
fn codex_cards_are_never_guessed_answered_and_gone_hooks_release_them() {
    let mut m = Mapping::new(HookAgent::Codex, "s1", "/w/api");
    m.on_event(&bash("PermissionRequest", "rm x"));
    // Codex draws nothing while its hook waits: nothing else can have answered it.
    assert!(closed(&m.on_event(&bash("PreToolUse", "ls"))).is_empty());
    let gone = m.hook_gone("h-1");
    assert!(matches!(&gone[0], BackendEvent::GateClosed { id, .. } if id == "h-1"));
    assert!(m.hook_gone("h-1").is_empty());
    // What Codex refuses is never printed: handed to its own terminal instead, said so.
    m.on_event(&bash("PermissionRequest", "rm y"));
    let (reply, rows) = m
        .answer(
            "h-2",
            &Decision::Allow {
                updated_input: Some(json!({"command": "rm z"})),
                always: false,
            },
        )
        .unwrap();
    assert!(matches!(reply, HookReply::Pass(ref why) if why.contains("Codex refuses")));
    assert_eq!(rows.len(), 1);
}

#[test]
fn the_session_ending_releases_everything_and_says_so() {
    let mut m = Mapping::new(HookAgent::Claude, "s1", "/w/api");
    m.on_event(&bash("PermissionRequest", "a"));
    let mut sub = bash("PermissionRequest", "b");
    sub.agent_id = Some("x".into());
    m.on_event(&sub);
    let out = m.on_event(&ev(
        json!({"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}),
    ));
    assert_eq!(closed(&out).len(), 2);
    assert!(m.ended());
    assert!(
        out.events
            .iter()
            .any(|e| matches!(e, BackendEvent::Exited { code: Some(0), .. }))
    );
}

#[test]
fn statuses_follow_the_events() {
    let mut m = Mapping::new(HookAgent::Claude, "s1", "/w/api");
    let turn = |out: Out| {
        out.events.into_iter().find_map(|e| match e {
            BackendEvent::Turn(t) => Some(t),
            _ => None,
        })
    };
    assert_eq!(
        turn(m.on_event(&ev(
            json!({"hook_event_name": "UserPromptSubmit", "prompt": "x"})
        ))),
        Some(TurnState::Running)
    );
    assert_eq!(
        turn(m.on_event(&ev(json!({"hook_event_name": "Stop"})))),
        Some(TurnState::Idle)
    );
    assert_eq!(
        turn(m.on_event(&ev(json!({"hook_event_name": "Notification", "notification_type": "idle_prompt", "message": "waiting"})))),
        Some(TurnState::AwaitingInput)
    );
    let unknown = m.on_event(&ev(
        json!({"hook_event_name": "TeammateIdle", "x": "\u{1b}[2J"}),
    ));
    assert!(
        matches!(&unknown.events[0], BackendEvent::Item { op: ItemOp::Push(ItemKind::Generic { raw, .. }), .. } if !raw.contains('\u{1b}'))
    );
}
