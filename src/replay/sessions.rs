//! `switchboard sessions` and `import`: listing recordings and converting cassettes.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::load::{self, Format, Loaded};
use crate::record::{Dir, Recorder};

/// One row of `switchboard sessions`.
#[derive(Debug)]
pub struct Summary {
    pub path: PathBuf,
    pub started: String,
    pub started_ms: u64,
    pub backend: String,
    pub cwd: String,
    pub first_prompt: String,
    pub answered: usize,
    pub result: String,
}

pub fn summarize(path: &Path, loaded: &Loaded) -> Summary {
    let h = loaded.header.clone().unwrap_or(Value::Null);
    let hs = |k: &str| h.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut first_prompt = String::new();
    let mut answered = 0;
    let mut result = String::from("no result");
    let mut requests = std::collections::HashSet::new();
    for f in &loaded.frames {
        let Ok(v) = serde_json::from_str::<Value>(&f.text) else {
            continue;
        };
        let t = v.get("type").and_then(Value::as_str);
        match (f.dir, t) {
            (Dir::In, Some("control_request")) => {
                if let Some(id) = v.get("request_id").and_then(Value::as_str) {
                    requests.insert(id.to_string());
                }
            }
            (Dir::Out, Some("control_response")) => {
                let id = v
                    .pointer("/response/request_id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if requests.contains(id) {
                    answered += 1;
                }
            }
            (Dir::Out, Some("user")) if first_prompt.is_empty() => {
                first_prompt = v
                    .pointer("/message/content/0/text")
                    .or_else(|| v.pointer("/message/content"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
            }
            (Dir::In, Some("result")) => {
                let sub = v.get("subtype").and_then(Value::as_str).unwrap_or("?");
                let err = v.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                result = if err {
                    format!("{sub} (error)")
                } else {
                    sub.to_string()
                };
            }
            _ => {}
        }
    }
    Summary {
        path: path.to_path_buf(),
        started: hs("started"),
        started_ms: h.get("started_ms").and_then(Value::as_u64).unwrap_or(0),
        backend: loaded.backend.clone(),
        cwd: hs("cwd"),
        first_prompt: crate::core::text::one_line(&first_prompt, 60),
        answered,
        result,
    }
}

/// Every readable recording in `dir`, newest first.
pub fn list(dir: &Path) -> Vec<Summary> {
    let mut out: Vec<Summary> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|p| {
            let loaded = load::load(&p, Some(Format::Recording)).ok()?;
            Some(summarize(&p, &loaded))
        })
        .collect();
    out.sort_by(|a, b| b.started_ms.cmp(&a.started_ms).then(b.path.cmp(&a.path)));
    out
}

/// Convert a cowork-harness cassette into our recording format. Times are synthetic
/// (one millisecond apart), and a note says where the frames came from.
pub fn import(src: &Path, dst: &Path) -> Result<usize, String> {
    let loaded = load::load(src, Some(Format::Cassette))?;
    let argv = vec!["(imported cassette)".to_string(), src.display().to_string()];
    let mut rec = Recorder::create(dst, &loaded.backend, &argv, "")
        .map_err(|e| format!("cannot write {}: {e}", dst.display()))?;
    let t0 = crate::record::now_ms();
    let note = format!(
        "imported from {} (cowork-harness cassette); frame times are synthetic",
        src.display()
    );
    rec.record_at(t0, Dir::Note, &note)
        .map_err(|e| e.to_string())?;
    for (i, f) in loaded.frames.iter().enumerate() {
        rec.record_at(t0 + 1 + i as u64, f.dir, &f.text)
            .map_err(|e| e.to_string())?;
    }
    Ok(loaded.frames.len())
}
