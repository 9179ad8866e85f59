//! The workspace's walls, as `cargo tree` sees them: the core links no terminal crate and no
//! runtime, no backend links another or the peers of `sim`, whatever a dependency pulls in; and
//! in the sources, no backend name compared as a string outside the registry, no use of `sim`
//! outside the demo commands, no import circle between the modules of any crate.

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

const BACKENDS: [&str; 5] = [
    "switchboard-claude",
    "switchboard-acp",
    "switchboard-iii",
    "switchboard-gateway",
    "switchboard-adopt",
];

/// The one link between backends, and why: an adopted Claude session runs the same CLI and
/// the same tools, so its cards are the Claude backend's (`gates`, `encode`); nothing else of
/// it is used (docs/architecture.md).
const ALLOWED_LINKS: &[(&str, &str)] = &[("switchboard-adopt", "switchboard-claude")];

#[test]
fn no_backend_links_another_backend_or_the_simulated_peers() {
    for b in BACKENDS {
        let tree = normal_tree(b);
        assert!(tree.iter().any(|p| p == b), "{tree:?}");
        assert!(
            tree.iter().any(|p| p == "switchboard-backend"),
            "{b}: {tree:?}"
        );
        for other in BACKENDS
            .iter()
            .filter(|o| **o != b && !ALLOWED_LINKS.contains(&(b, **o)))
        {
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
    const NAMES: [&str; 6] = ["claude", "acp", "iii", "gateway", "adopted", "demo"];
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

/// The path that starts at `text[at..]`, with its braces: `crate::a::{b::C, d}` whole.
fn path_at(text: &str, at: usize) -> &str {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let rest = &text[at..];
    let head = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
    if !rest[head..].starts_with('{') {
        return &rest[..head];
    }
    let mut depth = 0;
    for (i, c) in rest[head..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &rest[..head + i + 1];
                }
            }
            _ => {}
        }
    }
    rest
}

/// A use tree spelled out, one path a line: `a::{b::C, d as e, f::{self, *}}` gives `a::b::C`,
/// `a::d`, `a::f`, `a::f::*`.
fn expand_use_tree(tree: &str) -> Vec<String> {
    // Renames dropped (`d as e` is `d`), then the spaces.
    let mut words = tree.split_whitespace();
    let mut tree = String::new();
    while let Some(w) = words.next() {
        if w == "as" {
            let alias = words.next().unwrap_or("");
            tree.push_str(alias.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_'));
        } else {
            tree.push_str(w);
        }
    }
    let Some(open) = tree.find('{') else {
        return vec![tree.trim_end_matches("::self").to_string()];
    };
    let (prefix, inner) = (&tree[..open], &tree[open + 1..tree.len() - 1]);
    let mut parts = Vec::new();
    let (mut depth, mut from) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[from..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(expand_use_tree)
        .map(|p| {
            if p == "self" {
                prefix.trim_end_matches("::").to_string()
            } else {
                format!("{prefix}{p}")
            }
        })
        .collect()
}

/// The modules of the crate rooted at `src` that take part in an import circle: module A uses
/// B and B, directly or not, uses A. Uses are read at every depth of the module tree: a path
/// from `crate::`, `super::` or `self::`, a child module named bare (`session::X`, a parent's
/// `pub use child::Y`), braced groups spelled out. A module containing its child and using
/// it is a use; a module using its own ancestors (`super::*`) is no circle, so a child leaning
/// on its parent is not one either, but a parent whose child uses a module that uses the
/// parent is (`msg` → `state`, `state` → `state::session`, `state::session` → `msg`).
fn import_circles(src: &std::path::Path) -> Vec<Vec<String>> {
    let uses = module_uses(src);
    // A module is in a circle when it reaches itself.
    let mut circles = Vec::new();
    for m in uses.keys() {
        let mut seen = std::collections::BTreeSet::new();
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

/// Each module of the crate rooted at `src` (its path below the crate, tests left out) and the
/// modules it uses, as `import_circles` reads them.
fn module_uses(
    src: &std::path::Path,
) -> std::collections::BTreeMap<Vec<String>, std::collections::BTreeSet<Vec<String>>> {
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
    let in_a_path = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut uses: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (m, text) in &code {
        // Where a path starts: `crate::`, `super::`, `self::`, or a child of `m` named bare.
        let children: Vec<String> = modules
            .iter()
            .filter(|c| c.len() == m.len() + 1 && c.starts_with(m))
            .map(|c| format!("{}::", c[m.len()]))
            .collect();
        let mut starts: Vec<usize> = ["crate::", "super::", "self::"]
            .iter()
            .chain(
                children
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .iter(),
            )
            .flat_map(|s| text.match_indices(*s).map(|(at, _)| at))
            .filter(|at| !text[..*at].ends_with(in_a_path)) // not inside a longer path
            .collect();
        starts.sort_unstable();
        starts.dedup();
        let mut out = BTreeSet::new();
        for at in starts {
            for path in expand_use_tree(path_at(text, at)) {
                let mut parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
                let mut base: Vec<&str> = m.iter().map(String::as_str).collect();
                match parts.first() {
                    Some(&"crate") => {
                        parts.remove(0);
                        base.clear();
                    }
                    Some(&"self") => {
                        parts.remove(0);
                    }
                    _ => {
                        while parts.first() == Some(&"super") {
                            parts.remove(0);
                            base.pop();
                        }
                    }
                }
                let full: Vec<&str> = base.into_iter().chain(parts).collect();
                if let Some(target) = module_named(&full, &modules)
                    && !m.starts_with(&target)
                {
                    out.insert(target);
                }
            }
        }
        uses.insert(m.clone(), out);
    }
    uses
}

/// Every crate's source folder: the root package's and each of `crates/`.
fn crate_sources() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut crates = vec![root.join("src")];
    for k in std::fs::read_dir(root.join("crates")).expect("crates/") {
        crates.push(k.expect("a crate").path().join("src"));
    }
    crates.sort();
    crates
}

/// No import circle inside any crate, at any depth of its module tree: each crate's modules
/// form a tree of uses, so a module can be read, moved or split knowing what it stands on.
#[test]
fn no_crate_has_an_import_circle() {
    let crates = crate_sources();
    assert!(crates.len() >= 11, "{crates:?}");
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

/// The check reads the core's nested modules (else "none found" would say nothing): the state
/// uses its child `session`, which uses `msg`; `msg` no longer uses the state (`ViewMetrics`
/// has a module of its own), which is what broke the circle.
#[test]
fn the_circle_check_reads_the_cores_nested_modules() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let uses = module_uses(&root.join("crates/core/src"));
    let m = |p: &str| p.split("::").map(String::from).collect::<Vec<_>>();
    let of = |p: &str| uses.get(&m(p)).unwrap_or_else(|| panic!("no module {p}"));
    assert!(
        of("state").contains(&m("state::session")),
        "{:?}",
        of("state")
    );
    assert!(
        of("state::session").contains(&m("msg")),
        "{:?}",
        of("state::session")
    );
    assert!(
        of("update::keys").contains(&m("state")),
        "{:?}",
        of("update::keys")
    );
    assert!(of("msg").contains(&m("view_metrics")), "{:?}", of("msg"));
    assert!(!of("msg").contains(&m("state")), "{:?}", of("msg"));
    assert!(!uses.keys().any(|k| k.contains(&"tests".to_string())));
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

/// The circle the core had (issue 38): `msg` names a type of `state`, `state` re-exports its
/// child `session`, and `session` takes types from `msg` in a braced group. A child using its
/// parent alone (`leaf` → `state`) is none.
#[test]
fn the_circle_check_finds_a_circle_through_a_child_module() {
    let dir = std::env::temp_dir().join(format!("sb-circle-nested-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("state")).unwrap();
    std::fs::write(dir.join("lib.rs"), "pub mod msg;\npub mod state;\n").unwrap();
    std::fs::write(
        dir.join("msg.rs"),
        "pub enum Msg { Drawn(super::state::View) }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("state/mod.rs"),
        "mod leaf;\nmod session;\npub use session::Session;\npub struct View;\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("state/session.rs"),
        "use crate::{\n    msg::{Msg, self},\n};\npub struct Session;\n",
    )
    .unwrap();
    std::fs::write(dir.join("state/leaf.rs"), "use super::View;\n").unwrap();
    let circles = import_circles(&dir);
    // Without the parent's use of its child there is none.
    std::fs::write(
        dir.join("state/mod.rs"),
        "mod leaf;\nmod session;\npub struct View;\n",
    )
    .unwrap();
    let without = import_circles(&dir);
    std::fs::remove_dir_all(&dir).ok();
    let names: Vec<String> = circles.iter().map(|m| m.join("::")).collect();
    assert_eq!(names, vec!["msg", "state", "state::session"]);
    assert_eq!(without, Vec::<Vec<String>>::new());
}

#[test]
fn use_trees_are_spelled_out() {
    assert_eq!(
        expand_use_tree("crate::a::{b::C, d as e,\n f::{self, *}}"),
        vec![
            "crate::a::b::C",
            "crate::a::d",
            "crate::a::f",
            "crate::a::f::*"
        ]
    );
    let text = "use super::{x::Y, z};";
    assert_eq!(path_at(text, 4), "super::{x::Y, z}");
    assert_eq!(path_at("f(crate::a::b(1))", 2), "crate::a::b");
}
