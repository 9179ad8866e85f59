//! The whole headless app against the scripted demo agent: rules, search and focus.

use super::*;

use switchboard::app::headless::Headless;
use switchboard::backend::claude::session::{ClaudeBackend, ClaudeConfig};

const WAIT: Duration = Duration::from_secs(20);

fn recording(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).expect("the recording exists");
    text.lines()
        .skip(1)
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["dir"].as_str().unwrap().to_string(),
                v["line"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Shift-Tab until the tree has the focus.
fn to_tree(h: &mut Headless) {
    for _ in 0..4 {
        if h.state().focus == Focus::Tree {
            return;
        }
        h.key(KeyCode::BackTab);
    }
    assert_eq!(h.state().focus, Focus::Tree);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_answer_the_demo_gate_then_search_and_focus() {
    let dir = temp("demo");
    let rules = dir.join("rules.toml");
    std::fs::write(
        &rules,
        "[[rule]]\naction = \"allow\"\ntool = \"Bash\"\npattern = \"touch *\"\n",
    )
    .unwrap();
    let record = dir.join("session.jsonl");
    let config = ClaudeConfig {
        program: env!("CARGO_BIN_EXE_switchboard").into(),
        prefix_args: vec!["demo-agent".into()],
        breaks: vec!["Grep".into()],
        cwd: dir.clone(),
        prompt: Some("Add audit logging to the login flow".into()),
        record: Some(record.clone()),
        env: vec![("SWITCHBOARD_DEMO_FAST".into(), Some("1".into()))],
        ..Default::default()
    };
    let mut h = Headless::start(Box::new(ClaudeBackend { config }), 120, 40);
    switchboard::config::load_rules(&rules, &mut h.app.state.rules).unwrap();
    assert_eq!(h.state().rules.list.len(), 1);

    // The Bash permission is answered by the rule: no key pressed. The fan-out's gates
    // (the reviewer's Edit, the helper's Grep breakpoint) come next and wait for us.
    h.wait_until("the rule's audit row and the next gates", WAIT, |s| {
        s.tree.nodes[0]
            .transcript
            .items
            .iter()
            .any(|i| i.kind.text().contains("by rule"))
            && !s.gates.is_empty()
    })
    .await;
    let origin = rules.display().to_string();
    let audit = h.state().tree.nodes[0]
        .transcript
        .items
        .iter()
        .map(|i| i.kind.text().to_string())
        .find(|t| t.contains("by rule"))
        .unwrap();
    assert_eq!(
        audit,
        format!(
            "allowed once by rule ({origin}: allow Bash `touch *`): Bash `touch demo-output.txt`"
        )
    );
    assert_eq!(h.state().rules.list[0].hits, 1);
    assert!(
        h.state()
            .gates
            .iter()
            .all(|g| !matches!(&g.kind, GateKind::Permission(p) if p.tool == "Bash")),
        "no Bash gate waits"
    );

    // Back to the root in the tree (the new gate selected its own node), then search the
    // root's transcript while the gates wait.
    to_tree(&mut h);
    h.key(KeyCode::Home);
    assert_eq!(h.state().selected_node, 0);
    assert!(h.screen().contains("by rule"));
    h.key(KeyCode::Char('/'));
    h.type_text("scratch");
    assert!(h.screen().contains("search: scratch▌"));
    h.key(KeyCode::Enter);
    let s = h.state();
    let hits = s.search.as_ref().unwrap().hits.clone();
    assert!(hits.len() >= 2, "the text and the tool call: {hits:?}");
    assert!(hits.iter().all(|(n, _)| *n == 0));
    assert_eq!(s.selected_item, Some(hits[0].1));
    assert_eq!(s.focus, Focus::Transcript);
    h.key(KeyCode::Char('n'));
    assert_eq!(h.state().selected_item, Some(hits[1].1));
    let screen = h.screen();
    assert!(
        screen.contains(&format!("match 2/{}", hits.len())),
        "{screen}"
    );
    for (_, i) in &hits {
        assert!(
            h.state().tree.nodes[0].transcript.items[*i]
                .kind
                .full_text()
                .to_lowercase()
                .contains("scratch")
        );
    }
    h.key(KeyCode::Esc);
    assert!(h.state().search.is_none());

    // Focus the explorer's subtree.
    h.wait_until("the explorer and its helper", WAIT, |s| {
        s.tree.nodes.iter().any(|n| n.depth == 2)
    })
    .await;
    to_tree(&mut h);
    h.key(KeyCode::Home);
    h.key(KeyCode::Down);
    let ex = h.state().selected_node;
    assert_eq!(h.state().tree.nodes[ex].depth, 1);
    h.key(KeyCode::Char('f'));
    assert_eq!(h.state().focus_root, Some(ex));
    let visible = switchboard::core::update::visible_nodes(h.state());
    assert!(visible.len() >= 2, "{visible:?}");
    assert!(visible.iter().all(|n| h.state().tree.is_within(*n, ex)));
    let name = h.state().tree.nodes[ex].name.clone();
    let screen = h.screen();
    assert!(screen.contains(&format!("focus: {name}")), "{screen}");
    let rows = h.state().view.tree_rows.clone();
    assert!(!rows.is_empty());
    assert!(
        rows.iter().all(|(_, n)| h.state().tree.is_within(*n, ex)),
        "the tree shows only the subtree: {rows:?}\n{screen}"
    );
    h.key(KeyCode::Char('F'));
    assert_eq!(h.state().focus_root, None);

    h.quit().await;
    assert!(h.state().session.exited.is_some());

    // The recording holds the rule's allow for the Bash request.
    let entries = recording(&record);
    let bash_id = entries
        .iter()
        .filter(|(d, _)| d == "in")
        .filter_map(|(_, l)| serde_json::from_str::<Value>(l).ok())
        .find(|v| {
            v["type"] == "control_request"
                && v["request"]["subtype"] == "can_use_tool"
                && v["request"]["tool_name"] == "Bash"
        })
        .map(|v| v["request_id"].clone())
        .expect("the Bash request is recorded");
    let replies: Vec<Value> = entries
        .iter()
        .filter(|(d, _)| d == "out")
        .filter_map(|(_, l)| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "control_response" && v["response"]["request_id"] == bash_id)
        .collect();
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0]["response"]["response"]["behavior"], "allow");
    assert_eq!(
        replies[0]["response"]["response"]["updatedInput"]["command"],
        "touch demo-output.txt"
    );
    // Which rule decided is kept beside the reply, and replay and export show it.
    let notes: Vec<&String> = entries
        .iter()
        .filter(|(d, l)| d == "note" && l.starts_with("rule: "))
        .map(|(_, l)| l)
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("by rule") && notes[0].contains("touch"),
        "{notes:?}"
    );
    let loaded = switchboard::replay::load::load(&record, None).unwrap();
    let md = switchboard::replay::export::markdown(&loaded, "t");
    assert!(md.contains("*rule: allowed once by rule"), "{md}");
    let _ = std::fs::remove_dir_all(dir);
}
