//! Readers of wire values: string fields, serde names, content text and tool metadata.

use serde_json::{Map, Value};

use crate::codec::schema;

pub(super) fn s(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

pub(super) fn content_text(c: &schema::ContentBlock) -> String {
    match c {
        schema::ContentBlock::Text(t) => t.text.clone(),
        schema::ContentBlock::ResourceLink(l) => format!("[link] {}", l.uri),
        schema::ContentBlock::Image(_) => "[image]".into(),
        schema::ContentBlock::Audio(_) => "[audio]".into(),
        schema::ContentBlock::Resource(_) => "[resource]".into(),
        _ => "[content]".into(),
    }
}

pub(super) fn wire_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

pub(super) fn tool_name(meta: Option<&Map<String, Value>>) -> Option<String> {
    meta?
        .get("claudeCode")?
        .get("toolName")?
        .as_str()
        .map(str::to_string)
}

pub(super) fn command_of(raw: Option<&Value>) -> Option<String> {
    let c = raw?.get("command")?;
    match c {
        Value::String(s) => Some(s.clone()),
        // An argv: quoted, so `["sh","-c","ls; rm -rf ~"]` reads `sh -c 'ls; rm -rf ~'`.
        Value::Array(a) => {
            let words: Vec<String> = a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string())
                })
                .collect();
            Some(super::actions::shell_join(words.iter().map(String::as_str)))
        }
        _ => None,
    }
}

pub(super) fn locations(l: &[schema::ToolCallLocation]) -> Vec<String> {
    l.iter()
        .map(|l| match l.line {
            Some(n) => format!("{}:{n}", l.path.display()),
            None => l.path.display().to_string(),
        })
        .collect()
}
