//! `switchboard export` to Markdown and `switchboard sessions`.

use super::*;

// 5. export and sessions

#[test]
fn export_markdown_has_tree_prompt_tools_and_decisions() {
    let o = run(&["export", our("bash_write").to_str().unwrap(), "--markdown"]);
    assert_eq!(o.status.code(), Some(0));
    let md = stdout(&o);
    for want in [
        "# switchboard session: bash_write.jsonl",
        "## Session tree",
        "- **main**",
        "**User:**\n\n> BASH_WRITE please",
        "> BASH_AGAIN",
        "**Tool `Bash`** `touch created.txt`",
        "> **✘ denied: Bash `touch created.txt` — Not in this directory, please. (recorded)**",
        "> **✔ allowed once: Bash `touch created.txt` (recorded)**",
        "> **✔ allowed always (session rule): Bash `touch created.txt` (recorded)**",
        "3 gate(s) answered",
        "Result (error):",
    ] {
        assert!(md.contains(want), "missing {want:?} in\n{md}");
    }
    let o = run(&["export", our("subagents").to_str().unwrap(), "--markdown"]);
    let md = stdout(&o);
    let tree: Vec<&str> = md
        .split("## Session tree\n\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(tree.len(), 3, "{md}");
    assert!(tree[0].starts_with("- **main**"), "{tree:?}");
    assert!(tree[1].starts_with("  - **general-purpose**"), "{tree:?}");
    assert!(tree[2].starts_with("  - **general-purpose**"), "{tree:?}");
    assert!(
        md.contains("allowed once: Bash `touch sub.txt` (recorded)"),
        "{md}"
    );
    // -o writes a file; a cassette exports too.
    let dir = scratch("export");
    let out = dir.join("t.md");
    let o = run(&[
        "export",
        our("edit").to_str().unwrap(),
        "--markdown",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let md = std::fs::read_to_string(&out).unwrap();
    assert!(md.contains("```diff"), "{md}");
    if let Some(c) = cassette("cowork-multiselect-gate.agent-2.1.238") {
        let md = stdout(&run(&["export", c.to_str().unwrap(), "--markdown"]));
        assert!(
            md.contains("answered: Which features should be enabled? = Auth, Audit (recorded)"),
            "{md}"
        );
    }
    let o = run(&["export", "/nonexistent/x.jsonl", "--markdown"]);
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn sessions_lists_recordings_newest_first() {
    let data = scratch("sessions");
    let recs = data.join("recordings");
    std::fs::create_dir_all(&recs).unwrap();
    let with_time = |src: &str, dst: &str, ms: u64, started: &str| {
        let text = std::fs::read_to_string(our(src)).unwrap();
        let (head, rest) = text.split_once('\n').unwrap();
        let mut h: Value = serde_json::from_str(head).unwrap();
        h["started_ms"] = json!(ms);
        h["started"] = json!(started);
        h["cwd"] = json!(format!("/work/{src}"));
        std::fs::write(recs.join(dst), format!("{h}\n{rest}")).unwrap();
    };
    with_time("edit", "a.jsonl", 1_796_000_000_000, "2026-11-29T23:33:20Z");
    with_time(
        "bash_write",
        "b.jsonl",
        1_796_103_653_603,
        "2026-12-01T05:40:53Z",
    );
    with_time(
        "breakpoint",
        "c.jsonl",
        1_795_000_000_000,
        "2026-11-18T11:46:40Z",
    );
    std::fs::write(recs.join("junk.jsonl"), "not a recording\n").unwrap();
    std::fs::write(recs.join("notes.txt"), "ignored\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("sessions")
        .env("SWITCHBOARD_DATA_DIR", &data)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("started"), "{out}");
    let rows: Vec<&str> = lines[1..].iter().step_by(2).copied().collect();
    let paths: Vec<&str> = lines[1..]
        .iter()
        .skip(1)
        .step_by(2)
        .map(|l| l.trim())
        .collect();
    assert_eq!(
        paths,
        ["b.jsonl", "a.jsonl", "c.jsonl"].map(|f| recs.join(f).display().to_string()),
        "{out}"
    );
    assert!(rows[0].starts_with("2026-12-01T05:40:53Z  claude"), "{out}");
    for (row, want) in rows.iter().zip([
        ["    3", "success", "/work/bash_write", "BASH_WRITE please"],
        ["    2", "success", "/work/edit", "EDIT"],
        ["    2", "success", "/work/breakpoint", "BREAKPOINT here"],
    ]) {
        for w in want {
            assert!(row.contains(w), "{w:?} not in {row:?}\n{out}");
        }
    }
    // An empty data dir.
    let empty = scratch("sessions-empty");
    let o = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("sessions")
        .env("SWITCHBOARD_DATA_DIR", &empty)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("no recordings in "));
    std::fs::remove_dir_all(data).ok();
    std::fs::remove_dir_all(empty).ok();
}
