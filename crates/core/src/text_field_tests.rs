//! The text field's keys, its bound and what a flood of keys or lines costs.

use super::*;

fn key(code: KeyCode, m: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, m)
}
fn typed(f: &mut TextField, s: &str) {
    for c in s.chars() {
        f.input(key(KeyCode::Char(c), KeyModifiers::NONE));
    }
}

#[test]
fn typing_and_deleting_across_lines() {
    let mut f = TextField::default();
    assert!(f.is_empty());
    typed(&mut f, "héllo");
    f.input(key(KeyCode::Enter, KeyModifiers::NONE));
    typed(&mut f, "wörld");
    assert_eq!(f.lines(), ["héllo", "wörld"]);
    assert_eq!(f.cursor(), (1, 5));
    f.input(key(KeyCode::Home, KeyModifiers::NONE));
    assert!(f.input(key(KeyCode::Backspace, KeyModifiers::NONE)));
    assert_eq!(f.text(), "héllowörld");
    assert_eq!(f.cursor(), (0, 5));
    assert!(f.input(key(KeyCode::Delete, KeyModifiers::NONE)));
    assert_eq!(f.text(), "hélloörld");
    f.input(key(KeyCode::Char('a'), KeyModifiers::CONTROL));
    assert!(!f.input(key(KeyCode::Backspace, KeyModifiers::NONE)));
    f.input(key(KeyCode::Char('e'), KeyModifiers::CONTROL));
    assert!(!f.input(key(KeyCode::Delete, KeyModifiers::NONE)));
    assert_eq!(f.cursor(), (0, 9));
}

#[test]
fn paste_splits_lines_from_any_terminal() {
    let mut f = TextField::new("ab");
    f.input(key(KeyCode::Left, KeyModifiers::NONE));
    f.insert_str("1\r\n2\r3\n4");
    assert_eq!(f.lines(), ["a1", "2", "3", "4b"]);
    assert_eq!(f.cursor(), (3, 1));
}

#[test]
fn words_and_line_kills() {
    let mut f = TextField::new("let x = foo.bar(1);");
    f.input(key(KeyCode::Char('w'), KeyModifiers::CONTROL));
    assert_eq!(f.text(), "let x = foo.bar(1");
    f.input(key(KeyCode::Char('b'), KeyModifiers::ALT));
    assert_eq!(f.cursor(), (0, 16));
    f.input(key(KeyCode::Left, KeyModifiers::CONTROL));
    assert_eq!(f.cursor(), (0, 15));
    f.input(key(KeyCode::Left, KeyModifiers::CONTROL));
    assert_eq!(f.cursor(), (0, 12));
    f.input(key(KeyCode::Char('k'), KeyModifiers::CONTROL));
    assert_eq!(f.text(), "let x = foo.");
    f.input(key(KeyCode::Char('a'), KeyModifiers::CONTROL));
    f.input(key(KeyCode::Char('f'), KeyModifiers::ALT));
    assert_eq!(f.cursor(), (0, 3));
    f.input(key(KeyCode::Char('d'), KeyModifiers::ALT));
    assert_eq!(f.text(), "let = foo.");
    f.input(key(KeyCode::End, KeyModifiers::NONE));
    assert!(f.delete_line_by_head());
    assert!(f.is_empty());
}

#[test]
fn cursor_moves_stay_inside_the_text() {
    let mut f = TextField::new("long line\nab");
    f.input(key(KeyCode::Up, KeyModifiers::NONE));
    assert_eq!(f.cursor(), (0, 2));
    f.input(key(KeyCode::End, KeyModifiers::NONE));
    f.input(key(KeyCode::Down, KeyModifiers::NONE));
    assert_eq!(f.cursor(), (1, 2));
    f.input(key(KeyCode::Right, KeyModifiers::NONE));
    assert_eq!(f.cursor(), (1, 2));
    f.input(key(KeyCode::Home, KeyModifiers::NONE));
    f.input(key(KeyCode::Left, KeyModifiers::NONE));
    assert_eq!(f.cursor(), (0, 9));
    f.input(key(KeyCode::Tab, KeyModifiers::NONE));
    assert_eq!(f.lines()[0], "long line   ");
    f.input(key(KeyCode::Char('<'), KeyModifiers::ALT));
    assert_eq!(f.cursor(), (0, 0));
    // Chords with no meaning type nothing.
    assert!(!f.input(key(KeyCode::Char('x'), KeyModifiers::CONTROL)));
    assert!(!f.input(key(KeyCode::F(2), KeyModifiers::NONE)));
    assert_eq!(f.text(), "long line   \nab");
}

/// A paste larger than the field takes what fits and counts the rest as refused; typing
/// at the bound is refused too; deleting makes room again.
#[test]
fn the_field_is_bounded_and_says_what_it_refused() {
    let mut f = TextField::new("ab\n");
    let big = "x".repeat(40 << 20);
    assert!(!f.insert_str(&big));
    assert_eq!(f.len(), MAX_BYTES);
    assert_eq!(f.text().len(), MAX_BYTES);
    assert_eq!(f.refused(), 1);
    assert!(!f.input(key(KeyCode::Char('y'), KeyModifiers::NONE)));
    assert!(!f.input(key(KeyCode::Enter, KeyModifiers::NONE)));
    assert_eq!(f.refused(), 3);
    assert!(f.input(key(KeyCode::Backspace, KeyModifiers::NONE)));
    assert!(!f.input(key(KeyCode::Char('é'), KeyModifiers::NONE)));
    assert!(f.input(key(KeyCode::Char('z'), KeyModifiers::NONE)));
    assert_eq!(f.len(), MAX_BYTES);
    assert_eq!(f.text().len(), MAX_BYTES);
    // Multi-byte text is cut on a char boundary, and `len` stays the text's length
    // through every edit.
    let mut g = TextField::new("é\r\n");
    g.insert_str(&"ü\n".repeat(MAX_BYTES));
    assert!(g.len() <= MAX_BYTES);
    assert_eq!(g.len(), g.text().len());
    g.input(key(KeyCode::Char('w'), KeyModifiers::CONTROL));
    g.input(key(KeyCode::Up, KeyModifiers::NONE));
    g.input(key(KeyCode::Char('k'), KeyModifiers::CONTROL));
    g.input(key(KeyCode::Char('d'), KeyModifiers::ALT));
    g.input(key(KeyCode::Char('j'), KeyModifiers::CONTROL));
    assert_eq!(g.len(), g.text().len());
    g.clear();
    assert!(g.is_empty() && g.text().is_empty() && g.refused() == 1);
}

/// A key flood costs O(keys), not O(keys × line): 300 000 keys typed, erased and moved
/// over on one line (the cursor used to be found by walking the line from its start at
/// every key: minutes for this) take well under the bound, and a paste of half a million
/// lines amid the text is spliced in at once.
#[test]
fn a_flood_of_keys_or_lines_costs_its_size() {
    let t = std::time::Instant::now();
    let mut f = TextField::new("head\ntail");
    f.input(key(KeyCode::Up, KeyModifiers::NONE));
    for _ in 0..300_000 {
        f.input(key(KeyCode::Char('x'), KeyModifiers::NONE));
    }
    for _ in 0..100_000 {
        f.input(key(KeyCode::Left, KeyModifiers::NONE));
        f.input(key(KeyCode::Backspace, KeyModifiers::NONE));
        f.input(key(KeyCode::Char('w'), KeyModifiers::CONTROL));
    }
    assert_eq!(f.len(), f.text().len());
    let mut g = TextField::new(&"line\n".repeat(1000));
    g.input(key(KeyCode::Char('<'), KeyModifiers::ALT));
    g.insert_str(&"p\r\n".repeat(300_000));
    assert_eq!(g.lines().len(), 301_001);
    assert_eq!(g.cursor(), (300_000, 0));
    let took = t.elapsed();
    assert!(
        took < std::time::Duration::from_secs(10),
        "the flood took {took:?}"
    );
}

/// What the renderer takes: a window around the cursor, never the whole field.
#[test]
fn the_window_is_what_a_view_shows() {
    let mut f = TextField::new(&format!("{}\n", "a".repeat(5000)).repeat(100));
    f.input(key(KeyCode::Up, KeyModifiers::NONE));
    f.input(key(KeyCode::Up, KeyModifiers::NONE));
    f.input(key(KeyCode::Char('a'), KeyModifiers::CONTROL));
    for _ in 0..3000 {
        f.input(key(KeyCode::Right, KeyModifiers::NONE));
    }
    f.insert_str("Z");
    let (lines, (row, col)) = f.window(8, 1000);
    assert_eq!(lines.len(), 8 + 1 + 2, "8 above, the cursor's, 2 below");
    assert!(lines.iter().all(|l| l.chars().count() <= 2000));
    assert_eq!((row, col), (8, 1000));
    assert_eq!(&lines[row][col - 1..=col], "Za");
    // A small field comes whole.
    let small = TextField::new("one\ntwo");
    assert_eq!(
        small.window(8, 1000),
        (vec!["one".into(), "two".into()], (1, 3))
    );
}
