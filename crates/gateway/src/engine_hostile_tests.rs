//! Issue 21, as the hostile host played it: edits that must run as edited, ids reused for
//! other arguments, floods of refusals, and a journal whose appends fail at every point.

use super::*;
use crate::journal_file::faults;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Poll `id` until the command ends; its output.
fn finish(e: &mut Engine, id: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut n = 0;
    loop {
        n += 1;
        let out = e.on_frame(&call(
            &format!("poll-{id}-{n}"),
            "s1",
            "workspace_poll",
            json!({"commandId": id}),
        ));
        let r = &sent(&out)[0]["result"]["structuredContent"];
        if r["status"] != "running" {
            return r["output"].as_str().unwrap_or_default().to_string();
        }
        assert!(Instant::now() < deadline, "{r}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn edited(args: Value) -> Decision {
    Decision::AllowEdited(args.as_object().unwrap().clone())
}

#[test]
fn an_edited_exec_runs_as_edited_and_its_audit_row_quotes_what_ran() {
    let mut t = setup("edit-exec", Mode::Ask);
    let g = gate(&t.e.on_frame(&call(
        "x1",
        "s1",
        "workspace_exec",
        json!({"command": "touch ORIGINAL-COMMAND-RAN"}),
    )));
    assert_eq!(
        g.editable.as_ref().map(|a| a["command"].clone()),
        Some(json!("touch ORIGINAL-COMMAND-RAN")),
        "the card offers the call's own arguments for editing"
    );
    let out = t.e.decide(
        g.gate,
        edited(json!({"command": "touch EDITED-SAFE-COMMAND"})),
    );
    let Out::Ran {
        summary, outcome, ..
    } = &out[0]
    else {
        panic!("{out:?}")
    };
    assert!(summary.contains("touch EDITED-SAFE-COMMAND"), "{summary}");
    assert!(outcome.contains("edited by the owner"), "{outcome}");
    let r = &sent(&out)[0]["result"]["structuredContent"];
    assert_eq!(r["editedByOwner"], true);
    assert_eq!(r["command"], "touch EDITED-SAFE-COMMAND");
    finish(&mut t.e, r["commandId"].as_str().unwrap());
    assert!(t.base.join("proj/EDITED-SAFE-COMMAND").exists());
    assert!(!t.base.join("proj/ORIGINAL-COMMAND-RAN").exists());
}

#[test]
fn an_edited_write_writes_the_edited_path_and_content_only() {
    let mut t = setup("edit-write", Mode::Ask);
    let g = gate(&t.e.on_frame(&call(
        "w1",
        "s1",
        "workspace_write",
        json!({"path": "host.txt", "content": "from the host\n", "expectedSha256": null}),
    )));
    let out = t.e.decide(
        g.gate,
        edited(json!({"path": "owner.txt", "content": "from the owner\n", "expectedSha256": null})),
    );
    assert_eq!(code(&out), "ok");
    assert_eq!(
        std::fs::read_to_string(t.base.join("proj/owner.txt")).unwrap(),
        "from the owner\n"
    );
    assert!(!t.base.join("proj/host.txt").exists());
}

#[test]
fn an_edit_that_cannot_run_leaves_the_call_waiting_on_its_card() {
    let mut t = setup("edit-bad", Mode::Ask);
    let args = json!({"path": "n.txt", "content": "x\n", "expectedSha256": null});
    let mut g = gate(&t.e.on_frame(&call("w1", "s1", "workspace_write", args.clone())));
    for bad in [
        json!({"path": "../escape.txt", "content": "x", "expectedSha256": null}),
        json!({"path": "n.txt", "content": "x", "expectedSha256": null, "extra": 1}),
    ] {
        let out = t.e.decide(g.gate, edited(bad));
        assert!(
            matches!(&out[0], Out::EditRefused { gate, .. } if *gate == g.gate),
            "{out:?}"
        );
        let Out::Gate(again) = &out[1] else {
            panic!("{out:?}")
        };
        // The same card under a new number: the old one was answered on screen.
        assert_ne!(again.gate, g.gate);
        assert_eq!((&again.ask, &again.call_id), (&g.ask, &g.call_id));
        assert!(sent(&out).is_empty(), "the host is told nothing yet");
        assert_eq!(t.e.waiting(), 1);
        g = again.clone();
    }
    assert!(!t.base.join("escape.txt").exists());
    // Not editable: a delete's target is not the owner's to change.
    let d = gate(&t.e.on_frame(&call(
        "d1",
        "s1",
        "workspace_delete",
        json!({"path": "a.txt", "expectedSha256": sha("hello\n")}),
    )));
    assert!(d.editable.is_none());
    let out = t.e.decide(
        d.gate,
        edited(json!({"path": "b.txt", "expectedSha256": null})),
    );
    assert!(matches!(&out[0], Out::EditRefused { .. }), "{out:?}");
    assert_eq!(code(&t.e.decide(g.gate, Decision::Allow)), "ok");
}

/// A write sent under the id `same` of an earlier read: `id_conflict`, nothing written. The
/// frame, for re-sending.
fn write_under_the_read_id(t: &mut T) -> String {
    let write = call(
        "same",
        "s1",
        "workspace_write",
        json!({"path": "a.txt", "content": "pwned\n", "expectedSha256": sha("hello\n")}),
    );
    assert_eq!(code(&t.e.on_frame(&write)), "id_conflict");
    assert_eq!(
        std::fs::read_to_string(t.base.join("proj/a.txt")).unwrap(),
        "hello\n"
    );
    write
}

#[test]
fn an_id_is_never_reused_for_other_arguments_whatever_the_tool() {
    let mut t = setup("ids", Mode::Full);
    let read = call("same", "s1", "workspace_read", json!({"path": "a.txt"}));
    assert_eq!(code(&t.e.on_frame(&read)), "ok");
    // The same id, now a write: refused, and nothing is written.
    let write = write_under_the_read_id(&mut t);
    // A re-sent read runs again (no effect); after a restart the id is still taken.
    assert_eq!(code(&t.e.on_frame(&read)), "ok");
    drop(t.e);
    let mut e = open(&t.base, Mode::Full);
    assert_eq!(code(&e.on_frame(&write)), "id_conflict");
    assert_eq!(code(&e.on_frame(&read)), "ok");
}

#[test]
fn a_resend_with_other_arguments_while_the_call_waits_gets_no_answer() {
    let mut t = setup("ids-wait", Mode::Ask);
    let first = json!({"path": "a.txt", "content": "bye\n", "expectedSha256": sha("hello\n")});
    let g = gate(&t.e.on_frame(&call("w1", "s1", "workspace_write", first)));
    let other = json!({"path": "b.txt", "content": "x", "expectedSha256": null});
    let out =
        t.e.on_frame(&call("w1", "s1", "workspace_write", other.clone()));
    assert!(
        sent(&out).is_empty(),
        "no second answer for the id: {out:?}"
    );
    assert!(matches!(&out[0], Out::Dropped(_)));
    // The one final answer is the approved write's.
    assert_eq!(code(&t.e.decide(g.gate, Decision::Allow)), "ok");
    // Answered: the re-send is told the id is taken (not final, like busy).
    assert_eq!(
        code(&t.e.on_frame(&call("w1", "s1", "workspace_write", other))),
        "id_conflict"
    );
}

#[test]
fn a_flood_of_refusals_cannot_crowd_out_effects_also_after_a_restart() {
    let mut t = setup("flood", Mode::Full);
    t.e.journal.set_cap(2);
    let refused: Vec<String> = (0..300)
        .map(|i| {
            json!({"type": "call", "protocol": 1, "id": format!("r{i}"), "workspaceId": format!("other{i}"),
                   "sessionId": "s1", "intention": "fix the tests", "tool": "workspace_read",
                   "args": {"path": "a.txt"}})
            .to_string()
        })
        .collect();
    let first: Vec<Vec<Out>> = refused.iter().map(|f| t.e.on_frame(f)).collect();
    assert!(first.iter().all(|o| code(o) == "workspace_mismatch"));
    assert_eq!(t.e.journal.len(), 0, "no refusal takes a receipt");
    let write = |id: &str, path: &str| {
        call(
            id,
            "s1",
            "workspace_write",
            json!({"path": path, "content": "x\n", "expectedSha256": null}),
        )
    };
    assert_eq!(code(&t.e.on_frame(&write("w1", "one.txt"))), "ok");
    drop(t.e);
    let mut e = open(&t.base, Mode::Full);
    e.journal.set_cap(2);
    // Refusals are answered the same way again, byte for byte.
    assert_eq!(e.on_frame(&refused[7]), first[7]);
    assert_eq!(code(&e.on_frame(&write("w2", "two.txt"))), "ok");
    assert!(t.base.join("proj/two.txt").exists());
}

/// Appends fail (half a line lands, then "no space") at every point of a write and a
/// command; after a restart every id is re-sent. No receipt is lost or merged, no effect
/// runs twice, and an effect that ran is never answered `failed`.
#[test]
fn appends_failing_at_each_point_never_tear_the_journal_or_run_an_effect_twice() {
    for fail_at in 0..6 {
        let base =
            std::env::temp_dir().join(format!("sb-gw-faults-{}-{fail_at}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("proj")).unwrap();
        let count = Arc::new(AtomicUsize::new(0));
        let fail = Arc::new(Mutex::new(vec![fail_at]));
        let journal = base.join("data/j.jsonl");
        let j = Journal::open_with(
            &journal,
            switchboard_record::now_ms(),
            Some(faults::wrap(count, fail)),
        )
        .unwrap();
        let mut e = Engine::new(pin(Mode::Full), Root::open(&base.join("proj")).unwrap(), j);
        let calls = [
            call(
                "c1",
                "s1",
                "workspace_exec",
                json!({"command": "echo X >> count.txt"}),
            ),
            call(
                "c2",
                "s1",
                "workspace_write",
                json!({"path": "w.txt", "content": "w\n", "expectedSha256": null}),
            ),
            call(
                "c3",
                "s1",
                "workspace_exec",
                json!({"command": "echo Y >> count.txt"}),
            ),
        ];
        let mut answers = Vec::new();
        let mut down = false;
        for c in &calls {
            let out = e.on_frame(c);
            down |= out.iter().any(|o| matches!(o, Out::Journal(Some(_))));
            // No polls here: they would add appends and move the failure points.
            answers.push(sent(&out)[0]["result"].clone());
        }
        assert!(down, "fail_at {fail_at}: the failure was reported");
        drop(e);
        let text = std::fs::read_to_string(&journal).unwrap();
        for l in text.lines() {
            assert!(
                serde_json::from_str::<Value>(l).is_ok(),
                "fail_at {fail_at}: torn line {l:?}"
            );
        }
        let mut e = Engine::new(
            pin(Mode::Full),
            Root::open(&base.join("proj")).unwrap(),
            Journal::open(&journal, switchboard_record::now_ms()).unwrap(),
        );
        assert_eq!(e.journal.skipped, 0);
        for (c, first) in calls.iter().zip(&answers) {
            let again = sent(&e.on_frame(c))[0]["result"].clone();
            let code = first["structuredContent"]["code"].as_str().unwrap_or("ok");
            if code == "failed" {
                // Transient: nothing ran, and the re-send may run it now.
                continue;
            }
            assert_eq!(&again, first, "fail_at {fail_at}: one final answer per id");
        }
        std::thread::sleep(Duration::from_millis(300));
        let count = std::fs::read_to_string(base.join("proj/count.txt")).unwrap_or_default();
        for mark in ["X", "Y"] {
            assert!(
                count.lines().filter(|l| *l == mark).count() <= 1,
                "fail_at {fail_at}: {mark} ran twice: {count:?}"
            );
        }
        // An effect whose `completed` receipt failed ran: it is uncertain, never `failed`.
        if fail_at % 2 == 1 {
            assert_eq!(
                answers[fail_at / 2]["structuredContent"]["code"],
                "uncertain_effect",
                "fail_at {fail_at}"
            );
        }
    }
}

/// The review's attack: a read id, then a flood of other reads to push it out of the seen
/// table, then the same id as a write. Within the retention no id is forgotten: the flood
/// gets `busy` once the table is full, and the write is still `id_conflict`.
#[test]
fn a_flood_cannot_push_an_id_out_to_reuse_it() {
    let mut t = setup("seen-flood", Mode::Full);
    t.e.journal.set_seen_cap(5);
    let read = call("same", "s1", "workspace_read", json!({"path": "a.txt"}));
    assert_eq!(code(&t.e.on_frame(&read)), "ok");
    let codes: Vec<String> = (0..10)
        .map(|i| code(&t.e.on_frame(&call(&format!("f{i}"), "s1", "workspace_info", json!({})))))
        .collect();
    assert_eq!(&codes[..4], ["ok", "ok", "ok", "ok"]);
    assert!(codes[4..].iter().all(|c| c == "busy"), "{codes:?}");
    // A known id is still answered, and still cannot be reused for a write.
    assert_eq!(code(&t.e.on_frame(&read)), "ok");
    write_under_the_read_id(&mut t);
    // Effects never wait for the seen table.
    let w2 = call(
        "w2",
        "s1",
        "workspace_write",
        json!({"path": "b.txt", "content": "b\n", "expectedSha256": null}),
    );
    assert_eq!(code(&t.e.on_frame(&w2)), "ok");
}
