//! `switchboard sessions` and `import`: listing recordings and converting cassettes.

use std::path::{Path, PathBuf};

use crate::core::BackendKind;
use serde_json::Value;

use super::load::{self, Format, Loaded};
use crate::record::{Dir, Recorder};

/// One row of `switchboard sessions`.
#[derive(Debug)]
pub struct Summary {
    pub path: PathBuf,
    pub started: String,
    pub started_ms: u64,
    pub backend: BackendKind,
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
    if loaded.backend == BackendKind::Acp {
        let acp = acp_summary(loaded);
        first_prompt = acp.first_prompt;
        answered = acp.answered;
        result = acp.result;
    }
    for f in loaded
        .frames
        .iter()
        .filter(|_| loaded.backend != BackendKind::Acp)
    {
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
    let mut cwd = hs("cwd");
    if cwd.is_empty() && loaded.backend == BackendKind::Acp {
        cwd = acp_cwd(loaded).unwrap_or_default();
    }
    Summary {
        path: path.to_path_buf(),
        started: hs("started"),
        started_ms: h.get("started_ms").and_then(Value::as_u64).unwrap_or(0),
        backend: loaded.backend,
        cwd,
        first_prompt: crate::core::text::one_line(&first_prompt, 60),
        answered,
        result,
    }
}

struct AcpSummary {
    first_prompt: String,
    answered: usize,
    result: String,
}

/// An ACP recording: the first `session/prompt`'s text, the agent's gate requests we answered
/// (our replies keyed to its ids; our own ids are a separate table), and the last turn's stop
/// reason.
fn acp_summary(loaded: &Loaded) -> AcpSummary {
    use std::collections::HashMap;
    let mut s = AcpSummary {
        first_prompt: String::new(),
        answered: 0,
        result: "no result".into(),
    };
    let mut theirs: HashMap<String, String> = HashMap::new();
    let mut prompts = std::collections::HashSet::new();
    for f in &loaded.frames {
        let Ok(v) = serde_json::from_str::<Value>(&f.text) else {
            continue;
        };
        let id = v.get("id").filter(|i| !i.is_null()).map(Value::to_string);
        let method = v.get("method").and_then(Value::as_str);
        match (f.dir, method, id) {
            (Dir::In, Some(m), Some(id)) => {
                theirs.insert(id, m.to_string());
            }
            (Dir::Out, Some("session/prompt"), Some(id)) => {
                prompts.insert(id);
                if s.first_prompt.is_empty() {
                    s.first_prompt = v
                        .pointer("/params/prompt")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|b| b.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join(" ");
                }
            }
            (Dir::Out, None, Some(id)) => {
                if let Some(m) = theirs.remove(&id)
                    && matches!(
                        m.as_str(),
                        "session/request_permission" | "fs/write_text_file" | "terminal/create"
                    )
                {
                    s.answered += 1;
                }
            }
            (Dir::In, None, Some(id)) if prompts.remove(&id) => {
                s.result = match (v.pointer("/result/stopReason"), v.get("error")) {
                    (Some(r), _) => r.as_str().unwrap_or("?").to_string(),
                    (None, Some(e)) => format!(
                        "error {} (error)",
                        e.get("code").and_then(Value::as_i64).unwrap_or(0)
                    ),
                    (None, None) => "?".into(),
                };
            }
            _ => {}
        }
    }
    s
}

/// The `cwd` of the first recorded `session/new`.
fn acp_cwd(loaded: &Loaded) -> Option<String> {
    loaded
        .frames
        .iter()
        .filter(|f| f.dir == Dir::Out)
        .find_map(|f| {
            let v: Value = serde_json::from_str(&f.text).ok()?;
            (v.get("method")?.as_str()? == "session/new")
                .then(|| v.pointer("/params/cwd")?.as_str().map(str::to_string))
                .flatten()
        })
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

/// One workspace manifest found in the recordings directory.
#[derive(Debug)]
pub struct Workspace {
    pub path: PathBuf,
    /// The manifest, or why it cannot be read (shown, not skipped: a damaged manifest is news).
    pub manifest: Result<crate::workspace::manifest::Manifest, String>,
}

/// Every workspace manifest (`*.json` whose first key is `switchboard_workspace`) in `dir`,
/// newest first.
pub fn list_workspaces(dir: &Path) -> Vec<Workspace> {
    use crate::workspace::manifest::{is_manifest, load_manifest};
    let mut out: Vec<Workspace> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && is_manifest(p))
        .map(|p| Workspace {
            manifest: load_manifest(&p),
            path: p,
        })
        .collect();
    let started = |w: &Workspace| w.manifest.as_ref().map_or(0, |m| m.started_ms);
    out.sort_by(|a, b| started(b).cmp(&started(a)).then(b.path.cmp(&a.path)));
    out
}

/// Convert a cowork-harness cassette into our recording format. Times are synthetic
/// (one millisecond apart), and a note says where the frames came from.
pub fn import(src: &Path, dst: &Path) -> Result<usize, String> {
    let loaded = load::load(src, Some(Format::Cassette))?;
    let argv = vec!["(imported cassette)".to_string(), src.display().to_string()];
    let mut rec = Recorder::create(dst, loaded.backend, &argv, "")
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
