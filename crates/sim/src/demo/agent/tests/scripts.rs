//! The `web` and `docs` scripts (`--demo-script`): allow, deny, deny-and-stop, interrupts, end of
//! input, hooks, every frame checked against the bundled schema, and the demo workspace.

use super::*;
use crate::demo::agent::docs::{
    CHANGELOG_FILE, CHANGELOG_OLD, CHANGELOG_PATH, DOCS_Q, DOCS_TEST_PASS, README_FILE, README_OLD,
    README_PATH, changelog_entry,
};
use crate::demo::agent::parallel::line_of;
use crate::demo::agent::web::{CSS_FILE, CSS_OLD};
use crate::demo::agent::web::{CSS_PATH, NPM_TEST, WEB_Q, WEB_TEST_FAIL, WEB_TEST_PASS};
use crate::demo::demo_workspace;
use switchboard_claude::schema::{validate_claude, validate_claude_outbound_line};

const SCRIPTS: [&str; 2] = ["web", "docs"];

fn start(script: &str) -> Host {
    let mut args: Vec<&str> = ARGS.to_vec();
    args.extend(["--demo-script", script]);
    let mut h = Host::start(&args, &[]);
    send(&h, init_req(json!({}), json!([])));
    h.next();
    h
}

/// Sends a line we would write to the agent's stdin, after checking it against the schema.
fn send(h: &Host, v: Value) {
    if let Err(e) = validate_claude_outbound_line(&v.to_string()) {
        panic!("host line outside the schema: {e}\n{v}");
    }
    h.send(v);
}

/// Every gate the agent sent and every one it withdrew matches the bundled schema. (The schema
/// covers the control channel as the host sees it: the agent's replies to the host's own
/// requests, `initialize` and `interrupt`, are the CLI's business and not in it.)
fn schema_checks(lines: &[Value]) {
    let mut control = 0;
    for l in lines {
        if matches!(
            l["type"].as_str(),
            Some("control_request" | "control_cancel_request")
        ) {
            control += 1;
            if let Err(e) = validate_claude("Message", l) {
                panic!("agent frame outside the schema: {e}\n{l}");
            }
        }
        if l["request"]["tool_name"] == "AskUserQuestion"
            && let Err(e) = validate_claude("AskUserQuestionInput", &l["request"]["input"])
        {
            panic!("question outside the schema: {e}\n{l}");
        }
    }
    assert!(control > 0, "no control frames to check");
}

/// The next `n` gates (control requests), with nothing answered in between.
fn gates(h: &mut Host, n: usize) -> Vec<Value> {
    (0..n)
        .map(|_| h.until(|l| l["type"] == "control_request"))
        .collect()
}

fn id_of(gate: &Value) -> String {
    gate["request_id"].as_str().unwrap().to_string()
}

/// The three gates each script opens at once: the tests, the question, the helper's Edit.
fn opening(h: &mut Host) -> (Value, Value, Value) {
    let open = gates(h, 3);
    let find = |tool: &str| {
        open.iter()
            .find(|g| g["request"]["tool_name"] == tool)
            .unwrap_or_else(|| panic!("no {tool} gate among {open:?}"))
            .clone()
    };
    let (bash, ask, edit) = (find("Bash"), find("AskUserQuestion"), find("Edit"));
    assert_eq!(
        bash["request"]["input"],
        json!({"command": NPM_TEST, "description": "Run the test suite"})
    );
    assert!(bash["request"]["agent_id"].is_null());
    assert_eq!(ask["request"]["requires_user_interaction"], true);
    assert!(
        edit["request"]["agent_id"].is_string(),
        "the helper's own gate"
    );
    assert!(edit["request"]["input"]["old_string"].is_string());
    assert!(edit["request"]["input"]["new_string"].is_string());
    (bash, ask, edit)
}

fn allow(gate: &Value) -> Value {
    ok(
        &id_of(gate),
        json!({"behavior": "allow", "updatedInput": gate["request"]["input"]}),
    )
}

fn deny(gate: &Value, message: &str, interrupt: bool) -> Value {
    let mut body = json!({"behavior": "deny", "message": message});
    if interrupt {
        body["interrupt"] = json!(true);
    }
    ok(&id_of(gate), body)
}

fn answer(gate: &Value, question: &str, choice: &str) -> Value {
    let qs = gate["request"]["input"]["questions"].clone();
    ok(
        &id_of(gate),
        json!({"behavior": "allow", "updatedInput": {"questions": qs, "answers": {question: choice}}}),
    )
}

fn count_tool_uses(lines: &[Value], name: &str) -> usize {
    lines
        .iter()
        .filter(|l| l["type"] == "assistant")
        .flat_map(|l| {
            l["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|b| b["type"] == "tool_use" && b["name"] == name)
        .count()
}

fn finished_checks(lines: &[Value]) {
    common_checks(lines);
    schema_checks(lines);
    let started: Vec<&Value> = lines
        .iter()
        .filter(|l| l["subtype"] == "task_started")
        .collect();
    assert_eq!(started.len(), 1, "one helper sub-agent");
    assert!(lines.iter().any(|l| l["subtype"] == "task_notification"
        && l["task_id"] == started[0]["task_id"]
        && l["status"] == "completed"));
}

#[test]
fn web_allow_path_reruns_tests_under_the_added_rule() {
    let mut h = start("web");
    send(&h, user("The Button snapshot test fails; fix it."));
    let (bash, ask, edit) = opening(&mut h);
    assert_eq!(edit["request"]["input"]["file_path"], CSS_PATH);
    assert_eq!(
        ask["request"]["input"]["questions"][0]["multiSelect"],
        false
    );
    // Answered in the reverse order they came in.
    send(&h, allow(&edit));
    send(&h, answer(&ask, WEB_Q, "Regenerate it"));
    let rule = json!([{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": NPM_TEST}], "behavior": "allow", "destination": "session"}]);
    send(
        &h,
        ok(
            &id_of(&bash),
            json!({"behavior": "allow", "updatedInput": bash["request"]["input"], "updatedPermissions": rule}),
        ),
    );
    let v = h.until(|l| is_result(l) || l["type"] == "control_request");
    assert!(is_result(&v), "the rerun must be allowed by the rule: {v}");
    assert_eq!(v["subtype"], "success");
    let (code, lines) = h.close();
    assert_eq!(code, 0);
    finished_checks(&lines);
    assert_eq!(count_tool_uses(&lines, "Bash"), 2);
    let trs = tool_results(&lines);
    assert!(trs.iter().any(|b| b["content"] == WEB_TEST_FAIL));
    assert!(trs.iter().any(|b| b["content"] == WEB_TEST_PASS));
    let edit_result = lines
        .iter()
        .find(|l| l["tool_use_result"]["filePath"].is_string())
        .unwrap();
    assert!(
        edit_result["tool_use_result"]["structuredPatch"][0]["lines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().starts_with('+'))
    );
    let all = texts(&lines);
    assert!(all.contains("Dark theme: Regenerate it"), "{all}");
    assert!(
        all.contains("approved automatically (an allow rule you added earlier)"),
        "{all}"
    );
    assert!(all.contains("The snapshot passes again"), "{all}");
    assert!(all.contains("Here is everything you decided"), "{all}");
}

#[test]
fn docs_allow_path_writes_the_chosen_changelog() {
    let mut h = start("docs");
    send(&h, user("Update the changelog and README for 2.4.0."));
    let (bash, ask, edit) = opening(&mut h);
    assert_eq!(edit["request"]["input"]["file_path"], README_PATH);
    assert_eq!(ask["request"]["input"]["questions"][0]["multiSelect"], true);
    send(&h, answer(&ask, DOCS_Q, "Theme tokens, Dropped IE 11"));
    send(&h, allow(&bash));
    send(&h, allow(&edit));
    // Then the changelog, with what was chosen; allowed with the human's own wording.
    let log = h.until(|l| l["type"] == "control_request");
    let input = &log["request"]["input"];
    assert_eq!(input["file_path"], CHANGELOG_PATH);
    assert!(log["request"]["agent_id"].is_null());
    let new = input["new_string"].as_str().unwrap();
    assert!(
        new.contains("Theme tokens") && new.contains("Dropped IE 11"),
        "{new}"
    );
    assert!(!new.contains("Button sizes"), "{new}");
    let mut mine = input.clone();
    mine["new_string"] = json!("# Changelog\n\n## 2.4.0\n\n- Renamed theme tokens\n");
    send(
        &h,
        ok(
            &id_of(&log),
            json!({"behavior": "allow", "updatedInput": mine}),
        ),
    );
    let result = h.until(is_result);
    assert_eq!(result["subtype"], "success");
    let (code, lines) = h.close();
    assert_eq!(code, 0);
    finished_checks(&lines);
    let trs = tool_results(&lines);
    assert!(trs.iter().any(|b| b["content"] == DOCS_TEST_PASS));
    assert!(lines.iter().any(|l| l["tool_use_result"]["newString"]
        == "# Changelog\n\n## 2.4.0\n\n- Renamed theme tokens\n"
        && l["tool_use_result"]["userModified"] == true));
    let all = texts(&lines);
    assert!(
        all.contains("Changelog: Theme tokens, Dropped IE 11"),
        "{all}"
    );
    assert!(
        all.contains("You changed the input before allowing it"),
        "{all}"
    );
}

#[test]
fn every_gate_denied_finishes_the_turn() {
    for script in SCRIPTS {
        let mut h = start(script);
        send(&h, user("go"));
        let mut denied = 0;
        loop {
            let v = h.next();
            if is_result(&v) {
                assert_eq!(v["subtype"], "success", "{script}");
                break;
            }
            if v["type"] == "control_request" {
                denied += 1;
                let message = format!("not now {denied}");
                send(&h, deny(&v, &message, false));
            }
        }
        let (code, lines) = h.close();
        assert_eq!(code, 0);
        finished_checks(&lines);
        // web: no rerun without the fix; docs: the changelog is still asked for.
        assert_eq!(denied, if script == "web" { 3 } else { 4 }, "{script}");
        let all = texts(&lines);
        assert!(all.contains("You denied it: not now"), "{script}: {all}");
        assert!(
            all.contains("You declined to answer: not now"),
            "{script}: {all}"
        );
        assert!(all.contains("as it was"), "{script}: {all}");
        let result = lines.iter().find(|l| is_result(l)).unwrap();
        assert_eq!(
            result["permission_denials"].as_array().unwrap().len(),
            denied,
            "{script}"
        );
        assert_eq!(count_tool_uses(&lines, "Bash"), 1, "{script}");
    }
}

#[test]
fn deny_and_stop_withdraws_the_other_gates() {
    for (script, stop_on) in [("web", "Edit"), ("docs", "Bash")] {
        let mut h = start(script);
        send(&h, user("go"));
        let (bash, ask, edit) = opening(&mut h);
        let (stopped, others) = if stop_on == "Edit" {
            (edit, [bash, ask])
        } else {
            (bash, [ask, edit])
        };
        send(&h, deny(&stopped, "stop right there", true));
        let cancels: Vec<Value> = (0..2)
            .map(|_| h.until(|l| l["type"] == "control_cancel_request"))
            .collect();
        for other in &others {
            assert!(
                cancels
                    .iter()
                    .any(|c| c["request_id"] == other["request_id"]),
                "{script}: {other} not withdrawn"
            );
        }
        let result = h.until(is_result);
        assert_eq!(result["terminal_reason"], "aborted_tools", "{script}");
        assert!(
            result["errors"][0]
                .as_str()
                .unwrap()
                .contains("stop right there")
        );
        h.until(|l| l["state"] == "idle");
        // A late answer to a withdrawn gate is ignored.
        send(&h, allow(&others[0]));
        assert!(h.quiet());
        let (code, lines) = h.close();
        assert_eq!(code, 0);
        common_checks(&lines);
        schema_checks(&lines);
        assert!(
            lines
                .iter()
                .any(|l| l["subtype"] == "task_notification" && l["status"] == "stopped"),
            "{script}: the helper is stopped"
        );
    }
}

#[test]
fn interrupt_mid_turn_cancels_gates_and_next_turn_echoes() {
    for script in SCRIPTS {
        let mut h = start(script);
        send(&h, user("go"));
        let open = gates(&mut h, 3);
        send(
            &h,
            json!({"type": "control_request", "request_id": "sb-int-1", "request": {"subtype": "interrupt"}}),
        );
        let r = h.until(|l| l["type"] == "control_response");
        assert_eq!(r["response"]["request_id"], "sb-int-1");
        for _ in 0..3 {
            let c = h.until(|l| l["type"] == "control_cancel_request");
            assert!(open.iter().any(|g| g["request_id"] == c["request_id"]));
        }
        let result = h.until(is_result);
        assert_eq!(result["terminal_reason"], "aborted_tools", "{script}");
        h.until(|l| l["state"] == "idle");
        send(&h, user("hello again"));
        let result = h.until(is_result);
        assert_eq!(result["subtype"], "success");
        let (code, lines) = h.close();
        assert_eq!(code, 0);
        common_checks(&lines);
        schema_checks(&lines);
        assert!(texts(&lines).contains("You said: hello again"), "{script}");
    }
}

#[test]
fn interrupt_while_streaming_aborts_before_any_gate() {
    for script in SCRIPTS {
        let mut args: Vec<&str> = ARGS.to_vec();
        args.extend(["--demo-script", script]);
        let preload = [
            init_req(json!({}), json!([])),
            user("hello"),
            json!({"type": "control_request", "request_id": "sb-int-9", "request": {"subtype": "interrupt"}}),
        ];
        let mut h = Host::start(&args, &preload);
        let result = h.until(is_result);
        assert_eq!(result["terminal_reason"], "aborted_streaming", "{script}");
        let (code, lines) = h.close();
        assert_eq!(code, 0);
        assert!(
            lines
                .iter()
                .any(|l| l["type"] == "assistant" && l["aborted"] == true)
        );
        assert!(!lines.iter().any(|l| l["type"] == "control_request"));
    }
}

#[test]
fn stdin_closed_mid_gate_exits_quietly() {
    for script in SCRIPTS {
        let mut h = start(script);
        send(&h, user("go"));
        gates(&mut h, 2);
        let (code, lines) = h.close();
        assert_eq!(code, 0, "{script}");
        assert!(!lines.iter().any(is_result), "{script}");
        schema_checks(&lines);
    }
}

#[test]
fn hooks_that_block_everything_still_close_every_tool() {
    for script in SCRIPTS {
        let mut args: Vec<&str> = ARGS.to_vec();
        args.extend(["--demo-script", script]);
        let mut h = Host::start(&args, &[]);
        send(
            &h,
            init_req(
                json!({"PreToolUse": [{"matcher": "*", "hookCallbackIds": ["sb-hook-all"]}]}),
                json!([]),
            ),
        );
        h.next();
        send(&h, user("go"));
        loop {
            let v = h.next();
            if is_result(&v) {
                assert_eq!(v["subtype"], "success");
                break;
            }
            if v["type"] == "control_request" {
                assert_eq!(v["request"]["subtype"], "hook_callback", "{script}: {v}");
                send(
                    &h,
                    ok(
                        &id_of(&v),
                        json!({"decision": "block", "reason": "read-only day"}),
                    ),
                );
            }
        }
        let (_, lines) = h.close();
        common_checks(&lines);
        schema_checks(&lines);
        assert!(!lines.iter().any(|l| l["subtype"] == "task_started"));
        assert!(texts(&lines).contains("read-only day"), "{script}");
    }
}

#[test]
fn bypass_mode_leaves_only_the_question() {
    for (script, question, choice) in [("web", WEB_Q, "Leave it"), ("docs", DOCS_Q, "Button sizes")]
    {
        let args = [
            "-p",
            "--permission-mode",
            "bypassPermissions",
            "--demo-script",
            script,
        ];
        let mut h = Host::start(&args, &[]);
        send(&h, init_req(json!({}), json!([])));
        h.next();
        send(&h, user("go"));
        let gate = h.until(|l| l["type"] == "control_request");
        assert_eq!(gate["request"]["tool_name"], "AskUserQuestion");
        send(&h, answer(&gate, question, choice));
        let v = h.until(|l| is_result(l) || l["type"] == "control_request");
        assert!(is_result(&v), "{script}: {v}");
        let (_, lines) = h.close();
        finished_checks(&lines);
        assert!(
            texts(&lines).contains("approved automatically (bypassPermissions mode)"),
            "{script}"
        );
    }
}

#[test]
fn demo_script_argument() {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let parse = |a: &[&str]| Config::from_args(&args(a), true).map(|c| c.script);
    assert_eq!(parse(&["-p"]), Ok(config::Script::Auth));
    assert_eq!(parse(&["--demo-script", "web"]), Ok(config::Script::Web));
    assert_eq!(parse(&["--demo-script=docs"]), Ok(config::Script::Docs));
    assert_eq!(parse(&["--demo-script", "auth"]), Ok(config::Script::Auth));
    let err = parse(&["--demo-script", "nope"]).unwrap_err();
    assert!(
        err.contains("\"nope\"") && err.contains("web, docs"),
        "{err}"
    );
    assert!(parse(&["--demo-script"]).is_err());
    // An unknown script ends the agent with status 2 before it writes anything.
    let (tx, rx) = mpsc::channel::<String>();
    let mut written = Vec::new();
    let code = run_with(&args(&["--demo-script", "nope"]), true, rx, |l| {
        written.push(l)
    });
    drop(tx);
    assert_eq!(code, 2);
    assert!(written.is_empty());
}

#[test]
fn demo_workspace_sessions_hold_gates_at_once() {
    let sessions = demo_workspace();
    assert_eq!(sessions.len(), 3);
    let names: HashSet<&str> = sessions.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names.len(), 3, "unique names");
    assert_eq!(sessions[0].script, None, "the main script first");
    assert!(sessions[0].agent_args().is_empty());
    // Start all three together and answer nothing: their gates pile up.
    let mut pending: Vec<Value> = Vec::new();
    let mut hosts: Vec<Host> = Vec::new();
    for s in &sessions {
        let mut args: Vec<String> = ARGS.iter().map(|a| a.to_string()).collect();
        args.extend(s.agent_args());
        assert!(Config::from_args(&args, true).is_ok(), "{s:?}");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut h = Host::start(&args, &[]);
        send(&h, init_req(json!({}), json!([])));
        h.next();
        send(&h, user(&s.prompt));
        hosts.push(h);
    }
    for (h, s) in hosts.iter_mut().zip(&sessions) {
        let n = if s.script.is_some() { 3 } else { 1 };
        pending.extend(gates(h, n));
    }
    assert_eq!(pending.len(), 7);
    // The same `npm test` in two sessions: the inbox can mark them as identical.
    let tests: Vec<&Value> = pending
        .iter()
        .filter(|g| g["request"]["input"]["command"] == NPM_TEST)
        .collect();
    assert_eq!(tests.len(), 2);
    assert_eq!(
        tests[0]["request"]["tool_name"],
        tests[1]["request"]["tool_name"]
    );
    assert_eq!(tests[0]["request"]["input"], tests[1]["request"]["input"]);
    for h in hosts {
        let (code, lines) = h.close();
        assert_eq!(code, 0);
        schema_checks(&lines);
    }
}

#[test]
fn changelog_entry_follows_the_answers() {
    let all = changelog_entry(None);
    assert!(all.starts_with(CHANGELOG_OLD));
    assert_eq!(all.matches("\n- ").count(), 4, "{all}");
    let two = changelog_entry(Some(&json!({DOCS_Q: "Button sizes, Dark mode fixes"})));
    assert_eq!(
        two,
        "# Changelog\n\n## 2.4.0\n\n- Button sizes: `size` replaces `small`/`large`\n- Dark mode fixes: Contrast fixes in five components\n"
    );
    let listed = changelog_entry(Some(&json!({DOCS_Q: ["Dropped IE 11"]})));
    assert!(
        listed.contains("- Dropped IE 11: ") && !listed.contains("Theme"),
        "{listed}"
    );
    let typed = changelog_entry(Some(&json!({DOCS_Q: "Faster builds"})));
    assert!(typed.ends_with("\n- Faster builds\n"), "{typed}");
}

#[test]
fn edit_patches_start_where_the_old_text_is() {
    assert_eq!(line_of(CSS_FILE, CSS_OLD), 2);
    assert_eq!(line_of(README_FILE, README_OLD), 8);
    assert_eq!(line_of(CHANGELOG_FILE, CHANGELOG_OLD), 1);
    assert_eq!(line_of(CSS_FILE, "not in the file"), 1);
    assert_eq!(line_of(CSS_FILE, ""), 1);
}
