//! What a user does with any of the four real agents (`agents.rs`), driven through the
//! `Headless` app (`agent_live.rs`) as keys and screen: a shell command allowed and rejected,
//! a file written after its diff was shown, a mode or option changed, Ctrl-C on a card, `q`.
//! Each flow asserts what the user and the agent saw (the card, the files, the recording).
#![allow(dead_code)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchboard::core::input::KeyCode;

use switchboard::core::state::{Overlay, Pick, State};

use super::agent_live::{Live, WAIT, diff_lines, family, turn_results, turns_done};

/// Send `prompt` and wait for its permission card; returns the agent's request.
pub async fn prompt_to_card(l: &mut Live, prompt: &str) -> Value {
    let before = l.requests("in", "session/request_permission").len();
    l.send(prompt);
    l.wait("the permission card", |s| s.active().is_some())
        .await;
    let reqs = l.requests("in", "session/request_permission");
    assert_eq!(reqs.len(), before + 1, "one new permission request");
    reqs[before].clone()
}

/// The kind (`allow_once`, `reject_once`…) of the option our answer to `req` selected.
fn answered_kind(l: &Live, req: &Value) -> Value {
    let ans = l.answer_to("out", &req["id"]);
    let chosen = &ans["result"]["outcome"]["optionId"];
    req["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["optionId"] == *chosen)
        .map(|o| o["kind"].clone())
        .unwrap_or_else(|| panic!("our answer {ans} selects none of the offered options"))
}

/// `y` on a shell card runs the command, `n` on the next does not. Returns the rejected tool
/// call's id (its row should read rejected: `assert_rejected_row`).
pub async fn shell_allowed_and_rejected(l: &mut Live) -> String {
    let done = turn_results(l.h.state()).len();
    let req = prompt_to_card(l, "SHELL_ALLOW please").await;
    let card = l.card();
    assert!(
        card.options.iter().any(|o| o.kind == "allow_once"),
        "{card:?}"
    );
    assert!(
        card.options.iter().any(|o| o.kind == "reject_once"),
        "{card:?}"
    );
    let screen = l.h.screen();
    assert!(
        screen.contains("touch allowed.txt"),
        "the card shows the command:\n{screen}"
    );
    l.h.key(KeyCode::Char('y'));
    l.wait("the allowed turn", turns_done(done + 1)).await;
    assert!(
        l.cwd.join("allowed.txt").exists(),
        "the allowed command ran"
    );
    assert_eq!(answered_kind(l, &req), json!("allow_once"));

    let req = prompt_to_card(l, "SHELL_REJECT please").await;
    let screen = l.h.screen();
    assert!(
        screen.contains("touch rejected.txt"),
        "the card shows the command:\n{screen}"
    );
    l.h.key(KeyCode::Char('n'));
    l.wait("the rejected turn", turns_done(done + 2)).await;
    assert!(
        !l.cwd.join("rejected.txt").exists(),
        "the rejected command did not run"
    );
    assert_eq!(answered_kind(l, &req), json!("reject_once"));
    req["params"]["toolCall"]["toolCallId"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The row of rejected tool call `id` says so: not `pending`, where gemini-cli and codex-acp
/// leave it (no final update after a rejection), nor `failed`, which opencode and
/// claude-agent-acp send.
#[track_caller]
pub fn assert_rejected_row(l: &Live, id: &str) {
    let (name, _) = l
        .tool_row(id)
        .unwrap_or_else(|| panic!("no row for tool call {id}"));
    assert!(
        name.ends_with("· rejected"),
        "the rejected tool's row reads {name:?}"
    );
}

/// `prompt` makes the agent write `rel` with `content` (over `old`, if given): the card (or
/// the tool row it belongs to) shows the diff, `y` writes it.
pub async fn file_write_with_diff(
    l: &mut Live,
    prompt: &str,
    rel: &str,
    content: &str,
    old: Option<&str>,
) {
    let done = turn_results(l.h.state()).len();
    let req = prompt_to_card(l, prompt).await;
    let card = l.card();
    let id = req["params"]["toolCall"]["toolCallId"]
        .as_str()
        .unwrap_or("");
    let lines = match &card.diff {
        Some(d) => diff_lines(d),
        None => l.tool_row(id).map(|(_, d)| d).unwrap_or_default(),
    };
    for line in content.lines() {
        assert!(
            lines.contains(&format!("+{line}")),
            "the diff adds {line:?}: {lines:?}"
        );
    }
    for line in old.unwrap_or("").lines() {
        assert!(
            lines.contains(&format!("-{line}")),
            "the diff removes {line:?}: {lines:?}"
        );
    }
    let screen = l.h.screen();
    let first = content.lines().next().unwrap();
    assert!(
        screen.contains(first),
        "the card shows the new content:\n{screen}"
    );
    l.h.key(KeyCode::Char('y'));
    l.wait("the write's turn", turns_done(done + 1)).await;
    let cards = l.requests("in", "session/request_permission");
    assert_eq!(
        cards.last(),
        Some(&req),
        "one card for the write, not a second"
    );
    let got = std::fs::read_to_string(l.cwd.join(rel)).unwrap_or_default();
    assert_eq!(got, content, "{rel} holds the approved content");
    assert_eq!(answered_kind(l, &req), json!("allow_once"));
}

/// The values the agent declared for its mode: its `mode` config option, else its modes.
pub fn declared_modes(l: &Live) -> Vec<String> {
    let new = l.session_new();
    let opt = new["configOptions"]
        .as_array()
        .and_then(|os| os.iter().find(|o| o["category"] == "mode"))
        .map(|o| o["options"].clone());
    let list = opt.unwrap_or_else(|| new["modes"]["availableModes"].clone());
    list.as_array()
        .expect("the agent declared modes")
        .iter()
        .map(|m| {
            m["value"]
                .as_str()
                .or(m["id"].as_str())
                .unwrap()
                .to_string()
        })
        .collect()
}

/// Move an open picker or options overlay's cursor to `to`.
fn cursor_to(l: &mut Live, to: usize) {
    loop {
        let at = match l.h.state().overlay {
            Some(Overlay::Picker { cursor, .. }) | Some(Overlay::Options { cursor }) => cursor,
            ref o => panic!("no picker is open: {o:?}"),
        };
        match at.cmp(&to) {
            std::cmp::Ordering::Less => l.h.key(KeyCode::Down),
            std::cmp::Ordering::Greater => l.h.key(KeyCode::Up),
            std::cmp::Ordering::Equal => return,
        }
    }
}

/// Choose `value` in the open picker and send it; returns the request that went out
/// (`session/set_mode` or `session/set_config_option`) once the agent answered it.
async fn pick(l: &mut Live, pick: &Pick, value: &str) -> Value {
    let choices = l.h.state().pick_choices(pick);
    let i = choices
        .iter()
        .position(|(v, _)| v == value)
        .unwrap_or_else(|| panic!("{value} is not offered: {choices:?}"));
    cursor_to(l, i);
    let sent = |l: &Live| {
        l.recorded("out").into_iter().find(|v| {
            (v["method"] == "session/set_mode" && v["params"]["modeId"] == value)
                || (v["method"] == "session/set_config_option" && v["params"]["value"] == value)
        })
    };
    assert!(sent(l).is_none(), "{value} was not asked for yet");
    l.h.key(KeyCode::Enter);
    let deadline = Instant::now() + WAIT;
    loop {
        l.h.app.drain_backend(usize::MAX);
        if let Some(req) = sent(l)
            && !l.answer_to("in", &req["id"]).is_null()
        {
            return req;
        }
        assert!(
            Instant::now() < deadline,
            "no answer to the change to {value}:\n{}",
            l.h.screen()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `s` lists the agent's session options (by name) and its modes (by id); Esc closes it.
pub fn status_lists_declared(l: &mut Live) {
    l.unfocus_prompt();
    l.h.key(KeyCode::Char('s'));
    assert_eq!(l.h.state().overlay, Some(Overlay::Status));
    let screen = l.h.screen();
    let caps = l.h.state().session.capabilities.clone();
    assert!(
        !caps.options.is_empty() || !caps.modes.is_empty(),
        "the agent declared options or modes"
    );
    for name in caps.options.iter().map(|o| &o.name).chain(&caps.modes) {
        assert!(
            screen.contains(name.as_str()),
            "the status view lists {name}:\n{screen}"
        );
    }
    l.h.key(KeyCode::Esc);
    assert_eq!(l.h.state().overlay, None);
}

/// `m` offers exactly the agent's declared modes; choosing `target` sends the change. Returns
/// the request and the agent's answer.
pub async fn mode_change(l: &mut Live, target: &str) -> (Value, Value) {
    let declared = declared_modes(l);
    status_lists_declared(l);
    l.h.key(KeyCode::Char('m'));
    assert!(
        matches!(
            l.h.state().overlay,
            Some(Overlay::Picker {
                pick: Pick::Mode,
                ..
            })
        ),
        "m opens the mode picker:\n{}",
        l.h.screen()
    );
    let offered: Vec<String> =
        l.h.state()
            .pick_choices(&Pick::Mode)
            .into_iter()
            .map(|(v, _)| v)
            .collect();
    assert_eq!(offered, declared, "m offers only the agent's own modes");
    let req = pick(l, &Pick::Mode, target).await;
    let ans = l.answer_to("in", &req["id"]);
    (req, ans)
}

/// The mode the app shows now: the `mode` option's value, else the legacy mode.
pub fn current_mode(s: &State) -> Option<String> {
    match s.option_of("mode") {
        Some(o) => Some(o.current.clone()),
        None => s.session.permission_mode.clone(),
    }
}

/// A mode change the agent accepts: the answer is a result and the app shows the new mode.
/// Returns the request that went out.
pub async fn mode_change_accepted(l: &mut Live, target: &str) -> Value {
    let (req, ans) = mode_change(l, target).await;
    assert!(ans.get("error").is_none(), "{req} was refused: {ans}");
    let t = target.to_string();
    l.wait("the new mode", move |s| {
        current_mode(s).as_deref() == Some(t.as_str())
    })
    .await;
    req
}

/// `s` lists the agent's session options; `O`, the option `id`, `value`, Enter sends
/// `session/set_config_option` and the agent's answer updates the value shown.
pub async fn config_option_change(l: &mut Live, id: &str, value: &str) {
    let options = l.h.state().session.capabilities.options.clone();
    assert!(!options.is_empty(), "session/new declared config options");
    status_lists_declared(l);
    l.h.key(KeyCode::Char('O'));
    let rows = l.h.state().option_rows();
    let row = rows
        .iter()
        .position(|(_, _, p)| *p == Pick::Option(id.into()))
        .unwrap_or_else(|| panic!("O lists no option {id}: {rows:?}"));
    cursor_to(l, row);
    l.h.key(KeyCode::Enter);
    let p = Pick::Option(id.into());
    assert!(matches!(&l.h.state().overlay, Some(Overlay::Picker { pick, .. }) if *pick == p));
    let req = pick(l, &p, value).await;
    assert_eq!(req["method"], "session/set_config_option");
    assert_eq!(req["params"]["configId"], id);
    let ans = l.answer_to("in", &req["id"]);
    assert!(ans.get("error").is_none(), "{req} was refused: {ans}");
    let (id, value) = (id.to_string(), value.to_string());
    l.wait("the option's new value", move |s| {
        s.session
            .capabilities
            .options
            .iter()
            .any(|o| o.id == id && o.current == value)
    })
    .await;
}

/// Ctrl-C while a card waits: the card closes, the agent's request is answered `cancelled`,
/// `session/cancel` goes out and the turn ends cancelled; the command never ran.
pub async fn ctrl_c_during_card(l: &mut Live) {
    let done = turn_results(l.h.state()).len();
    let req = prompt_to_card(l, "CANCEL_ME please").await;
    l.h.ctrl('c');
    l.wait("the cancelled turn", turns_done(done + 1)).await;
    assert!(l.h.state().gates.is_empty(), "the card closed");
    assert!(
        !l.requests("out", "session/cancel").is_empty(),
        "session/cancel went out"
    );
    assert_eq!(
        l.answer_to("out", &req["id"])["result"],
        json!({"outcome": {"outcome": "cancelled"}})
    );
    let last = turn_results(l.h.state()).pop().unwrap();
    assert_eq!(last.1, "cancelled", "the turn ended cancelled");
    assert!(
        !l.cwd.join("cancelled.txt").exists(),
        "the cancelled command did not run"
    );
}

/// `q` (confirmed if the app asks) ends the session: the agent and every process it started
/// are gone, the recording validates clean and the fake model saw nothing unexpected.
pub async fn quit_clean(l: &mut Live) {
    let pid = l.h.state().session.pid.expect("the agent's pid");
    let before = family(pid);
    assert!(before.contains(&pid), "the agent runs before quitting");
    let pending = l.h.state().pending_total();
    l.unfocus_prompt();
    l.h.key(KeyCode::Char('q'));
    if pending > 0 {
        assert_eq!(
            l.h.state().overlay,
            Some(Overlay::ConfirmQuit),
            "q asks first"
        );
        l.h.key(KeyCode::Char('y'));
    }
    assert!(l.h.state().quitting, "q quits");
    l.h.app.finish().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    let left = loop {
        let left: Vec<u32> = before
            .iter()
            .copied()
            .filter(|p| family(*p).contains(p))
            .collect();
        if left.is_empty() || Instant::now() > deadline {
            break left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        left.is_empty(),
        "processes of the agent outlived quitting: {left:?}"
    );
    assert!(
        l.h.state().session.exited.is_some(),
        "the app saw the agent exit"
    );
    let (_, report) = switchboard::replay::validate::validate_path(&l.record, None)
        .unwrap_or_else(|e| panic!("the recording cannot be read: {e}"));
    assert!(
        report.problems() == 0 && !report.unreadable,
        "the recording {} validates clean: {:#?}",
        l.record.display(),
        report.findings
    );
    l.model.assert_no_unexpected();
}
