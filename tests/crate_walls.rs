//! The workspace's walls, as `cargo tree` sees them: the core links no terminal crate and no
//! runtime, whatever a dependency pulls in.

use std::process::Command;

/// The packages `package` links in a normal (non-dev, non-build) build, one name a line.
fn normal_tree(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
            package,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn the_core_links_no_terminal_and_no_runtime() {
    let tree = normal_tree("switchboard-core");
    assert!(tree.iter().any(|p| p == "switchboard-core"), "{tree:?}");
    assert!(
        tree.iter().any(|p| p == "serde_json"),
        "the listing is real: {tree:?}"
    );
    for banned in [
        "ratatui",
        "ratatui-core",
        "crossterm",
        "ratatui-textarea",
        "tokio",
    ] {
        assert!(
            !tree.iter().any(|p| p == banned),
            "switchboard-core links {banned}: {tree:?}"
        );
    }
}
