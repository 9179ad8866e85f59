//! Nothing an agent sends reaches a terminal raw: a recording full of escape sequences (OSC 0
//! title, OSC 8 link, OSC 52 clipboard write, CSI), C1 controls and bidi overrides goes
//! through every printer (`export --markdown`, `validate`, `validate --json`, `sessions`) and
//! the TUI render; none lets a control, C1 or bidi character out, and each is shown visibly.

use super::*;

/// ESC-based sequences, 8-bit CSI, DEL, BEL and bidi/zero-width characters.
const EVIL: &str = "\u{1b}]0;pwned-title\u{7}\u{1b}]8;;http://evil.example/\u{1b}\\link\u{1b}]8;;\u{1b}\\\
                    \u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}[2J\u{9b}31m\u{7f}\u{202e}exe.txt\u{2066}\u{200b}";

/// A C1, C0 (but `\n`/`\t`), DEL or bidi/zero-width character, as a terminal would act on it.
fn raw_control(s: &str) -> Option<char> {
    s.chars().find(|c| {
        let n = *c as u32;
        (n < 0x20 && *c != '\n' && *c != '\t')
            || (0x7f..=0x9f).contains(&n)
            || (0x202a..=0x202e).contains(&n)
            || (0x2066..=0x2069).contains(&n)
            || (0x200b..=0x200f).contains(&n)
            || n == 0xfeff
    })
}

fn frame(ts: u64, dir: &str, v: Value) -> String {
    json!({"ts": ts, "dir": dir, "line": v.to_string()}).to_string()
}

/// A Claude recording where every agent-chosen string carries `EVIL`; the Bash gate stays
/// pending and its request id arrives twice (validate prints the id).
fn hostile_recording(dir: &Path) -> PathBuf {
    let id = format!("req-{EVIL}");
    let request = json!({"type":"control_request","request_id": id,"request":{
        "subtype":"can_use_tool","tool_name":"Bash",
        "input":{"command": format!("echo ok {EVIL}"),"description": format!("d {EVIL}")}}});
    let lines = [
        json!({"switchboard_recording":1,"backend":"claude","argv":["claude"],
            "cwd": format!("/tmp/cwd{EVIL}"),"started_ms":0,"started":"2026-12-01T00:00:00Z"})
        .to_string(),
        frame(
            1,
            "out",
            json!({"type":"user","message":{"role":"user","content":[
            {"type":"text","text": format!("prompt {EVIL}")}]},
            "parent_tool_use_id":null,"session_id":"default"}),
        ),
        frame(
            2,
            "in",
            json!({"type":"assistant","message":{"id":"m1","type":"message",
            "role":"assistant","model":"m","content":[{"type":"text","text": format!("said {EVIL}")}],
            "stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}},
            "parent_tool_use_id":null,"session_id":"s"}),
        ),
        frame(3, "in", request.clone()),
        frame(4, "in", request),
    ];
    let path = dir.join("hostile.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn assert_clean(what: &str, text: &str) {
    if let Some(c) = raw_control(text) {
        panic!("{what}: {c:?} reaches the terminal in\n{text:?}");
    }
}

#[test]
fn cli_printers_neutralize_agent_text() {
    let dir = scratch("hostile-cli");
    let rec = hostile_recording(&dir);
    let path = rec.to_str().unwrap();

    let md = stdout(&run(&["export", path, "--markdown"]));
    assert_clean("export --markdown", &md);
    assert!(md.contains("said ^[]0;pwned-title^G"), "{md}");
    assert!(
        md.contains("<U+009B>31m^?<U+202E>exe.txt<U+2066><U+200B>"),
        "{md}"
    );

    let out = validate(std::slice::from_ref(&rec), &[]);
    let text = stdout(&out);
    assert_clean("validate", &text);
    assert!(text.contains("request_id req-^[]0;pwned-title^G"), "{text}");

    let out = validate(std::slice::from_ref(&rec), &["--json"]);
    let text = stdout(&out);
    assert_clean("validate --json", &text);
    // Escaped, not dropped: the JSON still carries the exact id.
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert!(doc.to_string().contains("\\u001b]0;pwned-title"), "{doc}");
    assert!(
        serde_json::to_string(&doc).unwrap().contains('\u{202e}'),
        "the JSON reader gets the exact text back"
    );

    // `sessions` lists the recordings in the data dir.
    let data = dir.join("data");
    std::fs::create_dir_all(data.join("recordings")).unwrap();
    std::fs::copy(&rec, data.join("recordings/hostile.jsonl")).unwrap();
    let out = bin()
        .env("SWITCHBOARD_DATA_DIR", &data)
        .arg("sessions")
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_clean("sessions", &text);
    assert!(text.contains("prompt ^[]0;pwned-title^G"), "{text}");
}

#[test]
fn tui_render_neutralizes_agent_text() {
    let dir = scratch("hostile-tui");
    let mut p = open(&hostile_recording(&dir));
    let n = p.total();
    p.seek(n);
    assert_eq!(p.state().gates.len(), 1, "the Bash gate is pending");
    let mut term = Terminal::new(TestBackend::new(160, 48)).unwrap();
    let theme = Theme::dark();
    p.draw(&mut term, &theme).unwrap();
    let buf = term.backend().buffer();
    for cell in buf.content.iter() {
        assert_clean("a rendered cell", cell.symbol());
    }
    let screen = switchboard::ui::buffer_text(buf);
    // The card's command shows every escape and the override visibly: it reads as what runs.
    assert!(
        screen.contains("│$ echo ok ^[]0;pwned-title^G^[]8;;http://evil.example/^[\\link"),
        "{screen}"
    );
    assert!(screen.contains("<U+202E>exe.txt"), "{screen}");
}
