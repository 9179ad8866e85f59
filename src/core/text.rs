//! Small text helpers shared by the reducer and the renderer.

/// Remove ANSI escape sequences and other control characters (keeps `\n` and `\t`).
/// Agents put raw escapes in reasons and tool output; they must never reach the terminal.
pub fn sanitize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek() {
                Some('[') => {
                    chars.next();
                    // CSI: parameters then one final byte in 0x40..=0x7e.
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    chars.next();
                    // OSC: until BEL or ST (ESC \).
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            chars.next();
                            break;
                        }
                    }
                }
                Some(_) => {
                    chars.next();
                }
                None => {}
            },
            '\n' | '\t' => out.push(c),
            '\r' => {}
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The first line of `s`, cut to `max` characters with an ellipsis.
pub fn one_line(s: &str, max: usize) -> String {
    let first = s
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    truncate(first, max)
}

/// Cut `s` to at most `max` characters, marking the cut with `…`.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Compact summary of a tool input for one-line display.
pub fn tool_input_summary(tool: &str, input: &serde_json::Value) -> String {
    let field = |k: &str| input.get(k).and_then(|v| v.as_str());
    let s = match tool {
        "Bash" => field("command").map(str::to_string),
        "Read" | "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => field("file_path")
            .or_else(|| field("notebook_path"))
            .map(str::to_string),
        "Grep" => field("pattern").map(|p| match field("path") {
            Some(path) => format!("{p} in {path}"),
            None => p.to_string(),
        }),
        "Glob" => field("pattern").map(str::to_string),
        "WebFetch" => field("url").map(str::to_string),
        "WebSearch" => field("query").map(str::to_string),
        "Agent" | "Task" => field("description").map(str::to_string),
        "AskUserQuestion" => input
            .get("questions")
            .and_then(|q| q.as_array())
            .map(|q| format!("{} question(s)", q.len())),
        _ => None,
    };
    let s = s.unwrap_or_else(|| {
        let compact = serde_json::to_string(input).unwrap_or_default();
        if compact == "{}" {
            String::new()
        } else {
            compact
        }
    });
    one_line(&sanitize(&s), 160)
}

/// Pretty JSON for display, falling back to the compact text.
pub fn pretty_json(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// Format a token count as `1.2k`.
pub fn human_count(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1000..=999_999 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// Format a duration in milliseconds as `1m05s`, `4.2s` or `350ms`.
pub fn human_duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else if ms < 3_600_000 {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    } else {
        format!("{}h{:02}m", ms / 3_600_000, (ms / 60_000) % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_strips_escapes() {
        assert_eq!(sanitize("a\u{1b}[31mred\u{1b}[0m b\r\n"), "ared b\n");
        assert_eq!(sanitize("x\u{1b}]0;title\u{7}y"), "xy");
        assert_eq!(sanitize("bell\u{7}"), "bell");
    }

    #[test]
    fn truncate_marks_cut() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }

    #[test]
    fn summaries() {
        let v = serde_json::json!({"command": "touch x", "description": "d"});
        assert_eq!(tool_input_summary("Bash", &v), "touch x");
        let v = serde_json::json!({"pattern": "fn a", "path": "src"});
        assert_eq!(tool_input_summary("Grep", &v), "fn a in src");
        assert_eq!(tool_input_summary("X", &serde_json::json!({})), "");
    }
}
