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
        .unwrap_or_else(|| crate::paths::fallback_dir(&std::env::temp_dir(), "switchboard-config"))
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
    /// `[keys]`: key overrides (action name → key, e.g. `allow_once = "Y"`) and the settle
    /// time.
    #[serde(default)]
    pub keys: KeysTable,
    /// `[[session]]` profiles for `switchboard up`, kept as raw tables here: one bad profile
    /// must not hide the others' problems, so `crate::workspace::profile` checks them key by
    /// key and reports every problem with its line.
    #[serde(default)]
    pub session: Vec<toml::Table>,
    /// `[gateway]`: what commands run for a remote agent get, and the owner's extra tools.
    #[serde(default)]
    pub gateway: GatewayDefaults,
    /// `[hooks]`: sessions started in their own terminals (`switchboard hooks install`).
    #[serde(default)]
    pub hooks: HooksDefaults,
}

/// `[keys]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct KeysTable {
    /// Milliseconds a card, as it is now, must have been on a terminal's screen before its
    /// answer keys act (default 300; 0 turns it off): a key typed for the card that stood
    /// there a moment before does nothing but say so.
    pub settle_ms: Option<u64>,
    /// Every other key: an action name and the key it moves to (a key that is not a string
    /// is an error; an unknown action is one `keymap::build` reports).
    #[serde(flatten)]
    pub actions: std::collections::BTreeMap<String, String>,
}

/// `[hooks]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HooksDefaults {
    /// The host hook events go to when several are running (with one, it needs no name).
    pub host: Option<String>,
    /// Directories transcripts may also be read from, besides Claude's (`~/.claude/projects`)
    /// and Codex's (`$CODEX_HOME/sessions`).
    #[serde(default)]
    pub transcript_dirs: Vec<PathBuf>,
}

/// `[gateway]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GatewayDefaults {
    /// Variables gateway commands get beyond the allowlist: `NAME` (our value) or
    /// `NAME=value` (`backend::gateway::tools::env`).
    #[serde(default)]
    pub env: Vec<String>,
    /// `[[gateway.tool]]`, kept raw here: `backend::gateway::tools::extra::parse` checks them.
    #[serde(default)]
    pub tool: Vec<toml::Table>,
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

/// The line (1-based) of the `n`-th (0-based) table of the array of tables `array`
/// (`[[session]]`), or of `key` inside it. Read from the parsed document's spans, so a
/// multi-line array or a comment that looks like a header cannot mislead it; the inline
/// form (`session = [{ … }]`) is found too.
pub fn line_of_array_key(text: &str, array: &str, n: usize, key: Option<&str>) -> Option<usize> {
    let doc = toml_edit::Document::parse(text).ok()?;
    let line = |at: usize| text[..at.min(text.len())].matches('\n').count() + 1;
    match doc.as_table().get(array)? {
        toml_edit::Item::ArrayOfTables(a) => {
            let t = a.get(n)?;
            let span = match key {
                Some(k) => t.key(k)?.span()?,
                None => t.span()?,
            };
            Some(line(span.start))
        }
        toml_edit::Item::Value(toml_edit::Value::Array(a)) => {
            let v = a.get(n)?;
            let span = match (key, v.as_inline_table()) {
                (Some(k), Some(t)) => t.key(k)?.span()?,
                (Some(_), None) => return None,
                (None, _) => v.span()?,
            };
            Some(line(span.start))
        }
        _ => None,
    }
}

pub fn parse_config(path: &Path, text: &str) -> Result<Config, ConfigError> {
    toml::from_str(text).map_err(|e| toml_error(path, text, e))
}

/// The config file, or defaults when there is none. A broken file is an error, never a panic.
pub fn load_config() -> Result<Config, ConfigError> {
    load_config_from(&config_file(), false).map(|(c, _)| c)
}

/// `path` parsed, with its text (for finding lines). A missing file gives the defaults and
/// no text, unless `required` (a file named with `--config` must exist).
pub fn load_config_from(path: &Path, required: bool) -> Result<(Config, String), ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            crate::paths::check_owner(path)
                .map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
            Ok((parse_config(path, &text)?, text))
        }
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {
            Ok((Config::default(), String::new()))
        }
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
    crate::paths::check_owner(path).map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
    for spec in parse_rules(path, &text)? {
        rules.add(spec, Origin::File(path.display().to_string()));
    }
    Ok(())
}

const RULES_HEADER: &str = "# switchboard approval rules: action = allow | ask | deny, tool = a glob on the tool name,\n\
# pattern = a glob on the argument (Bash command, file path). Deny wins over ask over allow.\n";

/// The rules file as text, for an edit. A file that cannot be read refuses the edit: saving
/// over it as if it were empty would lose every rule in it (a lost `deny` fails open).
fn read_for_edit(path: &Path, missing_ok: bool) -> Result<String, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(t),
        Err(e) if missing_ok && e.kind() == std::io::ErrorKind::NotFound => {
            Ok(RULES_HEADER.to_string())
        }
        Err(e) => Err(ConfigError(format!(
            "{}: cannot read it ({e}); the file is left as it is",
            path.display()
        ))),
    }
}

fn edit_error(path: &Path, e: impl std::fmt::Display) -> ConfigError {
    ConfigError(format!(
        "{}: {e}; the file is left as it is",
        path.display()
    ))
}

/// One `[[rule]]` table for `spec`, in the order the README documents.
fn rule_table(spec: &RuleSpec) -> toml_edit::Table {
    let mut t = toml_edit::Table::new();
    t.insert("action", toml_edit::value(spec.action.label()));
    t.insert("tool", toml_edit::value(spec.tool.as_str()));
    if let Some(p) = &spec.pattern {
        t.insert("pattern", toml_edit::value(p.as_str()));
    }
    if spec.exact {
        t.insert("exact", toml_edit::value(true));
    }
    t
}

/// Replace `path` with `text` atomically: a private temporary file in the same directory,
/// synced, then renamed over it. A crash leaves the old file or the new one, never half.
/// A symlinked file (dotfiles) is written where the link points, the link kept; an existing
/// file keeps its mode, a new one is 0600. Rules files and the CLIs' hook settings.
pub(crate) fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path)?,
        _ => path.to_path_buf(),
    };
    crate::paths::prepare_parent(&target)?;
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .ok_or_else(|| std::io::Error::other("the path has no file name"))?;
    // The same temporary-file-and-rename writer that agent writes use, beneath the
    // directory's handle; a new rules file is private from its first byte.
    let root = crate::contain::Root::open(dir)?;
    root.write_atomic_with(Path::new(name), text.as_bytes(), None, Some(0o600))
        .map_err(|e| match e {
            crate::contain::FsError::Io(e) => e,
            e => std::io::Error::other(e.to_string()),
        })
}

/// Add `spec` as a `[[rule]]` table at the end of the rules file (created when missing),
/// keeping everything else in it (comments, order, layout). Already there: nothing to do.
pub fn append_rule(path: &Path, spec: &RuleSpec) -> Result<(), ConfigError> {
    let text = read_for_edit(path, true)?;
    if parse_rules(path, &text)?.contains(spec) {
        return Ok(());
    }
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| edit_error(path, e))?;
    // In a file of comments only, the comments are the document's trailing text: they go
    // above the first table so they stay at the top.
    let trailing = doc.trailing().as_str().unwrap_or("").to_string();
    let first = !doc.contains_key("rule");
    if first && !trailing.trim().is_empty() {
        doc.set_trailing("");
    }
    match doc.entry("rule") {
        toml_edit::Entry::Vacant(v) => {
            let mut t = rule_table(spec);
            if !trailing.trim().is_empty() {
                t.decor_mut().set_prefix(format!("{trailing}\n"));
            }
            let mut a = toml_edit::ArrayOfTables::new();
            a.push(t);
            v.insert(toml_edit::Item::ArrayOfTables(a));
        }
        toml_edit::Entry::Occupied(mut o) => match o.get_mut() {
            toml_edit::Item::ArrayOfTables(a) => a.push(rule_table(spec)),
            toml_edit::Item::Value(toml_edit::Value::Array(a)) => {
                a.push(rule_table(spec).into_inline_table())
            }
            _ => return Err(edit_error(path, "`rule` is not a list of tables")),
        },
    }
    write_atomic(path, &doc.to_string()).map_err(|e| edit_error(path, e))
}

/// Remove every rule equal to `spec` from the rules file, keeping everything else.
pub fn remove_rule(path: &Path, spec: &RuleSpec) -> Result<(), ConfigError> {
    let text = read_for_edit(path, false)?;
    // The parsed list is in file order, whichever way the list is written.
    let drop: Vec<usize> = parse_rules(path, &text)?
        .iter()
        .enumerate()
        .filter(|(_, s)| *s == spec)
        .map(|(i, _)| i)
        .collect();
    if drop.is_empty() {
        return Ok(());
    }
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| edit_error(path, e))?;
    match doc.get_mut("rule") {
        Some(toml_edit::Item::ArrayOfTables(a)) => {
            // Comments above a removed table (the file's own header, notes) stay: they move to
            // the table that follows it, or to the end of the file.
            let mut carry = String::new();
            for i in drop.iter().rev() {
                let prefix = a
                    .get(*i)
                    .and_then(|t| t.decor().prefix())
                    .and_then(|p| p.as_str())
                    .filter(|p| p.contains('#'))
                    .map(str::to_string);
                a.remove(*i);
                let Some(prefix) = prefix else { continue };
                match a.get_mut(*i) {
                    Some(next) => {
                        let old = next
                            .decor()
                            .prefix()
                            .and_then(|p| p.as_str())
                            .unwrap_or("")
                            .to_string();
                        next.decor_mut().set_prefix(format!("{prefix}{old}"));
                    }
                    None => carry = format!("{prefix}{carry}"),
                }
            }
            if !carry.is_empty() {
                let old = doc.trailing().as_str().unwrap_or("").to_string();
                doc.set_trailing(format!("{carry}{old}"));
            }
        }
        Some(toml_edit::Item::Value(toml_edit::Value::Array(a))) => {
            for i in drop.iter().rev() {
                a.remove(*i);
            }
        }
        _ => return Err(edit_error(path, "`rule` is not a list of tables")),
    }
    write_atomic(path, &doc.to_string()).map_err(|e| edit_error(path, e))
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

    /// `[gateway]` holds the command environment and the extra tools; a typo there is an error.
    #[test]
    fn the_gateway_section_parses() {
        let p = Path::new("config.toml");
        let c = parse_config(
            p,
            "[gateway]\nenv = [\"CARGO_HOME\", \"RUST_LOG=info\"]\n\n[[gateway.tool]]\nname = \"t\"\nargv = [\"true\"]\n",
        )
        .unwrap();
        assert_eq!(c.gateway.env, ["CARGO_HOME", "RUST_LOG=info"]);
        assert_eq!(c.gateway.tool.len(), 1);
        let e = parse_config(p, "[gateway]\nenvs = []\n").unwrap_err().0;
        assert!(e.starts_with("config.toml:2:"), "{e}");
    }

    #[test]
    fn keys_are_found_inside_the_nth_table_of_an_array() {
        let text = "bell = true\n[[session]]\nname = \"a\"\n# [[session]] in a comment\ncommand = [\n  \"x\",\n]\n\n[[session]]\n\n  name = \"b\"\ncwd = \"/\"\n[keys]\nquit = \"Q\"\n";
        assert_eq!(line_of_array_key(text, "session", 0, None), Some(2));
        assert_eq!(line_of_array_key(text, "session", 0, Some("name")), Some(3));
        assert_eq!(
            line_of_array_key(text, "session", 0, Some("command")),
            Some(5)
        );
        assert_eq!(line_of_array_key(text, "session", 0, Some("cwd")), None);
        assert_eq!(line_of_array_key(text, "session", 1, None), Some(9));
        assert_eq!(
            line_of_array_key(text, "session", 1, Some("name")),
            Some(11)
        );
        assert_eq!(line_of_array_key(text, "session", 1, Some("cwd")), Some(12));
        assert_eq!(line_of_array_key(text, "session", 2, None), None);
        let inline = "session = [\n  { name = \"a\" },\n  { name = \"b\",\n    cwd = \"/\" },\n]\n";
        assert_eq!(
            line_of_array_key(inline, "session", 1, Some("cwd")),
            Some(4)
        );
        assert_eq!(line_of_array_key(inline, "session", 1, None), Some(3));
        assert_eq!(line_of_array_key("[[session]\n", "session", 0, None), None);
        let cfg = parse_config(Path::new("c"), text).unwrap();
        assert_eq!(cfg.session.len(), 2);
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

    fn spec(action: Action, tool: &str, pattern: &str) -> RuleSpec {
        RuleSpec {
            action,
            tool: tool.into(),
            pattern: Some(pattern.into()),
            exact: false,
        }
    }

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sb-rules-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn rule_edits_keep_comments_and_other_rules() {
        let dir = scratch("comments");
        let path = dir.join("rules.toml");
        let text = "# my rules, hand-written\n\n# never let it delete\n[[rule]]\naction = \"deny\"  # keep!\ntool = \"Bash\"\npattern = \"rm *\"\n";
        std::fs::write(&path, text).unwrap();
        let git = spec(Action::Allow, "Bash", "git status");
        append_rule(&path, &git).unwrap();
        let after = std::fs::read_to_string(&path).unwrap();
        assert!(after.starts_with(text), "{after}");
        assert!(after.contains("pattern = \"git status\""), "{after}");
        remove_rule(&path, &git).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        // Removing the first keeps the comments around it and the rest of the file.
        append_rule(&path, &git).unwrap();
        remove_rule(&path, &spec(Action::Deny, "Bash", "rm *")).unwrap();
        let after = std::fs::read_to_string(&path).unwrap();
        assert!(after.starts_with("# my rules, hand-written"), "{after}");
        assert!(after.contains("# never let it delete"), "{after}");
        let mut rules = Rules::default();
        load_rules(&path, &mut rules).unwrap();
        assert_eq!(rules.list.len(), 1);
        assert_eq!(rules.list[0].spec, git);
        // An inline list is edited in place too.
        let inline = dir.join("inline.toml");
        std::fs::write(
            &inline,
            "# x\nrule = [{ action = \"deny\", tool = \"Write\" }]\n",
        )
        .unwrap();
        append_rule(&inline, &git).unwrap();
        let mut rules = Rules::default();
        load_rules(&inline, &mut rules).unwrap();
        assert_eq!(rules.list.len(), 2);
        assert!(
            std::fs::read_to_string(&inline)
                .unwrap()
                .starts_with("# x\n")
        );
        std::fs::remove_dir_all(dir).ok();
    }

    #[cfg(unix)]
    #[test]
    fn a_rules_file_of_another_user_is_not_trusted() {
        let dir = scratch("owner");
        let path = dir.join("rules.toml");
        std::fs::write(&path, "[[rule]]\naction = \"allow\"\ntool = \"*\"\n").unwrap();
        let mut rules = Rules::default();
        load_rules(&path, &mut rules).unwrap();
        assert_eq!(rules.list.len(), 1, "our own file is read");
        // Only root can hand a file to someone else; as anyone else, root's files are trusted.
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
            let mut rules = Rules::default();
            let e = load_rules(&path, &mut rules).unwrap_err();
            assert!(e.0.contains("belongs to uid 65534"), "{e}");
            assert!(rules.list.is_empty());
        }
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn an_unreadable_rules_file_is_never_overwritten() {
        let dir = scratch("unreadable");
        let path = dir.join("rules.toml");
        // Not UTF-8: unreadable as text. It must not be treated as an empty file.
        let bytes = b"[[rule]]\naction = \"deny\"\ntool = \"Bash\"\npattern = \"rm \xff*\"\n";
        std::fs::write(&path, bytes).unwrap();
        let e = append_rule(&path, &spec(Action::Allow, "Bash", "ls")).unwrap_err();
        assert!(e.0.contains("cannot read it"), "{e}");
        assert!(e.0.contains("left as it is"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        let e = remove_rule(&path, &spec(Action::Deny, "Bash", "rm *")).unwrap_err();
        assert!(e.0.contains("cannot read it"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        // A file that does not parse is refused too.
        std::fs::write(&path, "[[rule]\n").unwrap();
        assert!(append_rule(&path, &spec(Action::Allow, "Bash", "ls")).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[[rule]\n");
        std::fs::remove_dir_all(dir).ok();
    }

    #[cfg(unix)]
    #[test]
    fn rule_saves_replace_the_file_atomically_and_privately() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = scratch("atomic");
        let path = dir.join("sub/rules.toml");
        append_rule(&path, &spec(Action::Deny, "Bash", "rm *")).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let sub = std::fs::metadata(dir.join("sub")).unwrap();
        assert_eq!(sub.permissions().mode() & 0o777, 0o700);
        // A save writes a new file and renames it over the old one (a new inode), never
        // rewrites the old one in place, and leaves no temporary file behind.
        let before = meta.ino();
        append_rule(&path, &spec(Action::Allow, "Bash", "ls")).unwrap();
        assert_ne!(std::fs::metadata(&path).unwrap().ino(), before);
        let names: Vec<_> = std::fs::read_dir(dir.join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["rules.toml"]);
        // A rules file reached through a link stays a link; the target is updated.
        let real = dir.join("real.toml");
        std::fs::write(&real, "# dotfiles\n").unwrap();
        let link = dir.join("link.toml");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        append_rule(&link, &spec(Action::Deny, "Bash", "rm *")).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        let real_text = std::fs::read_to_string(&real).unwrap();
        assert!(real_text.starts_with("# dotfiles\n"), "{real_text}");
        assert!(real_text.contains("[[rule]]"), "{real_text}");
        std::fs::remove_dir_all(dir).ok();
    }
}
