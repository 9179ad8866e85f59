//! Search, copy and the pager, subtree focus and mouse clicks, through the reducer.

use super::*;

fn search_hits(sc: &Scene) -> Vec<(usize, usize)> {
    sc.s.search
        .as_ref()
        .map(|s| s.hits.clone())
        .unwrap_or_default()
}

#[test]
fn search_moves_with_n_and_capital_n() {
    let mut sc = base(Opening::Plain);
    sc.key(KeyCode::Esc).keys("/auth");
    assert!(sc.s.search.as_ref().unwrap().editing);
    sc.key(KeyCode::Enter);
    let hits = search_hits(&sc);
    let items = &sc.s.tree.nodes[0].transcript.items;
    assert_eq!(hits.len(), 2, "the thinking and the ls output: {hits:?}");
    for (_, i) in &hits {
        assert!(items[*i].kind.full_text().to_lowercase().contains("auth"));
    }
    assert_eq!(sc.s.selected_item, Some(hits[0].1));
    assert_eq!(sc.s.focus, Focus::Transcript);
    assert_eq!(
        sc.s.status_line.as_deref(),
        Some("match 1/2 for \"auth\" · n/N move")
    );
    sc.keys("n");
    assert_eq!(sc.s.selected_item, Some(hits[1].1));
    assert_eq!(
        sc.s.status_line.as_deref(),
        Some("match 2/2 for \"auth\" · n/N move")
    );
    sc.keys("n");
    assert_eq!(sc.s.selected_item, Some(hits[0].1), "n wraps around");
    sc.keys("N");
    assert_eq!(sc.s.selected_item, Some(hits[1].1), "N goes back");
    sc.keys("N");
    assert_eq!(sc.s.selected_item, Some(hits[0].1));
    // Esc ends the search.
    sc.key(KeyCode::Esc);
    assert!(sc.s.search.is_none());
    // No match says so.
    sc.keys("/zebra").key(KeyCode::Enter);
    assert_eq!(sc.s.status_line.as_deref(), Some("no match for \"zebra\""));
}

#[test]
fn ctrl_f_finds_matches_in_other_nodes() {
    let mut sc = fan_out_scene();
    sc.key(KeyCode::Esc);
    assert_eq!(sc.s.selected_node, 0);
    // `/` searches this node only: the root has no "fn authenticate".
    sc.keys("/fn authenticate").key(KeyCode::Enter);
    assert!(search_hits(&sc).is_empty());
    sc.key(KeyCode::Esc);
    sc.key_mod(KeyCode::Char('f'), KeyModifiers::CONTROL);
    assert!(sc.s.search.as_ref().unwrap().all_nodes);
    sc.keys("fn authenticate").key(KeyCode::Enter);
    let hits = search_hits(&sc);
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|(n, _)| *n != 0), "{hits:?}");
    let (node, item) = hits[0];
    assert_eq!(sc.s.selected_node, node, "the match's node is selected");
    assert_eq!(sc.s.selected_item, Some(item));
    assert!(
        sc.s.tree.nodes[node].transcript.items[item]
            .kind
            .full_text()
            .contains("fn authenticate")
    );
    let screen = sc.screen(120, 30);
    assert!(
        screen.contains(&format!("match 1/{}", hits.len())),
        "{screen}"
    );
    assert!(
        screen.contains("general-purpose · Grep for authenticate"),
        "{screen}"
    );
}

#[test]
fn c_copies_and_o_pages_the_selected_item() {
    let mut sc = fan_out_scene();
    let rv = sc.node("code-reviewer");
    sc.select_node(rv);
    let items = &sc.s.tree.nodes[rv].transcript.items;
    let edit = items
        .iter()
        .position(|i| matches!(&i.kind, ItemKind::ToolCall { diff: Some(_), .. }))
        .unwrap();
    let full = items[edit].kind.full_text();
    sc.select_item(edit);
    let fx = sc.press(KeyCode::Char('c'));
    assert_eq!(fx, vec![Effect::Copy(full.clone())]);
    assert!(
        full.contains("+    audit::record(\"login\", &user.name);"),
        "{full}"
    );
    assert!(
        full.contains(" let session = Session::start(&user);"),
        "{full}"
    );
    assert!(
        sc.s.status_line.as_deref().unwrap().starts_with("copied "),
        "{:?}",
        sc.s.status_line
    );
    let fx = sc.press(KeyCode::Char('o'));
    assert_eq!(fx, vec![Effect::OpenPager(full)]);

    // Nothing selected: a hint, no effect.
    sc.key(KeyCode::End);
    assert!(sc.press(KeyCode::Char('c')).is_empty());
    assert!(
        sc.s.status_line
            .as_deref()
            .unwrap()
            .contains("select an item")
    );

    // On the gate card, `c` copies the gate's diff.
    let mut sc = edit_gate();
    let fx = sc.press(KeyCode::Char('c'));
    match &fx[..] {
        [Effect::Copy(t)] => assert!(t.contains("+    audit::record"), "{t}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn f_limits_and_capital_f_restores_the_tree() {
    let mut sc = fan_out_scene();
    let ex = sc.node("Explore");
    let helper = sc.node("general-purpose");
    let rv = sc.node("code-reviewer");
    sc.select_node(ex);
    sc.keys("f");
    assert_eq!(sc.s.focus_root, Some(ex));
    assert_eq!(
        switchboard::core::update::visible_nodes(&sc.s),
        vec![ex, helper]
    );
    sc.key(KeyCode::Home);
    assert_eq!(sc.s.selected_node, ex, "Home stops at the focused node");
    for _ in 0..5 {
        sc.key(KeyCode::Down);
    }
    assert_eq!(sc.s.selected_node, helper, "Down stops inside the subtree");
    let screen = sc.screen(120, 24);
    assert!(screen.contains("focus: Explore (F all)"), "{screen}");
    assert!(!screen.contains("code-reviewer"), "{screen}");
    sc.keys("F");
    assert_eq!(sc.s.focus_root, None);
    sc.key(KeyCode::End);
    assert_eq!(sc.s.selected_node, rv);
    sc.key(KeyCode::Home);
    assert_eq!(sc.s.selected_node, 0);
}

#[test]
fn mouse_clicks_select_tree_nodes_and_transcript_items() {
    let mut sc = fan_out_scene();
    sc.key(KeyCode::Esc);
    let _ = sc.screen(120, 40);
    // A tree row.
    let rv = sc.node("code-reviewer");
    let tree = sc.s.view.tree_area;
    let row =
        sc.s.view
            .tree_rows
            .iter()
            .position(|(_, n)| *n == rv)
            .expect("the reviewer is on screen") as u16;
    sc.click(tree.x + 2, tree.y + row);
    assert_eq!(sc.s.selected_node, rv);
    assert_eq!(sc.s.focus, Focus::Tree);

    // A transcript row of the reviewer (render again: the rows belong to the new node).
    let _ = sc.screen(120, 40);
    let area = sc.s.view.transcript_area;
    let rows = sc.s.view.item_rows.clone();
    let items = &sc.s.tree.nodes[rv].transcript.items;
    let edit = items
        .iter()
        .position(|i| matches!(&i.kind, ItemKind::ToolCall { .. }))
        .unwrap();
    let row = rows.iter().position(|i| *i == edit).expect("on screen") as u16;
    sc.click(area.x + 3, area.y + row);
    assert_eq!(sc.s.selected_item, Some(edit));
    assert_eq!(sc.s.focus, Focus::Transcript);

    // Back at the root: a second click on the thinking row expands it.
    sc.select_node(0);
    let _ = sc.screen(120, 40);
    let thinking = sc.s.tree.nodes[0]
        .transcript
        .items
        .iter()
        .position(|i| matches!(&i.kind, ItemKind::Thinking { .. }))
        .unwrap();
    let rows = sc.s.view.item_rows.clone();
    let row = rows.iter().position(|i| *i == thinking).expect("on screen") as u16;
    let area = sc.s.view.transcript_area;
    sc.click(area.x + 3, area.y + row);
    assert_eq!(sc.s.selected_item, Some(thinking));
    assert!(!sc.s.tree.nodes[0].transcript.items[thinking].expanded);
    sc.click(area.x + 3, area.y + row);
    assert!(sc.s.tree.nodes[0].transcript.items[thinking].expanded);
}
