use super::*;
use crate::workspace::manifest::{ManifestWriter, lock};
use crate::workspace::saved;

fn temp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sb-resume-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn recording(path: &Path, lines: &[&str]) {
    let mut text = String::from(
        "{\"switchboard_recording\":1,\"backend\":\"claude\",\"argv\":[],\"cwd\":\"/\",\"started_ms\":1000}\n",
    );
    for l in lines {
        text.push_str(l);
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_crashed_workspace_is_planned_from_its_manifest_and_a_closed_one_is_left_alone() {
    let dir = temp("plan");
    let m = dir.join("workspace-20261207T000000Z.json");
    let rec = dir.join("claude-1.jsonl");
    recording(
        &rec,
        &[
            "{\"ts\":2000,\"dir\":\"in\",\"line\":\"{}\"}\n",
            "{\"ts\":5000,\"dir\":\"in\",\"line\":\"{}\"}\n",
            // Torn by the kill: not counted.
            "{\"ts\":9000,\"dir\":\"in\",\"li",
        ],
    );
    let mut w = ManifestWriter::create(&m, 1000).unwrap();
    let extra = dir.join("extra-rules.toml");
    w.describe(Some("work"), None, std::slice::from_ref(&extra))
        .unwrap();
    w.session_opened(0, "api", "claude", Some(&rec), 1000)
        .unwrap();
    let mut p = SessionProfile::new("api", ProfileKind::Claude, dir.clone());
    p.model = Some("m".into());
    w.session_resume(0, Some(saved::to_json(&p)), Some("sess-1"), None)
        .unwrap();
    let rule = crate::core::rules::RuleSpec {
        action: crate::core::rules::Action::Allow,
        tool: "Bash".into(),
        pattern: Some("touch one.txt".into()),
        exact: true,
    };
    w.session_rule(0, &rule).unwrap();
    w.session_opened(1, "own terminals", "adopted", None, 1000)
        .unwrap();
    w.session_opened(2, "done", "claude", None, 1000).unwrap();
    w.session_resume(2, Some(saved::to_json(&p)), None, None)
        .unwrap();
    w.session_closed(2, 1500, Some(0)).unwrap();
    drop(w);
    // The manifest last written long before the recording's last frame: the time the
    // workspace stopped is the later of the two (with the mtime of now, the recording's
    // could not be told from it).
    let early = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1500);
    std::fs::File::options()
        .write(true)
        .open(&m)
        .unwrap()
        .set_modified(early)
        .unwrap();

    assert_eq!(last_ts(&rec), Some(5000));
    let Found::Crashed { path, manifest } = find(Some(m.to_str().unwrap())).unwrap() else {
        panic!("an unclosed manifest nobody holds is crashed");
    };
    // The `--rules` files it was started with, for the resume to add again.
    assert_eq!(manifest.rules, vec![extra.display().to_string()]);
    let plan = plan(&path, *manifest, &[]);
    assert_eq!(
        plan.sessions.len(),
        1,
        "the closed session does not restart"
    );
    let b = &plan.sessions[0];
    assert_eq!((b.mid, b.agent_session.as_deref()), (0, Some("sess-1")));
    assert_eq!(b.profile.model.as_deref(), Some("m"));
    assert_eq!(b.history, vec![rec.clone()]);
    // Its "this session" rule comes back with it.
    assert_eq!(b.rules, vec![rule]);
    assert_eq!(plan.stopped_ms, 5000, "the recording's last whole frame");
    assert_eq!(plan.left.len(), 1, "{:?}", plan.left);
    assert!(plan.left[0].contains("hooks"), "{:?}", plan.left);

    // Held by a live process: running, not crashed.
    let held = lock::hold(&m).unwrap().unwrap();
    assert!(matches!(
        find(Some(m.to_str().unwrap())).unwrap(),
        Found::Running { .. }
    ));
    drop(held);

    // The resume is written before its agents start, then reopened for them: one resume,
    // not two; a later resume is another.
    let doc = manifest::load_manifest(&m).unwrap();
    let early = ManifestWriter::reopen(&m, doc, Vec::new(), 5000, 6000).unwrap();
    assert!(!manifest::load_manifest(&m).unwrap().resumed.is_empty());
    let doc = early.manifest().clone();
    drop(early);
    let w = ManifestWriter::reopen(&m, doc, Vec::new(), 5000, 6000).unwrap();
    assert_eq!(manifest::load_manifest(&m).unwrap().resumed.len(), 1);
    let doc = w.manifest().clone();
    drop(w);
    let w = ManifestWriter::reopen(&m, doc, Vec::new(), 6500, 6600).unwrap();
    assert_eq!(w.manifest().resumed.len(), 2);
    drop(w);

    // Stopped cleanly: nothing to resume.
    let doc = manifest::load_manifest(&m).unwrap();
    let mut w = ManifestWriter::reopen(&m, doc, Vec::new(), 6500, 6600).unwrap();
    w.closed(7000).unwrap();
    drop(w);
    assert!(matches!(
        find(Some(m.to_str().unwrap())).unwrap(),
        Found::Closed {
            closed_ms: 7000,
            ..
        }
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_reopened_manifest_continues_its_sessions_and_numbers_new_ones_after_them() {
    let dir = temp("reopen");
    let m = dir.join("workspace-x.json");
    let mut w = ManifestWriter::create(&m, 1000).unwrap();
    w.session_opened(0, "a", "claude", Some(&dir.join("a1.jsonl")), 1000)
        .unwrap();
    w.session_opened(1, "b", "acp", Some(&dir.join("b1.jsonl")), 1000)
        .unwrap();
    drop(w);
    let doc = manifest::load_manifest(&m).unwrap();
    // Only b comes back, as app session 0; a new session 1 opens after it.
    let mut w = ManifestWriter::reopen(&m, doc, vec![(0, 1)], 4000, 5000).unwrap();
    w.session_opened(0, "b", "acp", None, 5000).unwrap();
    w.session_recording(0, &dir.join("b2.jsonl")).unwrap();
    w.session_opened(1, "c", "claude", None, 5100).unwrap();
    let d = crate::core::gate::Decision::Continue;
    w.decision(5200, 0, "g1", &d, "human").unwrap();
    w.decision(5300, 1, "g2", &d, "human").unwrap();
    drop(w);
    let doc = manifest::load_manifest(&m).unwrap();
    assert_eq!(doc.resumed.len(), 1);
    assert_eq!(
        (doc.resumed[0].stopped_ms, doc.resumed[0].resumed_ms),
        (4000, 5000)
    );
    let b = doc.session(1).unwrap();
    assert_eq!(b.recording.as_deref(), dir.join("b1.jsonl").to_str());
    assert_eq!(
        b.continued,
        vec![dir.join("b2.jsonl").display().to_string()]
    );
    let c = doc
        .session(2)
        .expect("the new session takes the next free id");
    assert_eq!(c.name, "c");
    let by_session: Vec<u32> = doc.decisions.iter().map(|d| d.session).collect();
    assert_eq!(by_session, [1, 2], "decisions name the manifest's ids");
    assert!(doc.closed_ms.is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

/// An agent's session id goes on its command line: only an id's characters are kept, never
/// one that reads as a flag; and a manifest others can write is not resumed.
#[test]
fn a_flag_for_a_session_id_or_a_manifest_others_can_write_is_refused() {
    use crate::workspace::manifest::agent_session_ok;
    for ok in [
        "0f3c1b2e-9d4a-4c57-b1f3-6a2e8c9d0b1a",
        "ses_4fGh2",
        "a:b.c-d",
    ] {
        assert!(agent_session_ok(ok), "{ok}");
    }
    let long = "a".repeat(257);
    for bad in [
        "",
        "--dangerously-skip-permissions",
        "-x",
        "../x",
        ".x",
        "a b",
        "a/b",
        "a\u{1b}[2J",
        long.as_str(),
    ] {
        assert!(!agent_session_ok(bad), "{bad:?}");
    }
    let dir = temp("flag");
    let m = dir.join("workspace-20261207T000001Z.json");
    let mut w = ManifestWriter::create(&m, 1000).unwrap();
    w.session_opened(0, "api", "claude", None, 1000).unwrap();
    let p = SessionProfile::new("api", ProfileKind::Claude, dir.clone());
    w.session_resume(
        0,
        Some(saved::to_json(&p)),
        Some("--dangerously-skip-permissions"),
        None,
    )
    .unwrap();
    drop(w);
    let Found::Crashed { path, manifest } = find(Some(m.to_str().unwrap())).unwrap() else {
        panic!("crashed");
    };
    assert_eq!(
        manifest.sessions[0].resume.as_ref().unwrap().agent_session,
        None
    );
    assert_eq!(plan(&path, *manifest, &[]).sessions[0].agent_session, None);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&m, std::fs::Permissions::from_mode(0o620)).unwrap();
        let e = find(Some(m.to_str().unwrap())).unwrap_err();
        assert!(e.contains("others can write it"), "{e}");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A resume that read a crashed manifest and then got its lock only after another resume
/// ran finds the manifest changed (or closed) and starts nothing.
#[test]
fn a_manifest_changed_before_the_lock_was_taken_is_not_resumed_again() {
    let dir = temp("race");
    let m = dir.join("workspace-r.json");
    let mut w = ManifestWriter::create(&m, 1000).unwrap();
    w.session_opened(0, "a", "claude", Some(&dir.join("a1.jsonl")), 1000)
        .unwrap();
    drop(w);
    let planned = manifest::load_manifest(&m).unwrap();
    assert!(still_as_planned(&m, &planned).is_ok());
    // Another resume reopens it (and runs)...
    let doc = manifest::load_manifest(&m).unwrap();
    let mut w = ManifestWriter::reopen(&m, doc, vec![(0, 0)], 4000, 5000).unwrap();
    w.session_opened(0, "a", "claude", None, 5000).unwrap();
    drop(w);
    let e = still_as_planned(&m, &planned).unwrap_err();
    assert!(e.contains("changed while this resume read it"), "{e}");
    // ...and stops cleanly.
    let doc = manifest::load_manifest(&m).unwrap();
    let mut w = ManifestWriter::reopen(&m, doc, vec![(0, 0)], 6000, 7000).unwrap();
    w.closed(8000).unwrap();
    drop(w);
    let e = still_as_planned(&m, &planned).unwrap_err();
    assert!(e.contains("stopped cleanly"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
