//! `switchboard config check` and `switchboard paths`, run as the built binary.

use super::*;

fn run_cli(config_dir: &Path, args: &[&str]) -> (i32, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .env("SWITCHBOARD_CONFIG_DIR", config_dir)
        .env("SWITCHBOARD_DATA_DIR", config_dir.join("data"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run switchboard");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn check_with(name: &str, config: &str) -> (i32, String, PathBuf) {
    let dir = temp(&format!("config-{name}"));
    std::fs::write(dir.join("config.toml"), config).unwrap();
    let (code, text) = run_cli(&dir, &["config", "check"]);
    (code, text, dir.join("config.toml"))
}

#[test]
fn config_check_good_and_bad() {
    let (code, text, file) = check_with(
        "good",
        "bell = false\ntheme = \"light\"\n\n[claude]\nmodel = \"sonnet\"\nbreaks = [\"Bash\"]\n\n[keys]\nallow_once = \"Y\"\n",
    );
    assert_eq!(code, 0, "{text}");
    assert!(text.contains(&format!("{}: ok", file.display())), "{text}");

    let (code, text, file) = check_with("unknown", "bell = true\nbel = false\n");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(&format!("{}:2", file.display())), "{text}");
    assert!(text.contains("bel"), "{text}");

    let (code, text, file) = check_with("type", "theme = \"dark\"\n[claude]\nbreaks = \"Bash\"\n");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(&format!("{}:3", file.display())), "{text}");
    assert!(text.contains("breaks"), "the key is named: {text}");

    let (code, text, file) = check_with("theme", "bell = true\ntheme = \"solarized-neon\"\n");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(
        text.contains("theme") && text.contains("solarized-neon"),
        "{text}"
    );
    assert!(text.contains(":2"), "the line is named: {text}");

    let (code, text, file) = check_with("keys", "[keys]\nallow_once = \"Y\"\nfly = \"x\"\n");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains("fly"), "{text}");
    assert!(text.contains(":3"), "the line is named: {text}");

    // An override taking a key another binding uses in the same context names both and it.
    let (code, text, file) = check_with("collide", "[keys]\nhelp = \"H\"\ndetail = \"y\"\n");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(&format!("{}:3", file.display())), "{text}");
    assert!(
        text.contains("detail") && text.contains("allow_once") && text.contains("Permission"),
        "{text}"
    );
    // Overrides are checked together: a default its action gave up is free.
    let (code, text, _) = check_with("moved", "[keys]\nfocus_subtree = \"u\"\nqueue = \"U\"\n");
    assert_eq!(code, 0, "{text}");

    // A broken rules file is checked too.
    let dir = temp("config-rules");
    std::fs::write(dir.join("config.toml"), "").unwrap();
    std::fs::write(
        dir.join("rules.toml"),
        "[[rule]]\naction = \"allow\"\ntool = \"Bash\"\n\n[[rule]]\naction = \"maybe\"\ntool = \"Bash\"\n",
    )
    .unwrap();
    let (code, text) = run_cli(&dir, &["config", "check"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!("{}:6", dir.join("rules.toml").display())),
        "{text}"
    );
}

#[test]
fn paths_prints_the_config_paths() {
    let dir = temp("paths");
    let (code, text) = run_cli(&dir, &["paths"]);
    assert_eq!(code, 0, "{text}");
    for (label, path) in [
        ("config dir:", dir.clone()),
        ("config file:", dir.join("config.toml")),
        ("rules file:", dir.join("rules.toml")),
        ("themes dir:", dir.join("themes")),
        ("data dir:", dir.join("data")),
        ("recordings:", dir.join("data").join("recordings")),
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} line:\n{text}"));
        assert_eq!(
            line[label.len()..].trim(),
            path.display().to_string(),
            "{text}"
        );
    }
    // rules_file in the config moves the rules file.
    std::fs::write(
        dir.join("config.toml"),
        "rules_file = \"/srv/team-rules.toml\"\n",
    )
    .unwrap();
    let (_, text) = run_cli(&dir, &["paths"]);
    assert!(text.contains("rules file:  /srv/team-rules.toml"), "{text}");
}
