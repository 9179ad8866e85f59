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

/// `(line, rule)` of each finding printed for one file.
fn lines_rules(out: &str) -> Vec<(usize, String)> {
    findings(out)
        .into_iter()
        .map(|(_, line, rule, _)| (line, rule))
        .collect()
}

#[test]
fn validate_refuses_an_empty_file() {
    let dir = scratch("validate-empty");
    for (name, text) in [("empty.jsonl", ""), ("blank.jsonl", "\n  \n\t\n")] {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        for extra in [&[][..], &["--format", "jsonl"], &["--format", "recording"]] {
            let o = validate(std::slice::from_ref(&p), extra);
            let out = stdout(&o);
            assert_eq!(o.status.code(), Some(2), "{name} {extra:?}: {out}");
            assert!(out.contains(":0: unreadable: "), "{out}");
            assert!(out.ends_with("0 problem(s), 1 unreadable\n"), "{out}");
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn validate_reports_a_recording_cut_mid_line_by_its_line_and_exits_2() {
    let dir = scratch("validate-cut");
    let whole = std::fs::read_to_string(our("bash_write")).unwrap();
    let last_line = whole.trim_end().lines().count();
    // Cut in the middle of the last entry: the recorder died mid-write.
    let cut = &whole[..whole.trim_end().len() - 20];
    let p = dir.join("cut.jsonl");
    std::fs::write(&p, cut).unwrap();
    let o = validate(std::slice::from_ref(&p), &[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    let found = lines_rules(&out);
    assert!(
        found.contains(&(last_line, "unreadable-tail".to_string())),
        "{out}"
    );
    assert!(out.contains("ends mid-line"), "{out}");
    assert!(out.ends_with(" 1 unreadable\n"), "{out}");
    // The same in the JSON report.
    let o = validate(std::slice::from_ref(&p), &["--json"]);
    assert_eq!(o.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["unreadable"], 1);
    assert_eq!(doc["files"][0]["report"]["unreadable"], true);
    // A JSONL wire log cut mid-line as well.
    let log: Vec<String> = load(&our("bash_write"), None)
        .unwrap()
        .frames
        .iter()
        .filter(|f| matches!(f.dir, Dir::In | Dir::Out))
        .map(|f| f.text.clone())
        .collect();
    let mut text = log.join("\n");
    text.truncate(text.len() - 10);
    let p = dir.join("cut-log.jsonl");
    std::fs::write(&p, &text).unwrap();
    let o = validate(std::slice::from_ref(&p), &[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(
        lines_rules(&out).contains(&(log.len(), "unreadable-tail".to_string())),
        "{out}"
    );
    // A complete last line without a final newline is no cut.
    let p = dir.join("no-newline.jsonl");
    std::fs::write(&p, whole.trim_end()).unwrap();
    assert_clean(&[p]);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_request_pending_when_the_agent_exited_is_informational() {
    let dir = scratch("validate-exited");
    // unanswered.jsonl: two permissions (5, 6), only the second answered (7). Add the agent's
    // death after them: the first could never be answered.
    let text = std::fs::read_to_string(corrupt("unanswered.jsonl")).unwrap();
    let note = json!({"ts": 900, "dir": "note", "line": "agent exited: exit code 1"});
    let p = dir.join("exited.jsonl");
    std::fs::write(&p, format!("{}\n{note}\n", text.trim_end())).unwrap();
    let o = validate(std::slice::from_ref(&p), &[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert_eq!(lines_rules(&out), vec![(5, "agent-exited".to_string())]);
    assert!(out.contains("when the agent exited (line 9)"), "{out}");
    assert!(out.ends_with(" 0 problem(s), 0 unreadable\n"), "{out}");
    // With a real problem next to it, the exit code is the problem's alone.
    let answered_twice = std::fs::read_to_string(corrupt("answered_twice.jsonl")).unwrap();
    let p2 = dir.join("twice-exited.jsonl");
    std::fs::write(&p2, format!("{}\n{note}\n", answered_twice.trim_end())).unwrap();
    let o = validate(&[p2], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    // ACP: a permission request pending when the agent died.
    let acp = [
        json!({"switchboard_recording":1,"backend":"acp","argv":["agent"],"cwd":"/w",
            "switchboard_version":"t","started_ms":0,"started":"t"}),
        json!({"ts":1,"dir":"out","line":
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#}),
        json!({"ts":2,"dir":"in","line":
            r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#}),
        json!({"ts":3,"dir":"in","line":
            r#"{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"a","name":"Allow","kind":"allow_once"}]}}"#}),
        json!({"ts":4,"dir":"note","line":"agent exited: signal 9"}),
    ];
    let p = dir.join("acp-exited.jsonl");
    let body: Vec<String> = acp.iter().map(Value::to_string).collect();
    std::fs::write(&p, body.join("\n") + "\n").unwrap();
    let o = validate(std::slice::from_ref(&p), &[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert_eq!(lines_rules(&out), vec![(4, "agent-exited".to_string())]);
    // Without the note it is a problem.
    std::fs::write(&p, body[..4].join("\n") + "\n").unwrap();
    let o = validate(std::slice::from_ref(&p), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert_eq!(
        lines_rules(&stdout(&o)),
        vec![(4, "unanswered".to_string())]
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_cassette_that_is_not_pretty_printed_reports_real_lines() {
    let dir = scratch("validate-compact-cassette");
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(corrupt("unanswered.cassette.json")).unwrap(),
    )
    .unwrap();
    // On one line: every finding is on line 1, none on line 0.
    let p = dir.join("compact.cassette.json");
    std::fs::write(&p, serde_json::to_string(&doc).unwrap()).unwrap();
    let out = stdout(&validate(std::slice::from_ref(&p), &[]));
    let mut found = lines_rules(&out);
    found.sort();
    assert_eq!(
        found,
        vec![
            (1, "unanswered".to_string()),
            (1, "unknown-request-id".to_string())
        ],
        "{out}"
    );
    // Laid out another way (two elements on one line, the key's array opening on its own
    // line): each finding on the line where its element starts.
    let ev: Vec<String> = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect();
    let co: Vec<String> = doc["controlOut"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect();
    let text = format!(
        "{{\"events\":\n[\n{}, {},\n\n{}],\n\"controlOut\": [{},\n{},\n{}]}}\n",
        ev[0], ev[1], ev[2], co[0], co[1], co[2]
    );
    let p = dir.join("odd.cassette.json");
    std::fs::write(&p, &text).unwrap();
    let out = stdout(&validate(std::slice::from_ref(&p), &[]));
    assert_eq!(
        lines_rules(&out),
        vec![
            (3, "unanswered".to_string()),
            (8, "unknown-request-id".to_string())
        ],
        "{out}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// Run `switchboard validate FILE`: (exit code, stdout, peak RSS in bytes of that process alone).
// The child is reaped by `wait4`, which also gives its own peak RSS (`Child::wait` does not).
#[allow(clippy::zombie_processes)]
fn validate_measured(file: &Path) -> (i32, String, u64) {
    let out_path = file.with_extension("out");
    let out = std::fs::File::create(&out_path).unwrap();
    let child = bin().arg("validate").arg(file).stdout(out).spawn().unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child by pid and writes into locals we own.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut ru) };
    assert_eq!(pid, child.id() as libc::pid_t);
    assert!(libc::WIFEXITED(status), "validate did not exit: {status}");
    let text = std::fs::read_to_string(&out_path).unwrap();
    (libc::WEXITSTATUS(status), text, ru.ru_maxrss as u64 * 1024)
}

#[test]
fn validate_reads_a_large_recording_as_a_stream() {
    // About 64 MB of answered permissions and streamed text: validate's memory must not grow
    // with the file (loading it whole took more than twice its size).
    let dir = scratch("validate-stream");
    let p = dir.join("big.jsonl");
    let head = std::fs::read_to_string(corrupt("answered_twice.jsonl")).unwrap();
    let mut lines = head.lines().take(6).map(str::to_string).collect::<Vec<_>>();
    let (ask, allow) = (lines[4].clone(), lines[5].clone());
    let pad = "x".repeat(400);
    let delta = json!({"ts": 1, "dir": "in", "line": json!({"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":pad}},"parent_tool_use_id":null,"session_id":"s","uuid":"u"}).to_string()}).to_string();
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
    use std::io::Write;
    for l in lines.drain(..4) {
        writeln!(f, "{l}").unwrap();
    }
    let mut size = 0;
    let mut n = 0u64;
    while size < 64 << 20 {
        // The same request id again each time, answered each time: ids stay few.
        for l in [&delta, &delta, &delta, &ask, &allow] {
            writeln!(f, "{l}").unwrap();
            size += l.len() + 1;
        }
        n += 5;
    }
    f.flush().unwrap();
    drop(f);
    let (code, out, peak) = validate_measured(&p);
    assert_eq!(code, 0, "{}", &out[out.len().saturating_sub(500)..]);
    assert!(out.contains(&format!("{} frame(s)", n + 3)), "{out}");
    assert!(
        peak < (size as u64) / 2,
        "validate peaked at {} MiB on a {} MiB recording",
        peak >> 20,
        size >> 20
    );
    std::fs::remove_dir_all(dir).ok();
}
