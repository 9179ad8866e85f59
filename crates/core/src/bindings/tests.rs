use std::collections::{BTreeMap, HashMap};

use super::check::lit_chars;
use super::markdown::{BEGIN, END, current, splice};
use super::*;

fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(a, k)| (a.to_string(), k.to_string()))
        .collect()
}

#[test]
fn every_binding_names_a_real_action_and_ids_are_unique() {
    for ctx in CONTEXTS {
        for (i, b) in ctx.bindings.iter().enumerate() {
            assert!(
                !ctx.bindings[..i].iter().any(|o| o.id == b.id),
                "{} has two bindings {:?}",
                ctx.name,
                b.id
            );
            assert!(!b.keys.is_empty() && !b.label.is_empty() && !b.desc.is_empty());
            for k in b.keys {
                if let Key::Act(a) = k {
                    assert!(
                        keymap::DEFAULTS.iter().any(|(x, _)| x == a),
                        "{}: {a} is no remappable action",
                        ctx.name
                    );
                }
            }
        }
    }
    for hints in hints::ALL {
        assert!(!hint_line(&HashMap::new(), hints).is_empty());
    }
}

/// Where overrides translate keys, a fixed key that is some action's default would do that
/// action's override too: the table must say so by naming the action.
#[test]
fn a_fixed_key_is_never_an_actions_default_where_overrides_apply() {
    for ctx in CONTEXTS.iter().filter(|c| c.remapped) {
        for b in ctx.bindings {
            for k in b.keys {
                if let Key::Lit(s) = k {
                    for c in lit_chars(s) {
                        assert!(
                            !keymap::DEFAULTS.iter().any(|(_, d)| *d == c),
                            "{} {}: {c:?} is an action's default; write it as Act",
                            ctx.name,
                            b.id
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn hints_read_as_before_and_follow_the_users_keys() {
    let none = HashMap::new();
    assert_eq!(
        hint_line(&none, hints::SESSION),
        "? help · g gate · Tab focus · m mode · q quit"
    );
    assert_eq!(
        hint_line(&none, hints::PERMISSION_MORE),
        "A rule · r raw · ] next"
    );
    let m = keymap::build(&overrides(&[
        ("allow_once", "Y"),
        ("focus_subtree", "u"),
        ("queue", "U"),
        ("new_session", "ctrl-t"),
    ]))
    .unwrap();
    assert_eq!(
        hint_line(&m, hints::QUEUED),
        "U queued messages · ? help · I inbox · Ctrl-T/Ctrl-N new · q quit"
    );
    let allow = PERMISSION.get("allow_once");
    assert_eq!(first_key(&m, allow), "Y");
    assert_eq!(keys_text(&m, allow), "Y/y");
    let rows = help_rows(&m, &EVERYWHERE);
    assert!(rows.contains(&("u/f".to_string(), EVERYWHERE.get("focus_subtree").desc)));
    // The inbox reads keys as they are: its hints keep the defaults.
    assert_eq!(keys_text(&m, INBOX.get("allow")), "y");
}

#[test]
fn an_override_taking_a_key_of_the_same_context_is_reported_with_both_and_the_context() {
    let c = collisions(&overrides(&[("detail", "y")]));
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].0, "detail");
    assert!(
        c[0].1.contains("detail") && c[0].1.contains("allow_once") && c[0].1.contains("Permission"),
        "{}",
        c[0].1
    );
    // A fixed key: j moves in the tree.
    let c = collisions(&overrides(&[("help", "j")]));
    assert!(
        c.len() == 1
            && c[0]
                .1
                .contains("move (select node / item) in Tree and transcript"),
        "{c:?}"
    );
    // Digits pick an ACP option and a question's answer.
    let c = collisions(&overrides(&[("copy", "2")]));
    assert!(
        c.len() == 1 && c[0].1.contains("in Permission") && c[0].1.contains("in Question"),
        "{c:?}"
    );
    // Two actions on one key.
    let c = collisions(&overrides(&[("help", "K"), ("log", "K")]));
    assert_eq!(c.len(), 2, "{c:?}");
    // No collision: a free key; a default given up by its moved action; a key only the
    // untranslated inbox or prompt uses; one action's default shared with another (n).
    for ok in [
        &[("allow_once", "Y")][..],
        &[("focus_subtree", "u"), ("queue", "U")],
        &[("help", "=")],
        &[("deny", "D"), ("search_next", "D")],
    ] {
        assert_eq!(collisions(&overrides(ok)), vec![], "{ok:?}");
    }
}

/// The README's keys section is rendered from the tables. After changing a binding, run
/// `SB_WRITE_README=1 cargo test -p switchboard-core readme_keys` to rewrite it, and commit README.md.
#[test]
fn readme_keys_section_is_the_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
    let text = std::fs::read_to_string(path).expect("README.md");
    let want = readme_section();
    if std::env::var_os("SB_WRITE_README").is_some() {
        let new = splice(&text, &want).unwrap_or_else(|| panic!("no {BEGIN} … {END} in README.md"));
        std::fs::write(path, new).expect("write README.md");
        return;
    }
    let have = current(&text).unwrap_or_else(|| panic!("no {BEGIN} … {END} in README.md"));
    if have != want {
        let diff: Vec<String> = have
            .lines()
            .zip(want.lines())
            .filter(|(a, b)| a != b)
            .take(5)
            .map(|(a, b)| format!("- {a}\n+ {b}"))
            .collect();
        panic!(
            "README.md's keys section differs from the binding table ({} lines now, {} rendered):\n{}\n\
             rewrite it with: SB_WRITE_README=1 cargo test -p switchboard-core readme_keys",
            have.lines().count(),
            want.lines().count(),
            diff.join("\n")
        );
    }
}

#[test]
fn the_section_is_spliced_between_the_markers() {
    let text = format!("a\n{BEGIN}\nold\n{END}\nb\n");
    let new = splice(&text, "new\n").unwrap();
    assert_eq!(new, format!("a\n{BEGIN}\nnew\n{END}\nb\n"));
    assert_eq!(current(&new), Some("new\n"));
    assert_eq!(splice("no markers", "x"), None);
}
