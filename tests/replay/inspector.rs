//! The frame inspector and its schema verdicts, source lines, play/pause and speed.

use super::*;

#[test]
fn the_inspector_shows_the_frame_pretty_with_its_schema_verdict() {
    let path = our("bash_write");
    let mut p = sized(&path);
    ch(&mut p, ']');
    assert_eq!(frame(&p), 19);
    ch(&mut p, 'i');
    let Some(Overlay::Text { title, body }) = p.state().overlay.clone() else {
        panic!("no inspector: {:?}", p.state().overlay);
    };
    assert_eq!(title, " frame 19/121 (Esc closes) ");
    let raw = &p.frame(18).text;
    let (head, json_part) = body.split_once("\n\n").unwrap();
    assert_eq!(
        head,
        "direction: in (agent → switchboard)\nsource line: 20\ntime: 1970-01-01T00:00:00.626Z\nschema: valid (schema: Message)"
    );
    let v: Value = serde_json::from_str(raw).unwrap();
    assert_eq!(json_part, serde_json::to_string_pretty(&v).unwrap());
    assert!(json_part.contains("\n  \"request\": {\n    \"subtype\": \"can_use_tool\","));
    // The file really holds that frame on line 20.
    let line20 = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .nth(19)
        .unwrap()
        .to_string();
    let e: Value = serde_json::from_str(&line20).unwrap();
    assert_eq!(e["line"].as_str().unwrap(), raw);

    // Stepping works behind the inspector, which follows the frame; Esc closes it.
    ch(&mut p, '.');
    assert_eq!(frame(&p), 20);
    match &p.state().overlay {
        Some(Overlay::Text { title, .. }) => assert!(title.contains("frame 20/"), "{title}"),
        other => panic!("the inspector should stay open: {other:?}"),
    }
    ch(&mut p, ',');
    assert_eq!(frame(&p), 19);
    press(&mut p, KeyCode::Esc);
    assert!(p.state().overlay.is_none());
    // A frame or two later: our reply.
    while p.frame(frame(&p) - 1).dir != Dir::Out {
        ch(&mut p, '.');
    }
    ch(&mut p, 'i');
    let Some(Overlay::Text { body, .. }) = p.state().overlay.clone() else {
        panic!()
    };
    assert!(
        body.starts_with("direction: out (switchboard → agent)\nsource line: 22\n"),
        "{body}"
    );
    assert!(
        body.contains("schema: valid (schema: outbound line)"),
        "{body}"
    );
    assert!(body.contains("\"behavior\": \"deny\""), "{body}");
    press(&mut p, KeyCode::Esc);

    // Not a control frame, stderr/notes, and a frame before the first.
    press(&mut p, KeyCode::End);
    ch(&mut p, 'i');
    let Some(Overlay::Text { body, .. }) = p.state().overlay.clone() else {
        panic!()
    };
    assert!(
        body.starts_with("direction: note\nsource line: 122\n"),
        "{body}"
    );
    assert!(body.contains("schema: not JSON"), "{body}");
    press(&mut p, KeyCode::Esc);
    press(&mut p, KeyCode::Home);
    ch(&mut p, 'i');
    assert!(
        matches!(&p.state().overlay, Some(Overlay::Text { body, .. }) if body == "no frame applied yet")
    );
    press(&mut p, KeyCode::Esc);
    ch(&mut p, '.');
    ch(&mut p, '.');
    ch(&mut p, '.');
    ch(&mut p, 'i');
    let Some(Overlay::Text { body, .. }) = p.state().overlay.clone() else {
        panic!()
    };
    assert!(
        body.contains("schema: valid (schema: outbound line)"),
        "user turn: {body}"
    );
    press(&mut p, KeyCode::Esc);
    ch(&mut p, '.');
    ch(&mut p, 'i');
    let Some(Overlay::Text { body, .. }) = p.state().overlay.clone() else {
        panic!()
    };
    assert!(
        body.contains("schema: not a control frame"),
        "system/init: {body}"
    );
}

#[test]
fn the_inspector_flags_schema_violations() {
    let mut p = open(&corrupt("flattened_envelope.jsonl"));
    press(&mut p, KeyCode::End);
    // The flattened reply is frame 5 (file line 6).
    while frame(&p) > 5 {
        ch(&mut p, ',');
    }
    ch(&mut p, 'i');
    let Some(Overlay::Text { body, .. }) = p.state().overlay.clone() else {
        panic!()
    };
    assert!(body.contains("source line: 6\n"), "{body}");
    assert!(body.contains("schema: INVALID: does not match"), "{body}");
    // Frames: initialize, its reply, the user turn, then the non-JSON line (file line 6: the
    // file has a blank line 5).
    let mut p = open(&corrupt("not_json.jsonl"));
    ch(&mut p, '.');
    ch(&mut p, '.');
    ch(&mut p, '.');
    assert_eq!(frame(&p), 4);
    ch(&mut p, 'i');
    let Some(Overlay::Text { body, .. }) = p.state().overlay.clone() else {
        panic!()
    };
    assert!(
        body.starts_with("direction: in (agent → switchboard)\nsource line: 6\n"),
        "{body}"
    );
    assert!(body.contains("schema: not JSON"), "{body}");
    assert!(body.ends_with("Error: the agent crashed {"), "{body}");
}

/// Every frame's source line points at the line of the file that holds it (recordings: the
/// entry's `line`; cassettes: the array element in the pretty-printed file).
#[test]
fn source_lines_point_at_the_frame_in_the_file() {
    let mut files = ours();
    files.extend(cassettes().unwrap_or_default());
    files.push(corrupt("unanswered.cassette.json"));
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let l = load(&path, None).unwrap();
        for f in &l.frames {
            let at = lines[f.src_line - 1].trim().trim_end_matches(',');
            let held = match l.format {
                Format::Recording => serde_json::from_str::<Value>(at).unwrap()["line"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                _ => serde_json::from_str::<String>(at).unwrap(),
            };
            assert_eq!(held, f.text, "{}:{}", stem(&path), f.src_line);
        }
    }
}

#[test]
fn play_pause_and_speed() {
    let mut p = open(&our("bash_write"));
    let view = |p: &Player| p.state().replay.clone().unwrap();
    assert_eq!(view(&p).speed, "1×");
    assert!(!view(&p).playing);
    assert_eq!(p.next_delay(), None, "paused");
    ch(&mut p, ' ');
    assert!(view(&p).playing);
    // In recorded time: the gap to the next frame.
    let gap = |p: &Player| {
        let i = frame(p);
        p.frame(i).ts.unwrap() - p.frame(i - 1).ts.unwrap()
    };
    // Find a frame followed by a gap.
    while gap(&p) == 0 {
        p.tick();
    }
    let g = gap(&p);
    assert!(g > 0 && g < 2000, "{g}");
    let ms = |p: &Player| p.next_delay().unwrap().as_secs_f64() * 1000.0;
    assert!((ms(&p) - g as f64).abs() < 0.01, "1×: {} vs {g}", ms(&p));
    ch(&mut p, '+');
    assert_eq!(view(&p).speed, "2×");
    assert!((ms(&p) - g as f64 / 2.0).abs() < 0.01);
    ch(&mut p, '+');
    ch(&mut p, '+');
    assert_eq!(view(&p).speed, "100×");
    assert!((ms(&p) - g as f64 / 100.0).abs() < 0.01);
    ch(&mut p, '+');
    assert_eq!(view(&p).speed, "max");
    ch(&mut p, '+');
    assert_eq!(view(&p).speed, "max", "clamped");
    for _ in 0..SPEEDS.len() + 1 {
        ch(&mut p, '-');
    }
    assert_eq!(view(&p).speed, "0.5×", "clamped");
    assert!((ms(&p) - g as f64 * 2.0).abs() < 0.01);
    // One frame per tick at a finite speed.
    let at = frame(&p);
    p.tick();
    assert_eq!(frame(&p), at + 1);
    // Pause: ticks do nothing.
    ch(&mut p, ' ');
    assert!(!view(&p).playing);
    p.tick();
    assert_eq!(frame(&p), at + 1);
    // As fast as possible: batches until the end, then stops.
    for _ in 0..SPEEDS.len() {
        ch(&mut p, '+');
    }
    ch(&mut p, ' ');
    while view(&p).playing {
        p.tick();
    }
    assert_eq!(frame(&p), p.total());
    // Space at the end plays again from the start.
    ch(&mut p, ' ');
    assert!(view(&p).playing);
    assert_eq!(frame(&p), 0);
    // Stepping pauses.
    ch(&mut p, '.');
    assert!(!view(&p).playing);
    assert_eq!(frame(&p), 1);
    // The footer says so.
    p.feeder.state.size = (120, 40);
    let text = screen(p.state(), 120, 40);
    assert!(
        text.contains("replay · frame 1/121 · 1970-01-01T00:00:00.001Z · ‖ paused max"),
        "{text}"
    );
    // q quits.
    ch(&mut p, 'q');
    assert!(p.quit);
}
