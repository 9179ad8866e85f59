//! `switchboard validate` on clean and broken files, its JSON report and format forcing.

use super::*;

#[test]
fn validate_is_clean_on_our_recordings() {
    assert_clean(&ours());
}

#[test]
fn validate_is_clean_on_the_cassettes_and_their_imports() {
    let Some(cs) = cassettes() else { return };
    assert_clean(&cs);
    let dir = scratch("validate-imports");
    let mut imported = Vec::new();
    for c in &cs {
        let dst = dir.join(stem(c).replace(".cassette.json", ".jsonl"));
        let o = run(&["import", c.to_str().unwrap(), "-o", dst.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        imported.push(dst);
    }
    assert_clean(&imported);
    std::fs::remove_dir_all(dir).ok();
}

/// (file, [(line, rule)]) of each broken fixture: exactly these findings, nothing else.
const CORRUPT: &[(&str, &[(usize, &str)])] = &[
    ("reply_to_withdrawn.jsonl", &[(7, "reply-to-withdrawn")]),
    ("answered_twice.jsonl", &[(7, "answered-twice")]),
    ("duplicate_id.jsonl", &[(6, "duplicate-id")]),
    (
        "unknown_request_id.jsonl",
        &[(7, "unknown-request-id"), (8, "unknown-request-id")],
    ),
    ("unanswered.jsonl", &[(5, "unanswered")]),
    ("unanswered_ours.jsonl", &[(4, "unanswered-ours")]),
    (
        "ask_keyed_by_header.jsonl",
        &[(6, "answers"), (6, "answers")],
    ),
    (
        "ask_array_value.jsonl",
        &[(6, "answers"), (6, "decision-fidelity")],
    ),
    (
        "flattened_envelope.jsonl",
        &[(6, "schema"), (6, "decision-fidelity")],
    ),
    ("fidelity_extra_field.jsonl", &[(6, "decision-fidelity")]),
    ("not_json.jsonl", &[(6, "not-json"), (7, "unreadable")]),
    (
        "unanswered.cassette.json",
        &[(6, "unanswered"), (12, "unknown-request-id")],
    ),
];

/// `FILE:LINE: rule: message` lines (continuation lines of a message start with spaces).
fn findings(out: &str) -> Vec<(String, usize, String, String)> {
    out.lines()
        .filter(|l| !l.starts_with(' ') && l.contains(": "))
        .filter(|l| !l.ends_with(" unreadable") || l.contains(":0: "))
        .map(|l| {
            let (file, rest) = l.split_once(':').unwrap();
            let (line, rest) = rest.split_once(": ").unwrap();
            let (rule, msg) = rest.split_once(": ").unwrap();
            (
                file.to_string(),
                line.parse().unwrap_or_else(|_| panic!("{l}")),
                rule.to_string(),
                msg.to_string(),
            )
        })
        .collect()
}

#[test]
fn validate_reports_each_violation_on_its_line() {
    for (name, want) in CORRUPT {
        let path = corrupt(name);
        let o = validate(std::slice::from_ref(&path), &[]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{name}:\n{out}");
        let got: Vec<(usize, String)> = findings(&out)
            .into_iter()
            .map(|(f, l, r, _)| {
                assert_eq!(f, path.display().to_string());
                (l, r)
            })
            .collect();
        let want: Vec<(usize, String)> = want.iter().map(|(l, r)| (*l, r.to_string())).collect();
        assert_eq!(got, want, "{name}:\n{out}");
        assert!(
            out.ends_with(&format!(
                "1 file(s), {} frame(s), {} problem(s), 0 unreadable\n",
                frames_in(std::slice::from_ref(&path)),
                want.len()
            )),
            "{out}"
        );
    }
    // The messages say what is wrong.
    let msg = |name: &str| {
        let out = stdout(&validate(&[corrupt(name)], &[]));
        findings(&out)
            .into_iter()
            .map(|(_, _, _, m)| m)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        msg("reply_to_withdrawn.jsonl"),
        ["answered req-1 after the agent withdrew it"]
    );
    assert_eq!(msg("answered_twice.jsonl"), ["req-1 was already answered"]);
    assert_eq!(
        msg("unknown_request_id.jsonl"),
        [
            "reply to req-404, which no request of the agent carries",
            "the agent answered sb-99, which we never asked"
        ]
    );
    assert_eq!(
        msg("unanswered.jsonl"),
        ["can_use_tool request req-1 was never answered"]
    );
    assert_eq!(
        msg("ask_keyed_by_header.jsonl"),
        [
            "answer keyed by \"Format\", which is no question's text",
            "question \"Which log format should we use?\" has no answer"
        ]
    );
    assert_eq!(
        msg("ask_array_value.jsonl")[0],
        "answer to \"Which log format should we use?\" is not a string: [\"JSON\"]"
    );
    let flat = msg("flattened_envelope.jsonl");
    assert!(
        flat[0].contains("\"response\" is a required property"),
        "{flat:?}"
    );
    // The fidelity finding shows the envelope that was sent, not a bare `null`.
    assert!(
        flat[1].ends_with(
            "{\"behavior\":\"allow\",\"request_id\":\"req-1\",\"subtype\":\"success\",\"updatedInput\":{\"command\":\"touch created.txt\",\"description\":\"Create an empty file\"}}"
        ),
        "{flat:?}"
    );
    let out = stdout(&validate(&[corrupt("fidelity_extra_field.jsonl")], &[]));
    assert!(out.contains("\"toolUseID\":\"toolu_bash_1\""), "{out}");
    assert!(
        out.contains(
            "ours:     {\"behavior\":\"allow\",\"updatedInput\":{\"command\":\"touch created.txt\""
        ),
        "{out}"
    );
}

#[test]
fn validate_many_files_and_unreadable_input() {
    let all: Vec<PathBuf> = CORRUPT.iter().map(|(n, _)| corrupt(n)).collect();
    let o = validate(&all, &[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let n: usize = CORRUPT.iter().map(|(_, w)| w.len()).sum();
    assert_eq!(findings(&out).len(), n, "{out}");
    // Clean plus broken: 1.
    let o = validate(&[our("edit"), corrupt("unanswered.jsonl")], &[]);
    assert_eq!(o.status.code(), Some(1));
    // A missing file or a bad header: 2, even next to problems.
    let missing = manifest("fixtures/corrupt/does-not-exist.jsonl");
    for bad in [missing.clone(), corrupt("bad_header.jsonl")] {
        let o = validate(std::slice::from_ref(&bad), &[]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(2), "{out}");
        assert!(
            out.starts_with(&format!("{}:0: unreadable: ", bad.display())),
            "{out}"
        );
        assert!(
            out.ends_with("1 file(s), 0 frame(s), 0 problem(s), 1 unreadable\n"),
            "{out}"
        );
        let o = validate(&[corrupt("answered_twice.jsonl"), bad], &[]);
        assert_eq!(o.status.code(), Some(2));
    }
    let out = stdout(&validate(&[corrupt("bad_header.jsonl")], &[]));
    assert!(out.contains("unsupported recording version 2"), "{out}");
    let out = stdout(&validate(&[missing], &[]));
    assert!(out.contains("cannot read"), "{out}");
}

#[test]
fn validate_json_report_has_the_same_findings() {
    let mut files: Vec<PathBuf> = CORRUPT.iter().map(|(n, _)| corrupt(n)).collect();
    files.push(our("bash_write"));
    let text = stdout(&validate(&files, &[]));
    let o = validate(&files, &["--json"]);
    assert_eq!(o.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("--json prints JSON");
    let mut from_json = Vec::new();
    for f in doc["files"].as_array().unwrap() {
        let file = f["file"].as_str().unwrap();
        for x in f["report"]["findings"].as_array().unwrap() {
            from_json.push((
                file.to_string(),
                x["line"].as_u64().unwrap() as usize,
                x["rule"].as_str().unwrap().to_string(),
                x["message"]
                    .as_str()
                    .unwrap()
                    .lines()
                    .next()
                    .unwrap()
                    .to_string(),
            ));
        }
    }
    assert_eq!(from_json, findings(&text));
    assert_eq!(doc["problems"].as_u64().unwrap() as usize, from_json.len());
    assert_eq!(doc["unreadable"], 0);
    assert_eq!(doc["frames"].as_u64().unwrap() as usize, frames_in(&files));
    let formats: Vec<&str> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["format"].as_str().unwrap())
        .collect();
    assert!(formats.contains(&"cassette") && formats.contains(&"recording"));
    // Unreadable input in JSON.
    let o = validate(&[corrupt("bad_header.jsonl")], &["--json"]);
    assert_eq!(o.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["unreadable"], 1);
    assert!(
        doc["files"][0]["error"]
            .as_str()
            .unwrap()
            .contains("unsupported recording version")
    );
}

/// The raw wire lines of a recording (in and out, no stderr or notes), one per line.
fn wire_log(path: &Path) -> String {
    let l = load(path, Some(Format::Recording)).unwrap();
    let mut s = String::new();
    for f in l
        .frames
        .iter()
        .filter(|f| matches!(f.dir, Dir::In | Dir::Out))
    {
        s.push_str(&f.text);
        s.push('\n');
    }
    s
}

#[test]
fn validate_format_forcing_and_jsonl_wire_logs() {
    let dir = scratch("jsonl");
    // Directions of a plain wire log are inferred: they match what was recorded.
    for path in ours() {
        let rec = load(&path, None).unwrap();
        let wire: Vec<Dir> = rec
            .frames
            .iter()
            .map(|f| f.dir)
            .filter(|d| matches!(d, Dir::In | Dir::Out))
            .collect();
        let log = wire_log(&path);
        let l = load_str(&log, Some(Format::Jsonl)).unwrap();
        let got: Vec<Dir> = l.frames.iter().map(|f| f.dir).collect();
        assert_eq!(got, wire, "{}", stem(&path));
    }
    let log = dir.join("bash_write.wire.jsonl");
    std::fs::write(&log, wire_log(&our("bash_write"))).unwrap();
    let n = std::fs::read_to_string(&log).unwrap().lines().count();
    for extra in [&["--format", "jsonl"][..], &[]] {
        let o = validate(std::slice::from_ref(&log), extra);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stdout(&o));
        assert!(stdout(&o).ends_with(&format!(
            "1 file(s), {n} frame(s), 0 problem(s), 0 unreadable\n"
        )));
    }
    let o = validate(std::slice::from_ref(&log), &["--json"]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["files"][0]["format"], "jsonl");
    // Forced to the wrong format: unreadable.
    let o = validate(std::slice::from_ref(&log), &["--format", "recording"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let o = validate(&[our("edit")], &["--format", "cassette"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    // A broken recording as a wire log: the same finding, one line up (no header).
    let bad = dir.join("withdrawn.wire.jsonl");
    std::fs::write(&bad, wire_log(&corrupt("reply_to_withdrawn.jsonl"))).unwrap();
    let o = validate(std::slice::from_ref(&bad), &["--format", "jsonl"]);
    assert_eq!(o.status.code(), Some(1));
    let f = findings(&stdout(&o));
    assert_eq!(
        f.iter().map(|x| (x.1, x.2.as_str())).collect::<Vec<_>>(),
        [(6, "reply-to-withdrawn")]
    );
    // And the replay opens a wire log too.
    let mut p = Player::open(load(&log, None).unwrap());
    press(&mut p, KeyCode::End);
    assert_eq!(audits(p.state(), 0).len(), 3);
    std::fs::remove_dir_all(dir).ok();
}
