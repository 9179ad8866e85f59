//! The config dir: `config.toml`, rules files and user themes. All file IO lives here; the
//! core only sees the parsed values.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::core::rules::{Origin, RuleSpec, Rules};

/// `$SWITCHBOARD_CONFIG_DIR`, else the platform config dir (`~/.config/switchboard`).
pub fn config_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SWITCHBOARD_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    directories::ProjectDirs::from("dev", "switchboard", "switchboard")
        .map(|p| p.config_dir().to_path_buf())
        .unwrap_or_else(|| std::env::temp_dir().join("switchboard-config"))
}

pub fn config_file() -> PathBuf {
    config_dir().join("config.toml")
}

pub fn default_rules_file() -> PathBuf {
    config_dir().join("rules.toml")
}

pub fn themes_dir() -> PathBuf {
    config_dir().join("themes")
}

/// `config.toml`. Every key is optional; unknown keys are errors (a typo must not be ignored).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Ring the terminal bell when a gate opens (default true).
    pub bell: Option<bool>,
    /// A command run (through `sh -c`) when a gate opens; `$SWITCHBOARD_TITLE` and
    /// `$SWITCHBOARD_MESSAGE` hold the text.
    pub notify_command: Option<String>,
    /// Seconds after a cancel (Ctrl-C) with no turn end before the agent counts as not
    /// responding and switchboard offers to stop it (default 10).
    pub cancel_grace_secs: Option<u64>,
    /// Theme name (`dark`, `light`, `high-contrast`, a user theme) or a file path.
    pub theme: Option<String>,
    /// Where `A` saves rules (default `<config dir>/rules.toml`).
    pub rules_file: Option<PathBuf>,
    /// Defaults for `switchboard claude`.
    #[serde(default)]
    pub claude: ClaudeDefaults,
    /// Key overrides: action name → key (e.g. `allow_once = "Y"`).
    #[serde(default)]
    pub keys: std::collections::BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClaudeDefaults {
    pub bin: Option<PathBuf>,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
    #[serde(default)]
    pub breaks: Vec<String>,
}

/// A config error that says where: file, line, key.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn toml_error(path: &Path, text: &str, e: toml::de::Error) -> ConfigError {
    let line = e
        .span()
        .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
    let at = line.map(|l| format!(":{l}")).unwrap_or_default();
    let msg = e.message();
    // Name the key unless the message already does ("unknown field `bel`").
    let key = line
        .and_then(|l| key_at_line(text, l))
        .filter(|k| !msg.contains(&format!("`{}`", k.rsplit('.').next().unwrap_or(k))))
        .map(|k| format!("{k}: "))
        .unwrap_or_default();
    ConfigError(format!("{}{at}: {key}{msg}", path.display()))
}

/// The dotted key set on `line` (1-based): `claude.breaks` for `breaks = …` under `[claude]`.
fn key_at_line(text: &str, line: usize) -> Option<String> {
    let mut table = String::new();
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if t.starts_with('[') {
            table = t.trim_matches(['[', ']']).trim().to_string();
        }
        if i + 1 == line {
            if t.starts_with('[') || t.starts_with('#') {
                return None;
            }
            let k = t.split_once('=')?.0.trim().trim_matches('"');
            return Some(if table.is_empty() {
                k.to_string()
            } else {
                format!("{table}.{k}")
            });
        }
    }
    None
}

/// The line (1-based) where `key` is set in `[table]` (`None`: the top level).
pub fn line_of_key(text: &str, table: Option<&str>, key: &str) -> Option<usize> {
    let want = match table {
        Some(t) => format!("{t}.{key}"),
        None => key.to_string(),
    };
    (1..=text.lines().count()).find(|l| key_at_line(text, *l).as_deref() == Some(want.as_str()))
}

pub fn parse_config(path: &Path, text: &str) -> Result<Config, ConfigError> {
    toml::from_str(text).map_err(|e| toml_error(path, text, e))
}

/// The config file, or defaults when there is none. A broken file is an error, never a panic.
pub fn load_config() -> Result<Config, ConfigError> {
    let path = config_file();
    match std::fs::read_to_string(&path) {
        Ok(text) => parse_config(&path, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
        Err(e) => Err(ConfigError(format!("{}: {e}", path.display()))),
    }
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    #[serde(default)]
    rule: Vec<RuleSpec>,
}

pub fn parse_rules(path: &Path, text: &str) -> Result<Vec<RuleSpec>, ConfigError> {
    toml::from_str::<RulesFile>(text)
        .map(|f| f.rule)
        .map_err(|e| toml_error(path, text, e))
}

/// Add the rules of `path` to `rules` (a missing file adds nothing).
pub fn load_rules(path: &Path, rules: &mut Rules) -> Result<(), ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(ConfigError(format!("{}: {e}", path.display()))),
    };
    for spec in parse_rules(path, &text)? {
        rules.add(spec, Origin::File(path.display().to_string()));
    }
    Ok(())
}

fn write_rules(path: &Path, specs: Vec<RuleSpec>) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let body = toml::to_string(&RulesFile { rule: specs }).map_err(std::io::Error::other)?;
    let text = format!(
        "# switchboard approval rules: action = allow | ask | deny, tool = a glob on the tool name,\n\
         # pattern = a glob on the argument (Bash command, file path). Deny wins over ask over allow.\n\n{body}"
    );
    std::fs::write(path, text)
}

pub fn append_rule(path: &Path, spec: &RuleSpec) -> Result<(), ConfigError> {
    let mut specs = match std::fs::read_to_string(path) {
        Ok(t) => parse_rules(path, &t)?,
        Err(_) => Vec::new(),
    };
    if !specs.contains(spec) {
        specs.push(spec.clone());
    }
    write_rules(path, specs).map_err(|e| ConfigError(format!("{}: {e}", path.display())))
}

pub fn remove_rule(path: &Path, spec: &RuleSpec) -> Result<(), ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
    let specs: Vec<RuleSpec> = parse_rules(path, &text)?
        .into_iter()
        .filter(|s| s != spec)
        .collect();
    write_rules(path, specs).map_err(|e| ConfigError(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rules::Action;

    #[test]
    fn config_errors_name_line_and_key() {
        let p = Path::new("config.toml");
        let e = parse_config(p, "bell = true\nbel = false\n").unwrap_err().0;
        assert!(e.starts_with("config.toml:2:"), "{e}");
        assert!(e.contains("bel"), "{e}");
        let e = parse_config(p, "bell = \"yes\"\n").unwrap_err().0;
        assert!(e.starts_with("config.toml:1: bell: "), "{e}");
        let e = parse_config(p, "# x\n[claude]\nbreaks = \"Bash\"\n")
            .unwrap_err()
            .0;
        assert!(e.starts_with("config.toml:3: claude.breaks: "), "{e}");
        let text = "theme = \"x\"\n[keys]\nquit = \"Q\"\n";
        assert_eq!(line_of_key(text, None, "theme"), Some(1));
        assert_eq!(line_of_key(text, Some("keys"), "quit"), Some(3));
        assert_eq!(line_of_key(text, None, "quit"), None);
        let ok = parse_config(p, "theme = \"light\"\n[claude]\nbreaks = [\"Bash\"]\n").unwrap();
        assert_eq!(ok.claude.breaks, vec!["Bash"]);
    }

    #[test]
    fn rules_file_round_trip() {
        let dir = std::env::temp_dir().join(format!("sb-rules-{}", std::process::id()));
        let path = dir.join("rules.toml");
        let spec = RuleSpec {
            action: Action::Deny,
            tool: "Bash".into(),
            pattern: Some("rm *".into()),
            exact: false,
        };
        append_rule(&path, &spec).unwrap();
        append_rule(&path, &spec).unwrap();
        let mut rules = Rules::default();
        load_rules(&path, &mut rules).unwrap();
        assert_eq!(rules.list.len(), 1);
        assert_eq!(rules.list[0].spec, spec);
        remove_rule(&path, &spec).unwrap();
        let mut rules = Rules::default();
        load_rules(&path, &mut rules).unwrap();
        assert!(rules.list.is_empty());
        std::fs::remove_dir_all(dir).ok();
    }
}
