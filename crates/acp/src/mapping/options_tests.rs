//! Session config options (issue 24 items 1-2): read from `session/new`, `config_option_update`
//! and `session/set_config_option` answers; set with `session/set_config_option`.

use super::*;
use switchboard_core::msg::{Command, ConfigOption, SessionPatch};

/// opencode's shape (reference §12.4): its mode and model as select options, one grouped.
const OPENCODE_NEW: &str = r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1","configOptions":[
 {"id":"mode","name":"Mode","category":"mode","type":"select","currentValue":"build",
  "options":[{"value":"build","name":"Build"},{"value":"plan","name":"Plan","description":"read only"}]},
 {"id":"model","name":"Model","category":"model","type":"select","currentValue":"anthropic/claude-sonnet-4",
  "options":[{"group":"anthropic","name":"Anthropic","options":[{"value":"anthropic/claude-sonnet-4","name":"Claude Sonnet 4"}]},
             {"group":"openai","name":"OpenAI","options":[{"value":"openai/gpt-5","name":"GPT-5"}]}]},
 {"id":"fast","name":"Fast","type":"boolean","currentValue":false},
 {"id":"weird","name":"Weird","type":"slider","currentValue":3},
 {"name":"no id","type":"select","currentValue":"x","options":[]}
]}}"#;

fn opencode() -> (Mapper, Out) {
    let mut m = Mapper::new(AcpOptions {
        cwd: PathBuf::from("/w/p"),
        ..AcpOptions::default()
    });
    m.initialize_line();
    m.on_line(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#);
    let out = m.on_line(&OPENCODE_NEW.replace('\n', ""));
    assert!(m.ready());
    (m, out)
}

fn options(out: &Out) -> Vec<ConfigOption> {
    out.events
        .iter()
        .rev()
        .find_map(|e| match e {
            BackendEvent::Capabilities(c) => Some(c.options.clone()),
            _ => None,
        })
        .expect("capabilities sent")
}

fn patches(out: &Out) -> Vec<&SessionPatch> {
    out.events
        .iter()
        .filter_map(|e| match e {
            BackendEvent::Session(p) => Some(p),
            _ => None,
        })
        .collect()
}

#[test]
fn the_options_of_a_new_session_are_read_and_the_footer_shows_their_mode_and_model() {
    let (_, out) = opencode();
    let o = options(&out);
    // The slider (a type we do not know) and the option without an id are skipped.
    let ids: Vec<&str> = o.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["mode", "model", "fast"]);
    assert_eq!(o[0].current_label(), "Build");
    assert_eq!(o[1].choices.len(), 2);
    assert_eq!(
        o[1].choices[1],
        ("openai/gpt-5".into(), "OpenAI · GPT-5".into())
    );
    assert!(o[2].boolean && o[2].current == "false");
    let last = patches(&out).into_iter().last().unwrap();
    assert_eq!(last.permission_mode.as_deref(), Some("Build"));
    // A grouped value is labelled with its group.
    assert_eq!(last.model.as_deref(), Some("Anthropic · Claude Sonnet 4"));
    let said = format!("{:?}", out.events);
    assert!(
        said.contains("2 mode(s), 2 model(s), 3 option(s) (O changes them)"),
        "{said}"
    );
}

#[test]
fn an_option_is_set_with_set_config_option_and_the_answer_replaces_them_all() {
    let (mut m, _) = opencode();
    let out = m.command(&Command::SetConfig {
        id: "mode".into(),
        value: "plan".into(),
    });
    let v: Value = serde_json::from_str(&out.lines[0]).unwrap();
    assert_eq!(v["method"], "session/set_config_option");
    assert_eq!(
        v["params"],
        json!({"sessionId": "s1", "configId": "mode", "value": "plan"})
    );
    let id = v["id"].clone();
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"configOptions": [
        {"id": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": "plan",
         "options": [{"value": "build", "name": "Build"}, {"value": "plan", "name": "Plan"}]}]}});
    let out = m.on_line(&answer.to_string());
    assert_eq!(options(&out).len(), 1);
    assert_eq!(options(&out)[0].current, "plan");
    assert_eq!(patches(&out)[0].permission_mode.as_deref(), Some("Plan"));
    // A switch's value goes as a boolean.
    let (mut m, _) = opencode();
    let out = m.command(&Command::SetConfig {
        id: "fast".into(),
        value: "true".into(),
    });
    let v: Value = serde_json::from_str(&out.lines[0]).unwrap();
    assert_eq!(v["params"]["value"], json!(true));
    assert_eq!(v["params"]["type"], "boolean");
}

#[test]
fn a_refused_option_says_why_and_an_update_notification_replaces_the_options() {
    let (mut m, _) = opencode();
    let out = m.command(&Command::SetConfig {
        id: "mode".into(),
        value: "plan".into(),
    });
    let v: Value = serde_json::from_str(&out.lines[0]).unwrap();
    let err = json!({"jsonrpc": "2.0", "id": v["id"], "error": {"code": -32602, "message": "Invalid params: mode plan"}});
    let out = m.on_line(&err.to_string());
    let said = format!("{:?}", out.events);
    assert!(
        said.contains("set_config_option mode = plan failed") && said.contains("Invalid params"),
        "{said}"
    );
    let upd = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {
        "sessionUpdate": "config_option_update", "configOptions": [
            {"id": "effort", "name": "Effort", "category": "thought_level", "type": "select", "currentValue": "high",
             "options": [{"value": "low", "name": "Low"}, {"value": "high", "name": "High"}]}]}}});
    let out = m.on_line(&upd.to_string());
    let o = options(&out);
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].category.as_deref(), Some("thought_level"));
}

#[test]
fn a_legacy_model_is_set_with_set_model() {
    let (mut m, _) = opencode();
    let out = m.command(&Command::SetModel("claude-opus".into()));
    let v: Value = serde_json::from_str(&out.lines[0]).unwrap();
    assert_eq!(v["method"], "session/set_model");
    assert_eq!(
        v["params"],
        json!({"sessionId": "s1", "modelId": "claude-opus"})
    );
    let out = m.on_line(&json!({"jsonrpc": "2.0", "id": v["id"], "result": {}}).to_string());
    assert_eq!(patches(&out)[0].model.as_deref(), Some("claude-opus"));
}

#[test]
fn hostile_options_are_bounded_and_made_safe() {
    let mut m = Mapper::new(AcpOptions::default());
    m.initialize_line();
    m.on_line(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#);
    let many: Vec<Value> = (0..1000)
        .map(|i| json!({"id": format!("o{i}\u{1b}[31m"), "name": "x\u{7}", "type": "select", "currentValue": "v",
                        "options": (0..2000).map(|j| json!({"value": format!("v{j}"), "name": "n"})).collect::<Vec<_>>()}))
        .collect();
    let out = m.on_line(
        &json!({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s1", "configOptions": many}})
            .to_string(),
    );
    let o = options(&out);
    assert!(o.len() <= 64, "{}", o.len());
    assert!(o.iter().all(|o| o.choices.len() <= 500));
    assert!(
        o.iter()
            .all(|o| !o.id.contains('\u{1b}') && !o.name.contains('\u{7}'))
    );
}
