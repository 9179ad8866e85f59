//! The real ACP agents pinned in `tests/peers` — opencode, gemini-cli, codex-acp and
//! claude-agent-acp — end to end through the app, each against a local fake of its model API
//! (`fixtures/scenarios/agent_<agent>.json`): a shell command allowed and rejected, a file
//! write shown as a diff, a mode or option change, Ctrl-C on a card, and `q`. Every test ends
//! by quitting: the agent's processes are gone and the recording validates clean.
//!
//! Under `CI=true` a missing agent fails (`npm ci --prefix tests/peers`, which `tests/run.sh`
//! runs). Each test has its own fake server, scratch `HOME` and session directory, so they
//! run in parallel.

#[path = "support/agent_flows.rs"]
mod agent_flows;
#[path = "support/agent_live.rs"]
mod agent_live;
#[path = "support/agents.rs"]
mod agents;
#[path = "support/common.rs"]
mod common;
#[path = "support/fake_gemini.rs"]
mod fake_gemini;
#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/fake_openai.rs"]
mod fake_openai;
#[path = "support/fake_script.rs"]
mod fake_script;
#[path = "support/http_fake.rs"]
mod http_fake;

use agent_flows::{
    assert_rejected_row, config_option_change, ctrl_c_during_card, current_mode,
    file_write_with_diff, mode_change, mode_change_accepted, prompt_to_card, quit_clean,
    shell_allowed_and_rejected,
};
use agent_live::{Live, start, transcript_has};
use agents::{Kind, Opts};

const FRESH: &str = "fresh file\n";

async fn live(kind: Kind, tag: &str) -> Option<Live> {
    start(kind, tag, Opts::default()).await
}

/// Allow then reject a shell command; quit. The rejected row's label is checked last: it
/// needs the mapper to mark a rejected call (`· rejected`).
async fn shell(kind: Kind) {
    let Some(mut l) = live(kind, "shell").await else {
        return;
    };
    let rejected = shell_allowed_and_rejected(&mut l).await;
    quit_clean(&mut l).await;
    assert_rejected_row(&l, &rejected);
}

async fn ctrl_c(kind: Kind) {
    let Some(mut l) = live(kind, "ctrl_c").await else {
        return;
    };
    ctrl_c_during_card(&mut l).await;
    quit_clean(&mut l).await;
}

// ---- opencode --------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_shell_allowed_and_rejected() {
    shell(Kind::Opencode).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_file_write_shows_its_diff_and_lands() {
    let Some(mut l) = live(Kind::Opencode, "write").await else {
        return;
    };
    file_write_with_diff(&mut l, "WRITE_NEW please", "new.txt", FRESH, None).await;
    // opencode writes through the client's fs, covered by the card's approval.
    assert_eq!(l.requests("in", "fs/write_text_file").len(), 1);
    quit_clean(&mut l).await;
}

/// opencode declares its mode, model and effort as config options (no legacy modes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_mode_and_config_option_change() {
    let Some(mut l) = live(Kind::Opencode, "options").await else {
        return;
    };
    let req = mode_change_accepted(&mut l, "plan").await;
    assert_eq!(req["method"], "session/set_config_option");
    assert_eq!(req["params"]["configId"], "mode");
    config_option_change(&mut l, "effort", "max").await;
    quit_clean(&mut l).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_ctrl_c_during_a_card_cancels_the_turn() {
    ctrl_c(Kind::Opencode).await;
}

// ---- gemini-cli ------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_shell_allowed_and_rejected() {
    shell(Kind::Gemini).await;
}

/// gemini-cli cannot create a file through the client's `fs` (it reads first and gives up on
/// not-found): without `fs` it writes the new file itself after asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_new_file_without_client_fs_shows_its_diff_and_lands() {
    let opts = Opts { withhold_fs: true };
    let Some(mut l) = start(Kind::Gemini, "write_new", opts).await else {
        return;
    };
    let init = l.requests("out", "initialize").remove(0);
    let fs = &init["params"]["clientCapabilities"]["fs"];
    assert!(
        fs["readTextFile"] != true && fs["writeTextFile"] != true,
        "fs withheld: {init}"
    );
    file_write_with_diff(&mut l, "WRITE_NEW please", "new.txt", FRESH, None).await;
    assert!(l.requests("in", "fs/write_text_file").is_empty());
    quit_clean(&mut l).await;
}

/// Overwriting an existing file goes through the client's `fs`: one card, with the diff.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_overwrite_through_client_fs_shows_its_diff_and_lands() {
    let Some(mut l) = live(Kind::Gemini, "overwrite").await else {
        return;
    };
    std::fs::write(l.cwd.join("notes.txt"), "hello\n").unwrap();
    file_write_with_diff(
        &mut l,
        "OVERWRITE_NOTES please",
        "notes.txt",
        "goodbye\n",
        Some("hello\n"),
    )
    .await;
    assert_eq!(
        l.requests("in", "fs/write_text_file").len(),
        1,
        "written through fs"
    );
    quit_clean(&mut l).await;
}

/// `m` offers gemini-cli's four modes; `plan` is taken; `yolo` is refused in an untrusted
/// folder and the refusal's reason is on screen. The screen check needs the error's own
/// message shown (it is in the error's `data.details`, the message is "Internal error").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_mode_change_and_a_refused_mode_shows_why() {
    let Some(mut l) = live(Kind::Gemini, "modes").await else {
        return;
    };
    let req = mode_change_accepted(&mut l, "plan").await;
    assert_eq!(req["method"], "session/set_mode");
    let (req, ans) = mode_change(&mut l, "yolo").await;
    assert_eq!(req["method"], "session/set_mode");
    assert!(ans.get("error").is_some(), "yolo is refused here: {ans}");
    assert_eq!(
        current_mode(l.h.state()).as_deref(),
        Some("plan"),
        "the mode stays"
    );
    let why = "Cannot enable privileged approval modes in an untrusted folder";
    l.wait("the refusal's reason", move |s| transcript_has(s, why))
        .await;
    let screen = l.h.screen();
    assert!(screen.contains(why), "the reason is on screen:\n{screen}");
    quit_clean(&mut l).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_ctrl_c_during_a_card_cancels_the_turn() {
    ctrl_c(Kind::Gemini).await;
}

// ---- codex-acp -------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_shell_allowed_and_rejected() {
    shell(Kind::Codex).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_apply_patch_shows_its_diff_and_lands() {
    let Some(mut l) = live(Kind::Codex, "write").await else {
        return;
    };
    file_write_with_diff(&mut l, "WRITE_NEW please", "new.txt", FRESH, None).await;
    // codex applies the patch itself.
    assert!(l.requests("in", "fs/write_text_file").is_empty());
    quit_clean(&mut l).await;
}

/// codex-acp declares both legacy modes and config options; `m` uses the mode option.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_mode_and_config_option_change() {
    let Some(mut l) = live(Kind::Codex, "options").await else {
        return;
    };
    let req = mode_change_accepted(&mut l, "auto").await;
    assert_eq!(req["method"], "session/set_config_option");
    assert_eq!(req["params"]["configId"], "mode");
    config_option_change(&mut l, "model", "gpt-5.4").await;
    quit_clean(&mut l).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_ctrl_c_during_a_card_cancels_the_turn() {
    ctrl_c(Kind::Codex).await;
}

/// `q` with a card open asks first; `y` answers the card (it never allows) and stops
/// codex-acp, which does not exit when its stdin closes: it must be signalled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_quit_with_a_card_open_asks_answers_it_and_stops_the_agent() {
    let Some(mut l) = live(Kind::Codex, "quit").await else {
        return;
    };
    let req = prompt_to_card(&mut l, "SHELL_ALLOW please").await;
    quit_clean(&mut l).await;
    let ans = l.answer_to("out", &req["id"]);
    let chosen = &ans["result"]["outcome"]["optionId"];
    let allowed = req["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["optionId"] == *chosen && o["kind"].as_str().unwrap().starts_with("allow"));
    assert!(
        !ans.is_null() && !allowed,
        "the open card was answered, not allowed: {ans}"
    );
    assert!(!l.cwd.join("allowed.txt").exists());
}

// ---- claude-agent-acp ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_shell_allowed_and_rejected() {
    shell(Kind::Claude).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_file_write_shows_its_diff_and_lands() {
    let Some(mut l) = live(Kind::Claude, "write").await else {
        return;
    };
    file_write_with_diff(&mut l, "WRITE_NEW please", "new.txt", FRESH, None).await;
    // The CLI writes the file itself.
    assert!(l.requests("in", "fs/write_text_file").is_empty());
    quit_clean(&mut l).await;
}

/// claude-agent-acp 0.23.1 declares legacy modes and a `mode` config option; `m` offers the
/// option's values and sets it through `session/set_config_option`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_mode_change() {
    let Some(mut l) = live(Kind::Claude, "modes").await else {
        return;
    };
    let req = mode_change_accepted(&mut l, "acceptEdits").await;
    assert_eq!(req["method"], "session/set_config_option");
    assert_eq!(req["params"]["configId"], "mode");
    quit_clean(&mut l).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_ctrl_c_during_a_card_cancels_the_turn() {
    ctrl_c(Kind::Claude).await;
}
