use super::*;

const BIN: &str = "'/opt/sb bin/switchboard'";

fn cmd(agent: HookAgent) -> String {
    command(BIN, agent)
}

/// Install, check it parses and holds our entries, install again (no change), uninstall
/// (byte for byte the original).
fn round_trip(agent: HookAgent, before: Option<&str>) -> String {
    let after = install(agent, before, &cmd(agent)).unwrap();
    let v: Value = serde_json::from_str(&after).unwrap_or_else(|e| panic!("{e}\n{after}"));
    for e in Name::installed(agent) {
        let list = v["hooks"][*e]
            .as_array()
            .unwrap_or_else(|| panic!("{e}\n{after}"));
        assert!(
            list.iter()
                .any(|g| g["hooks"][0]["command"] == json!(cmd(agent))),
            "{e}: {after}"
        );
    }
    assert_eq!(
        install(agent, Some(&after), &cmd(agent)).unwrap(),
        after,
        "a second install changes nothing"
    );
    let back = uninstall(agent, &after).unwrap();
    match before {
        Some(b) => assert_eq!(back, b, "uninstall gives the file back"),
        None => assert_eq!(back, "{}\n"),
    }
    after
}

#[test]
fn every_shape_of_settings_file_comes_back_byte_for_byte() {
    for agent in HookAgent::ALL {
        round_trip(agent, None);
        round_trip(agent, Some("{}"));
        round_trip(agent, Some("{}\n"));
        round_trip(agent, Some("{\n  \"model\": \"opus\"\n}\n"));
        round_trip(agent, Some("{\"model\":\"opus\",\"x\":[1,2]}"));
        round_trip(agent, Some("{\n\t\"model\": \"opus\",\n\t\"x\": {}\n}\n"));
        round_trip(
            agent,
            Some(
                "{\n    \"permissions\": {\"defaultMode\": \"default\"},\n    \"hooks\": {\n        \"PreToolUse\": [\n            {\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"my-linter\"}]}\n        ],\n        \"Stop\": [{\"hooks\": []}]\n    },\n    \"z\": true\n}\n",
            ),
        );
    }
}

/// A container that was there empty before (`"hooks": {}`, `"Stop": []`) cannot be told from
/// one install made: without the record `hooks install` keeps (the CLI's test checks that
/// path), uninstall removes it too, and nothing else.
#[test]
fn an_empty_container_of_the_users_goes_with_our_entries_without_the_record() {
    let before = "{\n  \"a\": 1,\n  \"hooks\": {}\n}\n";
    let after = install(HookAgent::Claude, Some(before), &cmd(HookAgent::Claude)).unwrap();
    assert_eq!(
        uninstall(HookAgent::Claude, &after).unwrap(),
        "{\n  \"a\": 1\n}\n"
    );
    let before = "{\"hooks\":{\"Stop\":[],\"X\":[1]}}";
    let after = install(HookAgent::Claude, Some(before), &cmd(HookAgent::Claude)).unwrap();
    assert_eq!(
        uninstall(HookAgent::Claude, &after).unwrap(),
        "{\"hooks\":{\"X\":[1]}}"
    );
}

#[test]
fn the_users_own_hooks_and_keys_stay_where_they_were() {
    let before = "{\n  \"env\": {\"A\": \"1\"},\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\n        \"matcher\": \"Bash\",\n        \"hooks\": [{\"type\": \"command\", \"command\": \"audit.sh\"}]\n      }\n    ]\n  },\n  \"statusLine\": {\"type\": \"command\", \"command\": \"x\"}\n}\n";
    let after = round_trip(HookAgent::Claude, Some(before));
    let v: Value = serde_json::from_str(&after).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["env", "hooks", "statusLine"]);
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "audit.sh"
    );
    assert_eq!(v["hooks"]["PreToolUse"][1]["matcher"], "*");
    // Written in the file's own style: two spaces, one member per line.
    assert!(
        after.contains("\n    \"PermissionRequest\": [\n      {\n"),
        "{after}"
    );
    // Claude and Codex entries side by side in one file are told apart.
    let both = install(HookAgent::Codex, Some(&after), &cmd(HookAgent::Codex)).unwrap();
    assert_eq!(uninstall(HookAgent::Codex, &both).unwrap(), after);
}

#[test]
fn a_moved_binary_is_pointed_at_in_place_and_a_group_with_the_users_hooks_keeps_them() {
    let old = install(
        HookAgent::Claude,
        Some("{}"),
        &command("/old/sb", HookAgent::Claude),
    )
    .unwrap();
    let new = install(HookAgent::Claude, Some(&old), &cmd(HookAgent::Claude)).unwrap();
    assert_eq!(
        new.matches(MARK).count(),
        Name::installed(HookAgent::Claude).len()
    );
    assert!(!new.contains("/old/sb"));
    assert_eq!(
        installed(HookAgent::Claude, &new).unwrap()[0].1.as_deref(),
        Some("/opt/sb bin/switchboard")
    );
    // The person put a hook of their own into our Stop group.
    let v: Value = serde_json::from_str(&new).unwrap();
    let mut v2 = v.clone();
    v2["hooks"]["Stop"][0]["hooks"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "command", "command": "notify-send done"}));
    let edited = serde_json::to_string_pretty(&v2).unwrap();
    let out: Value = serde_json::from_str(&uninstall(HookAgent::Claude, &edited).unwrap()).unwrap();
    assert_eq!(
        out["hooks"]["Stop"][0]["hooks"],
        json!([{"type": "command", "command": "notify-send done"}])
    );
    assert!(
        installed(HookAgent::Claude, &out.to_string())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn what_cannot_be_edited_is_left_untouched() {
    for (bad, why) in [
        ("{\"hooks\": [}", "not valid JSON"),
        ("[1]", "not a JSON object"),
        ("{\"hooks\": []}", "not an object"),
        ("{\"hooks\": {\"Stop\": {}}}", "not a list"),
    ] {
        let e = install(HookAgent::Claude, Some(bad), &cmd(HookAgent::Claude)).unwrap_err();
        assert!(e.contains(why), "{bad}: {e}");
    }
    assert!(uninstall(HookAgent::Claude, "{,}").is_err());
}

#[test]
fn the_command_is_a_quiet_no_op_when_the_binary_is_gone() {
    let c = command("'/no/such/switchboard'", HookAgent::Codex);
    assert!(is_ours(&c, HookAgent::Codex) && !is_ours(&c, HookAgent::Claude));
    assert_eq!(binary_of(&c).as_deref(), Some("/no/such/switchboard"));
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(&c)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
}
