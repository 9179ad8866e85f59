use super::*;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sb-manifest-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn allow() -> Decision {
    Decision::Allow {
        updated_input: None,
        always: false,
    }
}

/// A writer killed between writing its temporary file and renaming it leaves the file beside
/// the manifest; the next writer of that manifest removes it (its process is gone), and
/// leaves a live process's alone.
#[test]
fn a_dead_writers_temporary_file_is_removed_by_the_next_writer() {
    let dir = scratch("stale");
    let path = dir.join("workspace-1.json");
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = dir.join(format!(".workspace-1.json.switchboard-{dead}-0.tmp"));
    let live = dir.join(".workspace-1.json.switchboard-1-0.tmp");
    std::fs::write(&stale, "{\"half").unwrap();
    std::fs::write(&live, "{\"half").unwrap();
    let w = ManifestWriter::create(&path, 0).unwrap();
    assert!(!stale.exists() && live.exists());
    // A resume's writer does the same.
    std::fs::write(&stale, "{\"half").unwrap();
    let doc = w.manifest().clone();
    drop(w);
    ManifestWriter::reopen(&path, doc, Vec::new(), 1, 2).unwrap();
    assert!(!stale.exists() && live.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn writes_a_private_document_that_reads_back_and_matches_the_schema() {
    let dir = scratch("roundtrip");
    let path = dir.join("workspace-1.json");
    let mut w = ManifestWriter::create(&path, 1_000).unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    w.session_opened(0, "api", "claude", Some(Path::new("/r/a.jsonl")), 1_010)
        .unwrap();
    w.session_opened(1, "docs", "acp", Some(Path::new("b.jsonl")), 1_020)
        .unwrap();
    w.decision(1_100, 0, "req-1", &allow(), "human").unwrap();
    w.decision(
        1_200,
        1,
        "acp:0",
        &Decision::Deny {
            message: "no".into(),
            interrupt: true,
        },
        "batch",
    )
    .unwrap();
    w.session_closed(1, 1_300, Some(3)).unwrap();
    // A rule made for session 0 only (`a`), kept once with it, hostile text and all.
    let rule = crate::core::rules::RuleSpec {
        action: crate::core::rules::Action::Allow,
        tool: "Bash".into(),
        pattern: Some("rm -rf \"$HOME\"\n\u{1b}[2J".into()),
        exact: true,
    };
    w.session_rule(0, &rule).unwrap();
    w.session_rule(0, &rule).unwrap();
    assert!(w.session_rule(9, &rule).is_err(), "no such session");
    let m = load_manifest(&path).unwrap();
    assert_eq!(&m, w.manifest());
    assert_eq!(m.session(0).unwrap().rules, vec![rule]);
    assert!(m.session(1).unwrap().rules.is_empty());
    assert_eq!(m.started, "1970-01-01T00:00:01Z");
    assert_eq!(m.decisions[1].decision, "deny_interrupt");
    assert_eq!(m.session(1).unwrap().closed_ms, Some(1_300));
    assert_eq!(m.session(1).unwrap().exit_code, Some(3));
    // A relative recording resolves next to the manifest, an absolute one stays.
    assert_eq!(
        Manifest::recording_path(&path, m.session(1).unwrap()).unwrap(),
        dir.join("b.jsonl")
    );
    assert_eq!(
        Manifest::recording_path(&path, m.session(0).unwrap()).unwrap(),
        PathBuf::from("/r/a.jsonl")
    );
    // One element per line: the second decision is on the line before the closing bracket.
    let text = std::fs::read_to_string(&path).unwrap();
    let lines = element_lines(&text, "decisions");
    assert_eq!(lines.len(), 2);
    assert!(text.lines().nth(lines[1] - 1).unwrap().contains("acp:0"));
    assert!(is_manifest(&path));
    // No temp file is left behind.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("workspace-1.json")]);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn every_change_replaces_the_file_whole() {
    let dir = scratch("atomic");
    let path = dir.join("m.json");
    let mut w = ManifestWriter::create(&path, 0).unwrap();
    w.session_opened(0, "a", "demo", None, 0).unwrap();
    let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let before = ino(&path);
    // A reader holding the old file keeps reading the old, whole document.
    let old = std::fs::File::open(&path).unwrap();
    w.decision(5, 0, "g1", &allow(), "rule").unwrap();
    assert_ne!(ino(&path), before, "renamed over, not rewritten in place");
    let mut s = String::new();
    std::io::Read::read_to_string(&mut &old, &mut s).unwrap();
    assert!(parse(&s).unwrap().decisions.is_empty());
    assert_eq!(load_manifest(&path).unwrap().decisions.len(), 1);
    // Temp files are created new (never opened if there): a stale one from a crash (even
    // 0644) and a link planted under the next temp name are left as they are, the write
    // goes on under another name, and the result is 0600.
    let tmp = dir.join(format!(".m.json.switchboard-{}-0.tmp", std::process::id()));
    std::fs::write(&tmp, "half a docu").unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
    let target = dir.join("victim");
    std::fs::write(&target, "keep").unwrap();
    let link = dir.join(format!(".m.json.switchboard-{}-1.tmp", std::process::id()));
    std::os::unix::fs::symlink(&target, &link).unwrap();
    // A manifest made readable to others (restored from a backup at 0644) is private again.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    w.session_closed(0, 9, None).unwrap();
    assert_eq!(std::fs::read_to_string(&tmp).unwrap(), "half a docu");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(
        load_manifest(&path).unwrap().sessions[0]
            .closed_ms
            .is_some()
    );
    // The directory swapped for a link elsewhere between two writes: each write opens the
    // directory anew and is refused where it is not one.
    let moved = dir.with_extension("moved");
    std::fs::rename(&dir, &moved).unwrap();
    std::fs::write(dir.with_extension("file"), "x").unwrap();
    std::os::unix::fs::symlink(dir.with_extension("file"), &dir).unwrap();
    let e = w.decision(10, 0, "g2", &allow(), "human").unwrap_err();
    assert!(e.contains("cannot write the manifest"), "{e}");
    std::fs::remove_file(&dir).unwrap();
    std::fs::remove_file(dir.with_extension("file")).unwrap();
    std::fs::rename(&moved, &dir).unwrap();
    assert_eq!(load_manifest(&path).unwrap().decisions.len(), 1);
    std::fs::remove_dir_all(dir).ok();
}

/// A session keeps at most `MAX_SESSION_RULES` rules: past it, a rule is not kept (a resume
/// asks more, never less), and the document still matches the schema.
#[test]
fn a_session_keeps_a_bounded_list_of_its_rules() {
    let dir = scratch("rules");
    let path = dir.join("m.json");
    let mut w = ManifestWriter::create(&path, 0).unwrap();
    w.session_opened(0, "s", "claude", None, 0).unwrap();
    for i in 0..MAX_SESSION_RULES + 10 {
        let spec = crate::core::rules::RuleSpec {
            action: crate::core::rules::Action::Allow,
            tool: "Bash".into(),
            pattern: Some(format!("echo {i}")),
            exact: true,
        };
        w.session_rule(0, &spec).unwrap();
    }
    let m = load_manifest(&path).unwrap();
    let kept = &m.session(0).unwrap().rules;
    assert_eq!(kept.len(), MAX_SESSION_RULES);
    assert_eq!(kept[0].pattern.as_deref(), Some("echo 0"));
    // A deleted one goes; one past the schema's lengths is not kept (the document would no
    // longer read, and the workspace could not be resumed).
    let first = kept[0].clone();
    w.session_rule_removed(0, &first).unwrap();
    let long_tool = crate::core::rules::RuleSpec {
        tool: "T".repeat(MAX_RULE_TOOL_CHARS + 1),
        ..first.clone()
    };
    let long_pattern = crate::core::rules::RuleSpec {
        pattern: Some("p".repeat(MAX_RULE_PATTERN_CHARS + 1)),
        ..first.clone()
    };
    w.session_rule(0, &long_tool).unwrap();
    w.session_rule(0, &long_pattern).unwrap();
    let m = load_manifest(&path).unwrap();
    let kept = &m.session(0).unwrap().rules;
    assert_eq!(kept.len(), MAX_SESSION_RULES - 1);
    assert!(!kept.contains(&first));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn the_decision_list_is_bounded_and_says_so() {
    let dir = scratch("bounded");
    let path = dir.join("m.json");
    let mut w = ManifestWriter::create(&path, 0).unwrap().with_limit(3);
    w.session_opened(7, "s", "claude", None, 0).unwrap();
    for i in 0..5 {
        w.decision(i, 7, &format!("g{i}"), &allow(), "rule")
            .unwrap();
    }
    let m = load_manifest(&path).unwrap();
    assert_eq!(m.decisions.len(), 3);
    assert_eq!(m.decisions_total, 5);
    assert!(m.decisions_truncated);
    assert_eq!(m.decisions[2].gate_id, "g2");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn hostile_names_and_ids_are_escaped_or_refused() {
    let dir = scratch("hostile");
    let path = dir.join("m.json");
    let mut w = ManifestWriter::create(&path, 0).unwrap();
    let name = "api\u{1b}]0;pwned\u{7}\u{1b}[2J\"},\n{\"x\":1";
    w.session_opened(0, name, "claude", None, 0).unwrap();
    let gate = "id\u{1b}[31m\"\\\n";
    w.decision(1, 0, gate, &allow(), "human").unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert!(!bytes.contains(&0x1b), "no raw escape byte in the file");
    let m = load_manifest(&path).unwrap();
    assert_eq!(m.sessions[0].name, name);
    assert_eq!(m.decisions[0].gate_id, gate);
    // Refused, not written: unknown session, unknown `by`, bad backend, over-long values,
    // a session opened twice or closed twice.
    assert!(w.decision(2, 9, "g", &allow(), "human").is_err());
    assert!(w.decision(2, 0, "g", &allow(), "robot").is_err());
    assert!(
        w.decision(2, 0, &"x".repeat(513), &allow(), "human")
            .is_err()
    );
    assert!(w.decision(2, 0, "", &allow(), "human").is_err());
    assert!(w.session_opened(1, "b", "Claude\u{1b}", None, 0).is_err());
    assert!(
        w.session_opened(1, &"n".repeat(257), "acp", None, 0)
            .is_err()
    );
    assert!(w.session_opened(0, "again", "acp", None, 0).is_err());
    w.session_closed(0, 3, Some(-1)).unwrap();
    assert!(w.session_closed(0, 4, None).is_err());
    assert!(w.session_closed(5, 4, None).is_err());
    let m = load_manifest(&path).unwrap();
    assert_eq!((m.sessions.len(), m.decisions.len()), (1, 1));
    assert_eq!(m.decisions_total, 1);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn the_reader_names_the_line_and_key_of_a_problem() {
    let mut m = Manifest::new(0);
    m.sessions.push(SessionEntry {
        rules: Vec::new(),
        id: 0,
        name: "a".into(),
        backend: "claude".into(),
        recording: None,
        opened_ms: 0,
        closed_ms: None,
        exit_code: None,
        continued: Vec::new(),
        resume: None,
    });
    for (i, by) in ["human", "robot"].iter().enumerate() {
        m.decisions.push(DecisionEntry {
            at_ms: i as u64,
            session: 0,
            gate_id: format!("g{i}"),
            decision: "allow".into(),
            by: by.to_string(),
        });
    }
    let text = m.to_text();
    let e = parse(&text).unwrap_err();
    let line = element_lines(&text, "decisions")[1];
    assert!(
        e.starts_with(&format!("line {line}: /decisions/1/by: ")),
        "{e}"
    );
    // Unknown keys, a wrong version, not JSON.
    let text = text.replacen("\"robot\"", "\"human\"", 1);
    parse(&text).unwrap();
    let extra = text.replacen("\"started_ms\"", "\"extra\": 1,\n  \"started_ms\"", 1);
    assert!(parse(&extra).unwrap_err().contains("extra"));
    let v2 = text.replacen(
        "\"switchboard_workspace\": 1",
        "\"switchboard_workspace\": 2",
        1,
    );
    assert!(parse(&v2).unwrap_err().contains("/switchboard_workspace"));
    assert!(parse("{").unwrap_err().starts_with("not JSON"));
}

#[test]
fn detection_reads_only_the_first_key() {
    assert!(is_manifest_text(b" \n{\n  \"switchboard_workspace\": 1"));
    assert!(!is_manifest_text(b"{\"switchboard_recording\":1}"));
    assert!(!is_manifest_text(
        b"{\"events\":[\"switchboard_workspace\"]}"
    ));
    assert!(!is_manifest_text(b""));
    assert!(!is_manifest(Path::new("/nonexistent/m.json")));
    // A directory (or a FIFO) is never opened as one.
    let dir = scratch("detect");
    let named = dir.join("workspace-x.json");
    std::fs::create_dir(&named).unwrap();
    assert!(!is_manifest(&named));
    assert!(
        read_text(&named)
            .unwrap_err()
            .contains("not a regular file")
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn decision_kinds_are_the_schema_enum() {
    let schema: Value = serde_json::from_str(crate::schema::MANIFEST_SCHEMA_SOURCE).unwrap();
    let kinds: Vec<&str> = schema["$defs"]["decision"]["properties"]["decision"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let bys: Vec<&str> = schema["$defs"]["decision"]["properties"]["by"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(bys, BY);
    let all = [
        allow(),
        Decision::Allow {
            updated_input: Some(Value::Null),
            always: false,
        },
        Decision::Allow {
            updated_input: None,
            always: true,
        },
        Decision::Deny {
            message: String::new(),
            interrupt: false,
        },
        Decision::Deny {
            message: String::new(),
            interrupt: true,
        },
        Decision::Answer { answers: vec![] },
        Decision::DialogComplete {
            result: Value::Null,
        },
        Decision::DialogCancel,
        Decision::ElicitAccept {
            content: Value::Null,
        },
        Decision::ElicitDecline,
        Decision::ElicitCancel,
        Decision::Continue,
        Decision::Block {
            reason: String::new(),
        },
        Decision::Raw { body: Value::Null },
        Decision::Option {
            option_id: "o".into(),
            name: "n".into(),
            allow: true,
        },
        Decision::Option {
            option_id: "o".into(),
            name: "n".into(),
            allow: false,
        },
        Decision::Cancelled,
        Decision::OwnTerminal { why: String::new() },
    ];
    let mut ours: Vec<&str> = all.iter().map(decision_kind).collect();
    ours.sort_unstable();
    let mut theirs = kinds.clone();
    theirs.sort_unstable();
    assert_eq!(ours, theirs);
}

/// The sink applies changes at once and writes in the background, coalesced; its last state
/// is on disk once it is dropped, and a refused change is refused at once.
#[test]
fn the_sink_writes_every_change_by_the_time_it_is_dropped() {
    let dir = scratch("sink");
    let path = dir.join("workspace-sink.json");
    let sink = ManifestSink::create(&path, 1_000).unwrap();
    sink.change(|w| w.session_opened(0, "api", "claude", None, 1_001))
        .unwrap();
    for n in 0..2_000u64 {
        sink.change(|w| w.decision(1_002 + n, 0, &format!("req-{n}"), &allow(), "rule"))
            .unwrap();
    }
    assert!(
        sink.change(|w| w.decision(5_000, 9, "x", &allow(), "human"))
            .is_err(),
        "an unknown session is refused at once"
    );
    sink.change(|w| w.session_recording(0, Path::new("/r/a.jsonl")))
        .unwrap();
    drop(sink);
    let m = load_manifest(&path).unwrap();
    assert_eq!(m.decisions.len(), 2_000);
    assert_eq!(m.sessions[0].recording.as_deref(), Some("/r/a.jsonl"));
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    std::fs::remove_dir_all(dir).ok();
}
