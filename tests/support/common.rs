//! Small helpers several test binaries share. Each binary uses a subset, hence the allow.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use switchboard::backend::acp::session::AcpConfig;
use switchboard::core::state::State;
use switchboard::core::transcript::ItemKind;

/// True on CI, where a missing prerequisite fails a test instead of skipping it.
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A path inside the repository.
pub fn manifest(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// `python3` on PATH, or `None` after printing why `test` is skipped (a panic on CI).
pub fn python_or_skip(test: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH");
    let found = path.and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("python3"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        if ci() {
            panic!("python3 is required for the scripted Checkfu agent");
        }
        eprintln!("skipping {test}: python3 not found");
    }
    found
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
