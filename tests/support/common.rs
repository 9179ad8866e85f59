//! Small helpers several test binaries share. Each binary uses a subset, hence the allow.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use switchboard::backend::acp::session::AcpConfig;
use switchboard::core::state::State;
use switchboard::core::transcript::ItemKind;

/// True on CI (`CI=true` or `CI=1`; `.ci/run` sets it), where a missing prerequisite fails a
/// test instead of skipping it. Tests do not call this: they go through `require_or_skip`.
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The one rule for a prerequisite a test may lack (a real agent, python3, the shared
/// recordings): `found` when it is there; when it is not, a panic under CI, otherwise a
/// `SKIP test: what is missing` line and `None`, so the caller returns without asserting.
pub fn require_or_skip<T>(test: &str, what: &str, found: Option<T>) -> Option<T> {
    decide(ci(), test, what, found)
}

/// `require_or_skip` with the CI flag given (tested without touching the environment).
pub fn decide<T>(ci: bool, test: &str, what: &str, found: Option<T>) -> Option<T> {
    if found.is_none() {
        if ci {
            panic!("{test}: {what} is missing, and CI requires it");
        }
        eprintln!("SKIP {test}: {what} is missing (CI=true makes this a failure)");
    }
    found
}

/// What `require_or_skip` names when the real Claude CLI (`fake_model::claude_bin`) is missing.
pub const CLAUDE_CLI: &str = "the pinned claude CLI (npm ci --prefix tests/peers)";

/// A path inside the repository.
pub fn manifest(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A directory of the shared material beside the repository (`../shared/REL`), or `None` under
/// the skip rule.
pub fn shared_dir_or_skip(test: &str, rel: &str) -> Option<PathBuf> {
    let d = manifest("..").join("shared").join(rel);
    require_or_skip(
        test,
        &format!("../shared/{rel}"),
        Some(d).filter(|d| d.is_dir()),
    )
}

/// `python3` on PATH, or `None` under the skip rule.
pub fn python_or_skip(test: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH");
    let found = path.and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("python3"))
            .find(|p| p.is_file())
    });
    require_or_skip(test, "python3 (for the scripted Checkfu agent)", found)
}

/// The scripted Checkfu agent (tests/support/checkfu_agent.py) run by `python`, recorded.
pub fn checkfu_config(
    python: PathBuf,
    cwd: &Path,
    record: &Path,
    builtin_tools: Option<Vec<String>>,
) -> AcpConfig {
    AcpConfig {
        program: python,
        args: vec![
            manifest("tests/support/checkfu_agent.py")
                .display()
                .to_string(),
        ],
        cwd: cwd.to_path_buf(),
        builtin_tools,
        record: Some(record.to_path_buf()),
        ..AcpConfig::default()
    }
}

/// Audit rows of node `node`.
pub fn audits(s: &State, node: usize) -> Vec<String> {
    s.tree.nodes[node]
        .transcript
        .items
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::Audit { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// Audit rows across the whole tree.
pub fn all_audits(s: &State) -> usize {
    (0..s.tree.nodes.len()).map(|n| audits(s, n).len()).sum()
}
