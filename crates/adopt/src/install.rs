//! `switchboard hooks install | uninstall`: switchboard's entries in a CLI's hook settings
//! (Claude's `settings.json`, Codex's `hooks.json`: the same `{"hooks": {Event: [group]}}`
//! shape), as text edits. Installing inserts our groups and nothing else: every other key,
//! hook and the file's order, indentation and spacing stay as they were; installing again
//! changes nothing; uninstalling removes exactly what installing added, which gives back the
//! file from before byte for byte when nothing else changed in between. A file that does not
//! parse is never touched.
//!
//! An entry is ours when its command ends with `MARK` and names `hook <agent>`.

use serde::Serialize;
use serde_json::{Value, json};
use switchboard_backend::hooks::HookAgent;

use super::event::Name;
use super::jsonspan::{self, Node};

/// The end of every command we install: a shell comment that marks it as ours.
pub const MARK: &str = "# switchboard";

/// Seconds a PermissionRequest hook may wait for an answer here before the CLI kills it and
/// shows its own prompt. Claude draws its own dialog meanwhile anyway; Codex's terminal is
/// blank while it waits, so it gets less.
pub const fn gate_timeout(agent: HookAgent) -> u64 {
    match agent {
        HookAgent::Claude => 600,
        HookAgent::Codex => 300,
    }
}

/// Seconds any other hook may take (it sends its event and exits at once; Codex clamps a
/// SessionEnd hook to 3 s and warns at every start when it is given more).
pub const EVENT_TIMEOUT: u64 = 3;

/// Events whose groups take a tool matcher.
const TOOL_EVENTS: &[&str] = &[
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionDenied",
];

/// The hook command for `bin` (already shell-quoted): it runs `bin hook <agent>` when that
/// binary is there, and is a silent no-op (exit 0, nothing printed) when it was removed.
pub fn command(bin_quoted: &str, agent: HookAgent) -> String {
    format!(
        "test -x {bin_quoted} && exec {bin_quoted} hook {}; exit 0 {MARK}",
        agent.name()
    )
}

/// Whether `cmd` is one of ours for `agent`.
pub fn is_ours(cmd: &str, agent: HookAgent) -> bool {
    cmd.trim_end().ends_with(MARK) && cmd.contains(&format!(" hook {};", agent.name()))
}

/// The binary an installed command of ours runs (its first word after `test -x`).
pub fn binary_of(cmd: &str) -> Option<String> {
    let words = shlex::split(cmd.strip_suffix(MARK)?)?;
    (words.first()? == "test" && words.get(1)? == "-x").then(|| words[2].clone())
}

fn group(agent: HookAgent, event: &str, cmd: &str) -> Value {
    let timeout = if event == "PermissionRequest" {
        gate_timeout(agent)
    } else {
        EVENT_TIMEOUT
    };
    let hook = json!({"type": "command", "command": cmd, "timeout": timeout});
    if TOOL_EVENTS.contains(&event) {
        json!({"matcher": "*", "hooks": [hook]})
    } else {
        json!({"hooks": [hook]})
    }
}

/// The settings text with our entries for `agent` running `cmd` (`before`: the file's text,
/// `None` when there is none). Unchanged when they are all there already.
pub fn install(agent: HookAgent, before: Option<&str>, cmd: &str) -> Result<String, String> {
    let mut text = match before {
        Some(t) => t.to_string(),
        None => "{}\n".to_string(),
    };
    let root = root_object(&text)?;
    let style = Style::of(&text);
    let Some(hooks) = root.get("hooks") else {
        let mut all = serde_json::Map::new();
        for e in Name::installed(agent) {
            all.insert((*e).to_string(), json!([group(agent, e, cmd)]));
        }
        insert_member(&mut text, &style, &root, "hooks", &Value::Object(all));
        return Ok(text);
    };
    if !matches!(hooks.value, Node::Object { .. }) {
        return Err("its \"hooks\" is not an object: left untouched".into());
    }
    for e in Name::installed(agent) {
        let root = root_object(&text)?;
        let hooks = &root.get("hooks").expect("checked above").value;
        let Some(list) = hooks.get(e) else {
            insert_member(&mut text, &style, hooks, e, &json!([group(agent, e, cmd)]));
            continue;
        };
        if !matches!(list.value, Node::Array { .. }) {
            return Err(format!("its hooks for {e} are not a list: left untouched"));
        }
        let ours: Vec<&Node> = our_commands(&list.value, agent);
        if ours.iter().any(|c| c.as_str() == Some(cmd)) {
            continue;
        }
        match ours.first() {
            // The binary moved: point our entry at the new one, in place.
            Some(c) => {
                let (s, end) = c.span();
                text.replace_range(s..end, &json!(cmd).to_string());
            }
            None => insert_item(&mut text, &style, &list.value, &group(agent, e, cmd)),
        }
    }
    Ok(text)
}

/// The settings text without our entries for `agent`: the groups we added go (a group the
/// person added hooks of their own to keeps those), then a list and the `hooks` object our
/// removal left empty.
pub fn uninstall(agent: HookAgent, before: &str) -> Result<String, String> {
    let mut text = before.to_string();
    let root = root_object(&text)?;
    if root.get("hooks").is_none() {
        return Ok(text);
    }
    let mut emptied_lists = Vec::new();
    loop {
        let root = root_object(&text)?;
        let hooks = &root.get("hooks").expect("still there").value;
        let Node::Object { members, .. } = hooks else {
            return Err("its \"hooks\" is not an object: left untouched".into());
        };
        let mut edit = None;
        'find: for m in members {
            let items = m.value.items();
            for (gi, g) in items.iter().enumerate() {
                let inner = g.get("hooks").map(|h| h.value.clone());
                let Some(inner @ Node::Array { .. }) = inner else {
                    continue;
                };
                let mine: Vec<usize> = inner
                    .items()
                    .iter()
                    .enumerate()
                    .filter(|(_, h)| {
                        h.get("command")
                            .and_then(|c| c.value.as_str())
                            .is_some_and(|c| is_ours(c, agent))
                    })
                    .map(|(i, _)| i)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                if mine.len() == inner.items().len() {
                    if items.len() == 1 {
                        emptied_lists.push(m.key.clone());
                    }
                    edit = Some((m.value.clone(), gi));
                } else {
                    edit = Some((inner, mine[0]));
                }
                break 'find;
            }
        }
        match edit {
            Some((container, i)) => remove_item(&mut text, &container, i),
            None => break,
        }
    }
    // The lists our removal emptied, then `hooks` if it is empty now.
    for key in emptied_lists {
        let root = root_object(&text)?;
        let hooks = &root.get("hooks").expect("still there").value;
        if let Node::Object { members, .. } = hooks
            && let Some(i) = members.iter().position(|m| m.key == key)
            && members[i].value.items().is_empty()
        {
            remove_item(&mut text, hooks, i);
        }
    }
    let root = root_object(&text)?;
    if let (Node::Object { members, .. }, Some(i)) = (
        &root,
        root_members(&root).iter().position(|m| m.key == "hooks"),
    ) && matches!(&members[i].value, Node::Object { members: m, .. } if m.is_empty())
    {
        remove_item(&mut text, &root, i);
    }
    Ok(text)
}

/// Where our entries for `agent` are, by event: (event, the binary each runs).
pub fn installed(agent: HookAgent, text: &str) -> Result<Vec<(String, Option<String>)>, String> {
    let root = root_object(text)?;
    let mut out = Vec::new();
    if let Some(Node::Object { members, .. }) = root.get("hooks").map(|h| &h.value) {
        for m in members {
            for c in our_commands(&m.value, agent) {
                out.push((m.key.clone(), c.as_str().and_then(binary_of)));
            }
        }
    }
    Ok(out)
}

fn root_object(text: &str) -> Result<Node, String> {
    let root = jsonspan::parse(text).map_err(|e| format!("not valid JSON: {e}"))?;
    match root {
        Node::Object { .. } => Ok(root),
        _ => Err("not a JSON object".into()),
    }
}

fn root_members(n: &Node) -> &[jsonspan::Member] {
    match n {
        Node::Object { members, .. } => members,
        _ => &[],
    }
}

/// The command strings of ours in an event's list of groups.
fn our_commands(list: &Node, agent: HookAgent) -> Vec<&Node> {
    list.items()
        .iter()
        .filter_map(|g| g.get("hooks"))
        .flat_map(|h| h.value.items())
        .filter_map(|h| h.get("command").map(|c| &c.value))
        .filter(|c| c.as_str().is_some_and(|s| is_ours(s, agent)))
        .collect()
}

/// How the file is written: its indentation unit, and whether it is on one line.
struct Style {
    unit: String,
    compact: bool,
}

impl Style {
    fn of(text: &str) -> Style {
        let compact = !text.trim().contains('\n');
        let unit = text
            .lines()
            .skip(1)
            .map(|l| &l[..l.len() - l.trim_start().len()])
            .filter(|ind| !ind.is_empty())
            .min_by_key(|ind| ind.len())
            .map(|ind| if ind.starts_with('\t') { "\t" } else { ind })
            .unwrap_or("  ")
            .to_string();
        Style { unit, compact }
    }

    /// `v` as the file would write it, its first line at the cursor and the rest indented
    /// from `indent`.
    fn render(&self, v: &Value, indent: &str) -> String {
        if self.compact {
            return v.to_string();
        }
        let mut buf = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(self.unit.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
        v.serialize(&mut ser).expect("a Value serializes");
        let pretty = String::from_utf8(buf).expect("JSON is UTF-8");
        pretty.replace('\n', &format!("\n{indent}"))
    }
}

/// The indentation of the line `pos` is on.
fn indent_at(text: &str, pos: usize) -> &str {
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start().len()]
}

fn item_start(n: &Node, m: Option<&jsonspan::Member>) -> usize {
    m.map_or(n.span().0, |m| m.key_start)
}

/// Append `"key": value` to object `obj` (in `text`).
fn insert_member(text: &mut String, style: &Style, obj: &Node, key: &str, value: &Value) {
    let Node::Object { span, members } = obj else {
        return;
    };
    let key = json!(key).to_string();
    match members.last() {
        Some(last) if !style.compact && text[span.0..last.key_start].contains('\n') => {
            let ind = indent_at(text, last.key_start).to_string();
            let at = last.value.span().1;
            let body = style.render(value, &ind);
            text.insert_str(at, &format!(",\n{ind}{key}: {body}"));
        }
        Some(last) => {
            let at = last.value.span().1;
            let body = Style::render(
                &Style {
                    unit: String::new(),
                    compact: true,
                },
                value,
                "",
            );
            text.insert_str(at, &format!(",{key}:{body}"));
        }
        None => {
            let ind = indent_at(text, span.0).to_string();
            let inner = format!("{ind}{}", style.unit);
            let body = style.render(value, &inner);
            let ins = if style.compact {
                format!("{key}:{body}")
            } else {
                format!("\n{inner}{key}: {body}\n{ind}")
            };
            // Between the braces, whatever (whitespace) was there is replaced.
            text.replace_range(span.0 + 1..span.1 - 1, &ins);
        }
    }
}

/// Append `value` to array `arr` (in `text`).
fn insert_item(text: &mut String, style: &Style, arr: &Node, value: &Value) {
    let Node::Array { span, items } = arr else {
        return;
    };
    match items.last() {
        Some(last) if !style.compact && text[span.0..last.span().0].contains('\n') => {
            let ind = indent_at(text, last.span().0).to_string();
            let body = style.render(value, &ind);
            text.insert_str(last.span().1, &format!(",\n{ind}{body}"));
        }
        Some(last) => text.insert_str(last.span().1, &format!(",{value}")),
        None => {
            let ind = indent_at(text, span.0).to_string();
            let inner = format!("{ind}{}", style.unit);
            let ins = if style.compact {
                value.to_string()
            } else {
                format!("\n{inner}{}\n{ind}", style.render(value, &inner))
            };
            text.replace_range(span.0 + 1..span.1 - 1, &ins);
        }
    }
}

/// Remove item `i` of array or object `c` (in `text`) with its separator: the exact inverse
/// of the insertions above.
fn remove_item(text: &mut String, c: &Node, i: usize) {
    let (span, spans): ((usize, usize), Vec<(usize, usize)>) = match c {
        Node::Array { span, items } => (*span, items.iter().map(Node::span).collect()),
        Node::Object { span, members } => (
            *span,
            members
                .iter()
                .map(|m| (item_start(&m.value, Some(m)), m.value.span().1))
                .collect(),
        ),
        _ => return,
    };
    if spans.len() == 1 {
        text.replace_range(span.0 + 1..span.1 - 1, "");
    } else if i > 0 {
        text.replace_range(spans[i - 1].1..spans[i].1, "");
    } else {
        text.replace_range(spans[0].0..spans[1].0, "");
    }
}

#[cfg(test)]
#[path = "install_tests.rs"]
mod tests;
