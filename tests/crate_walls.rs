//! The workspace's walls, as `cargo tree` sees them: the core links no terminal crate and no
//! runtime, no backend links another or the peers of `sim`, whatever a dependency pulls in; and
//! in the sources, no backend name compared as a string outside the registry, no use of `sim`
//! outside the demo commands.

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

const BACKENDS: [&str; 4] = [
    "switchboard-claude",
    "switchboard-acp",
    "switchboard-iii",
    "switchboard-gateway",
];

#[test]
fn no_backend_links_another_backend_or_the_simulated_peers() {
    for b in BACKENDS {
        let tree = normal_tree(b);
        assert!(tree.iter().any(|p| p == b), "{tree:?}");
        assert!(
            tree.iter().any(|p| p == "switchboard-backend"),
            "{b}: {tree:?}"
        );
        for other in BACKENDS.iter().filter(|o| **o != b) {
            assert!(
                !tree.iter().any(|p| p == other),
                "{b} links {other}: {tree:?}"
            );
        }
        for banned in ["switchboard-sim", "switchboard", "ratatui", "crossterm"] {
            assert!(
                !tree.iter().any(|p| p == banned),
                "{b} links {banned}: {tree:?}"
            );
        }
    }
    // What they stand on links none of them.
    for base in [
        "switchboard-backend",
        "switchboard-record",
        "switchboard-core",
    ] {
        let tree = normal_tree(base);
        for banned in BACKENDS
            .iter()
            .chain(&["switchboard-sim", "ratatui", "crossterm"])
        {
            assert!(
                !tree.iter().any(|p| p == banned),
                "{base} links {banned}: {tree:?}"
            );
        }
    }
}

/// Every Rust file under `dir`, recursively.
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("a source directory") {
        let p = e.expect("an entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Where a line compares a string with a backend's name (`== "acp"`, `"iii" =>`, …).
fn compares_a_backend_name(line: &str) -> bool {
    const NAMES: [&str; 5] = ["claude", "acp", "iii", "gateway", "demo"];
    let code = line.split("//").next().unwrap_or("");
    NAMES.iter().any(|n| {
        let q = format!("\"{n}\"");
        code.match_indices(&q).any(|(at, _)| {
            let before = code[..at].trim_end();
            let after = code[at + q.len()..].trim_start();
            before.ends_with("==")
                || before.ends_with("!=")
                || before.ends_with("contains(&")
                || after.starts_with("==")
                || after.starts_with("!=")
                || after.starts_with("=>")
                || (after.starts_with('|') && !after.starts_with("||"))
        })
    })
}

/// A backend is an enum everywhere but its registry: the product's sources compare no string
/// with a backend's name outside `core::BackendKind` and `src/registry.rs`.
#[test]
fn no_backend_name_is_compared_outside_the_registry() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    for krate in std::fs::read_dir(root.join("crates")).expect("crates/") {
        rust_files(&krate.expect("a crate").path().join("src"), &mut files);
    }
    assert!(
        files.len() > 100,
        "the walk found the sources: {}",
        files.len()
    );
    let allowed = ["src/registry.rs", "crates/core/src/backend_kind.rs"];
    let mut found = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if allowed.contains(&rel.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("a source file");
        for (i, line) in text.lines().enumerate() {
            if compares_a_backend_name(line) {
                found.push(format!("{rel}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "backend names compared as strings:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_lint_sees_every_form_of_comparison() {
    for hit in [
        r#"if backend == "acp" {"#,
        r#"x != "claude""#,
        r#"        "iii" => crate::backend::iii::session::reply_check,"#,
        r#"    "gateway" | "acp" => 1,"#,
        r#"REPLAYABLE.contains(&"demo")"#,
        r#"if "acp" == backend {"#,
    ] {
        assert!(compares_a_backend_name(hit), "{hit}");
    }
    for miss in [
        r#"let k = BackendKind::Acp; // was == "acp""#,
        r#"format!("{}", "acp")"#,
        r#"assert_eq!(name, "acp");"#,
        r#"("claude" || other)"#,
    ] {
        assert!(!compares_a_backend_name(miss), "{miss}");
    }
}

/// The simulated peers (`crates/sim`) serve the demo commands, tests and benches: in the
/// product's sources only the demo commands and the screenshots (drawn from the scripted demo)
/// name them.
#[test]
fn only_the_demo_commands_use_the_simulated_peers() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let allowed = ["src/cli/demo.rs", "src/screenshots.rs"];
    let mut users = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(f).expect("a source file");
        if text.contains("switchboard_sim") {
            users.push(rel);
        }
    }
    users.sort();
    assert_eq!(
        users, allowed,
        "files of the product naming switchboard_sim"
    );
}

/// A module's code with comments and its trailing unit-test module removed (what it uses, not
/// what it mentions or what its tests use).
fn code_of(text: &str) -> String {
    let text = text
        .find("#[cfg(test)]\nmod tests {")
        .map_or(text, |i| &text[..i]);
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module a path names: its longest prefix that is a module of the crate.
fn module_named(
    parts: &[&str],
    modules: &std::collections::BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    (1..=parts.len())
        .rev()
        .map(|k| parts[..k].iter().map(|p| p.to_string()).collect::<Vec<_>>())
        .find(|m| modules.contains(m))
}

/// The modules of the crate rooted at `src` that take part in an import circle: module A uses
/// B (by a `crate::` or `super::` path) and B, directly or not, uses A. A module using its own
/// ancestors (`super::*`) is no circle.
fn import_circles(src: &std::path::Path) -> Vec<Vec<String>> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut code: BTreeMap<Vec<String>, String> = BTreeMap::new();
    for f in files {
        let rel = f
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let is_test = rel.ends_with("tests.rs")
            || rel.contains("/tests/")
            || rel.starts_with("tests/")
            || rel.starts_with("reducer_tests");
        if is_test {
            continue;
        }
        let mut m: Vec<String> = rel
            .trim_end_matches(".rs")
            .split('/')
            .map(String::from)
            .collect();
        if matches!(m.last().map(String::as_str), Some("mod" | "lib" | "main")) {
            m.pop();
        }
        code.insert(m, code_of(&std::fs::read_to_string(&f).unwrap()));
    }
    let modules: BTreeSet<Vec<String>> = code.keys().cloned().collect();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut uses: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (m, text) in &code {
        let mut out = BTreeSet::new();
        for (at, _) in text
            .match_indices("crate::")
            .chain(text.match_indices("super::"))
        {
            if text[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue; // inside a longer path (`super::super::x` is read from its start)
            }
            let path: String = text[at..].chars().take_while(|c| ident(*c)).collect();
            let mut parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
            let mut base: Vec<&str> = Vec::new();
            if parts.first() == Some(&"crate") {
                parts.remove(0);
            } else {
                base = m.iter().map(String::as_str).collect();
                while parts.first() == Some(&"super") {
                    parts.remove(0);
                    base.pop();
                }
            }
            let full: Vec<&str> = base.into_iter().chain(parts).collect();
            if let Some(target) = module_named(&full, &modules)
                && !m.starts_with(&target)
            {
                out.insert(target);
            }
        }
        uses.insert(m.clone(), out);
    }
    // A module is in a circle when it reaches itself.
    let mut circles = Vec::new();
    for m in &modules {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&Vec<String>> = uses[m].iter().collect();
        while let Some(n) = todo.pop() {
            if n == m {
                circles.push(m.clone());
                break;
            }
            if seen.insert(n.clone()) {
                todo.extend(uses.get(n).into_iter().flatten());
            }
        }
    }
    circles
}

/// No import circle inside any crate: each crate's modules form a tree of uses, so a module can
/// be read, moved or split knowing what it stands on.
#[test]
fn no_crate_has_an_import_circle() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut crates = vec![root.join("src")];
    for k in std::fs::read_dir(root.join("crates")).expect("crates/") {
        crates.push(k.expect("a crate").path().join("src"));
    }
    let mut found = Vec::new();
    for src in &crates {
        for m in import_circles(src) {
            found.push(format!("{}: {}", src.display(), m.join("::")));
        }
    }
    assert!(
        found.is_empty(),
        "modules in an import circle:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_circle_check_finds_a_circle() {
    let dir = std::env::temp_dir().join(format!("sb-circle-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("a")).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
    std::fs::write(
        dir.join("a/mod.rs"),
        "use crate::b::X; // crate::c is only mentioned\n",
    )
    .unwrap();
    std::fs::write(dir.join("b.rs"), "pub fn f() { super::a::g() }\n").unwrap();
    std::fs::write(dir.join("c.rs"), "use super::a::Y;\n").unwrap();
    let circles = import_circles(&dir);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(circles, vec![vec!["a".to_string()], vec!["b".to_string()]]);
}
