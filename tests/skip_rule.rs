//! A test can never pass on CI by skipping: `.ci/run` sets `CI=true`, and every test that lacks
//! a prerequisite (a real agent, python3, the shared recordings) goes through the one rule in
//! `tests/support/common.rs`, which fails it under CI and prints `SKIP` otherwise.

#[path = "support/common.rs"]
mod common;

use std::path::Path;

use common::{decide, manifest};

#[test]
#[should_panic(expected = "t: the thing is missing, and CI requires it")]
fn a_missing_prerequisite_fails_under_ci() {
    decide::<()>(true, "t", "the thing", None);
}

#[test]
fn a_missing_prerequisite_skips_outside_ci_and_a_present_one_passes_through() {
    assert_eq!(decide::<u8>(false, "t", "the thing", None), None);
    assert_eq!(decide(false, "t", "the thing", Some(3)), Some(3));
    assert_eq!(decide(true, "t", "the thing", Some(4)), Some(4));
}

#[test]
fn ci_run_exports_ci_before_running_the_suite() {
    let text = std::fs::read_to_string(manifest(".ci/run")).unwrap();
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let export = lines.iter().position(|l| *l == "export CI=true");
    let run = lines.iter().position(|l| l.ends_with("bash tests/run.sh"));
    match (export, run) {
        (Some(e), Some(r)) => assert!(e < r, "CI=true must be set before tests/run.sh:\n{text}"),
        _ => panic!(".ci/run must `export CI=true` then run `bash tests/run.sh`:\n{text}"),
    }
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name()
                .is_some_and(|n| n != "node_modules" && n != "snapshots")
            {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Only the rule reads `CI` or says a test is skipped; an ad-hoc variant elsewhere (which may
/// forget the CI half) fails this test with its file and line.
#[test]
fn no_test_decides_to_skip_on_its_own() {
    let mut files = Vec::new();
    rust_files(&manifest("tests"), &mut files);
    assert!(files.len() > 10, "{files:?}");
    let this = manifest("tests/skip_rule.rs");
    let rule = manifest("tests/support/common.rs");
    let mut found = Vec::new();
    for f in files.iter().filter(|f| **f != this && **f != rule) {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let lower = code.to_lowercase();
            // Reading the variable, not the name "CI" (a test may set CI=1 in an agent's env).
            let ad_hoc = ["var(\"CI\")", "var_os(\"CI\")", "env!(\"CI\")"]
                .iter()
                .any(|read| code.contains(read))
                || code.contains("ci()")
                || code.contains("\"SKIP")
                || lower.contains("skipping")
                || lower.contains("skipped");
            if ad_hoc {
                found.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "use common::require_or_skip instead:\n{}",
        found.join("\n")
    );
}
