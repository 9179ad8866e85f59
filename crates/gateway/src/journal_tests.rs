use super::*;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sb-journal-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d.join("j.jsonl")
}

fn key(id: &str) -> Key {
    ("w".into(), "s".into(), id.into())
}

#[test]
fn completed_results_come_back_byte_for_byte_after_reopen() {
    let p = scratch("reopen");
    let mut j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    j.executing(
        &key("1"),
        "h",
        "workspace_write",
        serde_json::json!({"path": "a"}),
    )
    .unwrap();
    j.completed(
        &key("1"),
        "h",
        "workspace_write",
        Value::Null,
        "{\"x\": 1 }",
    )
    .unwrap();
    j.executing(
        &key("2"),
        "h2",
        "workspace_exec",
        serde_json::json!({"commandId": "c"}),
    )
    .unwrap();
    assert!(j.uncertain().is_empty(), "live effects are not uncertain");
    drop(j);
    let j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    let e = j.get(&key("1")).unwrap();
    assert_eq!(e.state, State::Completed);
    assert_eq!(e.result.as_deref(), Some("{\"x\": 1 }"));
    let u = j.uncertain();
    assert_eq!(u.len(), 1);
    assert_eq!(u[0].0, key("2"));
    assert_eq!(u[0].1.effect["commandId"], "c");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dmode = std::fs::metadata(p.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dmode, 0o700);
}

#[test]
fn a_sent_mark_survives_a_restart_and_a_compaction_and_keeps_the_result() {
    let p = scratch("sent");
    let mut j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    j.completed(&key("1"), "h", "workspace_write", Value::Null, "{\"r\":1}")
        .unwrap();
    j.completed(&key("2"), "h", "workspace_write", Value::Null, "{\"r\":2}")
        .unwrap();
    j.executing(&key("3"), "h", "workspace_exec", Value::Null)
        .unwrap();
    assert!(j.sent(&key("1")).unwrap());
    assert!(!j.sent(&key("1")).unwrap(), "marked once");
    assert!(
        !j.sent(&key("3")).unwrap(),
        "only a completed receipt is sent"
    );
    assert!(!j.sent(&key("9")).unwrap());
    let text = std::fs::read_to_string(&p).unwrap();
    assert_eq!(text.matches("\"state\":\"sent\"").count(), 1, "{text}");
    drop(j);
    let mut j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    assert_eq!(j.skipped, 0);
    let e = j.get(&key("1")).unwrap();
    assert_eq!(e.state, State::Sent);
    assert_eq!(e.result.as_deref(), Some("{\"r\":1}"));
    assert_eq!(
        j.get(&key("2")).unwrap().state,
        State::Completed,
        "not sent"
    );
    j.compact().unwrap();
    drop(j);
    let j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    let e = j.get(&key("1")).unwrap();
    assert_eq!(
        (e.state, e.result.as_deref()),
        (State::Sent, Some("{\"r\":1}"))
    );
    assert_eq!(j.get(&key("2")).unwrap().state, State::Completed);
}

#[test]
fn a_full_journal_refuses_new_receipts_but_completes_held_ones() {
    let p = scratch("cap");
    let mut j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    j.set_cap(2);
    j.executing(&key("1"), "h", "t", Value::Null).unwrap();
    j.completed(&key("2"), "h", "t", Value::Null, "{}").unwrap();
    assert!(j.executing(&key("3"), "h", "t", Value::Null).is_err());
    assert!(j.get(&key("3")).is_none());
    j.completed(&key("1"), "h", "t", Value::Null, "{}").unwrap();
}

#[test]
fn torn_last_line_is_skipped_and_compacted_away() {
    let p = scratch("torn");
    let mut j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    j.completed(&key("1"), "h", "t", Value::Null, "{}").unwrap();
    drop(j);
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    f.write_all(b"{\"ws\":\"w\",\"sess").unwrap();
    drop(f);
    let j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    assert_eq!(j.len(), 1);
    let text = std::fs::read_to_string(&p).unwrap();
    assert_eq!(text.lines().count(), 1);
}

#[test]
fn retention_drops_old_completed_receipts_but_never_uncertain_ones() {
    let p = scratch("retain");
    let mut j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    j.completed(&key("old"), "h", "t", Value::Null, "{}")
        .unwrap();
    j.executing(&key("unsure"), "h", "t", Value::Null).unwrap();
    drop(j);
    let later = switchboard_record::now_ms() + RETENTION_MS + 1;
    let j = Journal::open(&p, later).unwrap();
    assert!(j.get(&key("old")).is_none());
    assert!(j.get(&key("unsure")).is_some());
    drop(j);
    let j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    assert!(j.get(&key("old")).is_none(), "compaction rewrote the file");
}

use super::super::journal_file::faults;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

/// Every line of the file parses as one record.
fn all_lines_parse(p: &Path) {
    let text = std::fs::read_to_string(p).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'), "{text:?}");
    for l in text.lines() {
        serde_json::from_str::<Record>(l).unwrap_or_else(|e| panic!("{e}: {l}"));
    }
}

#[test]
fn a_failed_append_is_rolled_back_and_the_next_one_lands_on_a_clean_line() {
    let p = scratch("rollback");
    let count = Arc::new(AtomicUsize::new(0));
    let fail = Arc::new(Mutex::new(vec![1]));
    let mut j = Journal::open_with(
        &p,
        switchboard_record::now_ms(),
        Some(faults::wrap(count.clone(), fail.clone())),
    )
    .unwrap();
    j.executing(
        &key("1"),
        "h",
        "workspace_exec",
        serde_json::json!({"n": 1}),
    )
    .unwrap();
    // The completed receipt is torn half-way by a full disk.
    let body = "x".repeat(9000);
    assert!(
        j.completed(&key("1"), "h", "workspace_exec", Value::Null, &body)
            .is_err()
    );
    assert!(j.unavailable().is_some(), "the journal says it is down");
    assert_eq!(j.get(&key("1")).unwrap().state, State::Executing);
    all_lines_parse(&p);
    // The next call's executing receipt is a line of its own, and the journal is up again.
    j.executing(
        &key("2"),
        "h2",
        "workspace_exec",
        serde_json::json!({"n": 2}),
    )
    .unwrap();
    assert!(j.unavailable().is_none());
    all_lines_parse(&p);
    drop(j);
    let j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    assert_eq!(j.skipped, 0);
    let uncertain: Vec<String> = j.uncertain().into_iter().map(|(k, _)| k.2).collect();
    assert_eq!(uncertain, ["1", "2"], "no receipt lost or merged");
}

#[test]
fn a_merged_line_from_an_older_journal_is_salvaged_and_a_torn_tail_repaired() {
    let p = scratch("salvage");
    let mut j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    j.executing(&key("1"), "h", "workspace_exec", Value::Null)
        .unwrap();
    drop(j);
    // What the old appender left: a completed receipt cut at 40 bytes, the next executing
    // receipt straight after it, and a torn record at the end.
    let mut second = Journal::open(&scratch("salvage-src"), switchboard_record::now_ms()).unwrap();
    second
        .executing(&key("2"), "h2", "workspace_exec", Value::Null)
        .unwrap();
    let whole = std::fs::read_to_string(second.path()).unwrap();
    let torn = r#"{"ws":"w","session":"s","id":"1","state":"completed","hash":"#;
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    f.write_all(torn.as_bytes()).unwrap();
    f.write_all(whole.as_bytes()).unwrap();
    f.write_all(br#"{"ws":"w","sess"#).unwrap();
    drop(f);
    let j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    assert_eq!(j.get(&key("1")).unwrap().state, State::Executing);
    assert_eq!(
        j.get(&key("2")).unwrap().state,
        State::Executing,
        "the receipt after the torn bytes is kept"
    );
    all_lines_parse(&p);
    assert_eq!(std::fs::read_to_string(&p).unwrap().lines().count(), 2);
}

#[test]
fn seen_ids_have_their_own_budget_and_survive_a_restart() {
    let p = scratch("seen");
    let mut j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    j.set_cap(1);
    j.set_seen_cap(3);
    for i in 0..2 {
        j.remember(&key(&format!("r{i}")), "h", "workspace_read", None)
            .unwrap();
    }
    assert!(!j.seen_full(switchboard_record::now_ms()));
    j.remember(&key("bad"), "hb", "", Some("{\"isError\":true}"))
        .unwrap();
    assert!(j.seen_full(switchboard_record::now_ms()), "full at the cap");
    assert!(j.seen(&key("r0")).is_some(), "none is forgotten early");
    // Refusals and reads never take the effect budget.
    j.executing(&key("e"), "he", "workspace_write", Value::Null)
        .unwrap();
    assert_eq!(j.len(), 1);
    drop(j);
    let j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    assert_eq!(
        j.seen(&key("bad")).unwrap().refusal.as_deref(),
        Some("{\"isError\":true}")
    );
    assert!(j.get(&key("e")).is_some());
    // Past the retention the oldest make room.
    let mut j = j;
    j.set_seen_cap(3);
    assert!(j.seen_full(switchboard_record::now_ms()));
    assert!(!j.seen_full(switchboard_record::now_ms() + RETENTION_MS + 1));
}

/// The review's case: two processes on one journal would cut each other's receipts on a
/// rollback. The second open is refused while the first holds it.
#[test]
fn a_second_writer_is_refused_while_the_first_holds_the_journal() {
    let p = scratch("lock");
    let j = Journal::open(&p, switchboard_record::now_ms()).unwrap();
    let e = Journal::open(&p, switchboard_record::now_ms()).unwrap_err();
    assert!(e.to_string().contains("another switchboard"), "{e}");
    drop(j);
    Journal::open(&p, switchboard_record::now_ms()).unwrap();
}
