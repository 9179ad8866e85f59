//! Edit and Write cards shown against the file on disk: the live backend reads the file an
//! `Edit`/`MultiEdit`/`Write` permission names (beneath the session's cwd, bounded) so the card
//! shows real line numbers and context, and a `Write` over an existing file shows what changes
//! rather than the whole content as new. The mapper and the reducer stay free of IO; a replay
//! (no file to read) keeps the diff of the input alone.

use std::path::Path;

use switchboard_backend::contain::Root;

use serde_json::Value;

use switchboard_core::diff::{Diff, Edit};
use switchboard_core::gate::GateKind;
use switchboard_core::msg::BackendEvent;

/// Larger files keep the diff of the input alone: a card is not a file viewer.
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// The text of the regular file `path` names beneath `cwd`, opened through the shared
/// containment module (a handle on `cwd`: no symlink, `..` or FIFO leads anywhere else), at
/// most `MAX_FILE_BYTES`. `Ok(None)`: there is no such file (a Write creates it). `Err`: not
/// shown against the file.
pub fn read_beneath(cwd: &Path, path: &str) -> Result<Option<String>, String> {
    let root = Root::open(cwd).map_err(|e| e.to_string())?;
    let p = Path::new(path);
    let rel = if p.is_absolute() {
        // The agent may name the cwd as given or as resolved (`/tmp` behind a symlink).
        match p.strip_prefix(cwd) {
            Ok(rest) => rest.to_path_buf(),
            Err(_) => root.relative(p).map_err(|e| e.to_string())?,
        }
    } else {
        p.to_path_buf()
    };
    if rel.as_os_str().is_empty() {
        return Err("not a file".into());
    }
    root.read_text_opt(&rel, MAX_FILE_BYTES)
        .map_err(|e| e.to_string())
}

/// The file a permission's input names, for the tools whose card shows a diff.
pub fn wanted(tool: &str, input: &Value) -> Option<String> {
    matches!(tool, "Edit" | "MultiEdit" | "Write")
        .then(|| input.get("file_path")?.as_str().map(str::to_string))
        .flatten()
}

fn edit(v: &Value) -> Option<Edit> {
    Some(Edit {
        old: v.get("old_string")?.as_str()?.to_string(),
        new: v.get("new_string")?.as_str()?.to_string(),
        replace_all: v
            .get("replace_all")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// The diff a tool's input makes to `file` (its text on disk, `None` when it does not exist),
/// or `None` when the input does not apply to it (the card keeps the input's own diff).
pub fn file_diff(tool: &str, input: &Value, file: Option<&str>) -> Option<Diff> {
    let path = input.get("file_path")?.as_str()?;
    match tool {
        "Write" => Some(Diff::unified(
            path,
            file.unwrap_or(""),
            input.get("content")?.as_str()?,
            3,
        )),
        // A missing file is empty: an edit with an empty old text creates it, any other
        // edit does not apply (the CLI refuses it) and the card keeps the input's diff.
        "Edit" => Diff::of_edits(path, file.unwrap_or(""), &[edit(input)?]),
        "MultiEdit" => {
            let edits = input
                .get("edits")?
                .as_array()?
                .iter()
                .map(edit)
                .collect::<Option<Vec<_>>>()?;
            Diff::of_edits(path, file.unwrap_or(""), &edits)
        }
        _ => None,
    }
}

/// Give every Edit/MultiEdit/Write gate in `events` the diff against its file beneath `cwd`.
/// The reads run off the runtime's workers.
pub async fn attach(events: &mut [BackendEvent], cwd: &Path) {
    for e in events.iter_mut() {
        let BackendEvent::GateOpen(g) = e else {
            continue;
        };
        let GateKind::Permission(p) = &mut g.kind else {
            continue;
        };
        let Ok(input) = serde_json::from_str::<Value>(&p.input) else {
            continue;
        };
        let Some(path) = wanted(&p.tool, &input) else {
            continue;
        };
        let dir = cwd.to_path_buf();
        let read = tokio::task::spawn_blocking(move || read_beneath(&dir, &path))
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
        match read {
            Ok(file) => {
                if let Some(d) = file_diff(&p.tool, &input, file.as_deref()) {
                    p.diff = Some(d);
                }
            }
            // The input's own diff reads like a new file (`@@ -0,0 +1,N @@`) or a snippet at
            // line 1: the card says the file on disk was not compared.
            Err(why) => {
                let note = unread_note(&p.tool, &why);
                p.description = Some(match p.description.take() {
                    Some(d) if !d.is_empty() => format!("{note}\n{d}"),
                    _ => note,
                });
            }
        }
    }
}

/// What a card says when the file its diff applies to could not be read.
fn unread_note(tool: &str, why: &str) -> String {
    let shows = if tool == "Write" {
        "the diff shows only the new content, not what it replaces"
    } else {
        "the diff shows only the edit's own text, not the file around it"
    };
    format!("⚠ existing file not read ({why}): {shows}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use switchboard_core::diff::DiffKind;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sb-fdiff-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.canonicalize().unwrap()
    }

    fn gate(tool: &str, input: Value) -> BackendEvent {
        let req = serde_json::json!({"subtype":"can_use_tool","tool_name":tool,"input":input});
        BackendEvent::GateOpen(Box::new(switchboard_core::gate::Gate {
            id: "g".into(),
            node_key: "root".into(),
            asked_by: None,
            kind: super::super::gates::permission(&req),
            opened_ms: 0,
            default_reply: String::new(),
            reply_definition: "",
        }))
    }

    fn diff_of(e: &BackendEvent) -> Diff {
        match e {
            BackendEvent::GateOpen(g) => match &g.kind {
                GateKind::Permission(p) => p.diff.clone().expect("a diff"),
                _ => panic!("not a permission"),
            },
            _ => panic!("not a gate"),
        }
    }

    fn numbered(d: &Diff) -> Vec<String> {
        d.lines
            .iter()
            .map(|l| format!("{:?} {:?} {:?} {}", l.kind, l.old_no, l.new_no, l.text))
            .collect()
    }

    #[tokio::test]
    async fn edit_card_has_the_file_line_numbers() {
        let cwd = scratch("edit");
        let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        std::fs::write(cwd.join("f.txt"), &text).unwrap();
        let path = cwd.join("f.txt").display().to_string();
        let input = serde_json::json!({"file_path": path,
            "old_string":"line 20\n","new_string":"twenty\n"});
        let mut events = vec![gate("Edit", input.clone())];
        // From the input alone the snippet is line 1.
        assert_eq!(diff_of(&events[0]).lines[2].text, "@@ -1 +1 @@");
        attach(&mut events, &cwd).await;
        let d = diff_of(&events[0]);
        assert_eq!(d.lines[2].text, "@@ -17,7 +17,7 @@");
        assert!(
            numbered(&d).contains(&"Remove Some(20) None line 20".to_string()),
            "{:#?}",
            numbered(&d)
        );
        assert!(numbered(&d).contains(&"Context Some(17) Some(17) line 17".to_string()));
        // A relative path names the same file.
        let mut events = vec![gate(
            "Edit",
            serde_json::json!({"file_path":"f.txt","old_string":"line 20\n","new_string":"x\n"}),
        )];
        attach(&mut events, &cwd).await;
        assert_eq!(diff_of(&events[0]).lines[2].text, "@@ -17,7 +17,7 @@");
        // MultiEdit: both edits, in order, in one diff of the file.
        let mut events = vec![gate(
            "MultiEdit",
            serde_json::json!({"file_path":"f.txt","edits":[
                {"old_string":"line 2\n","new_string":"two\n"},
                {"old_string":"line","new_string":"LINE","replace_all":true}]}),
        )];
        attach(&mut events, &cwd).await;
        let d = diff_of(&events[0]);
        assert_eq!((d.added, d.removed), (30, 30));
        assert!(numbered(&d).contains(&"Add None Some(2) two".to_string()));
        // A snippet that is not in the file keeps the input's own diff.
        let mut events = vec![gate(
            "Edit",
            serde_json::json!({"file_path":"f.txt","old_string":"absent","new_string":"x"}),
        )];
        attach(&mut events, &cwd).await;
        assert_eq!(diff_of(&events[0]).lines[2].text, "@@ -1 +1 @@");
        // An Edit creating a missing file (empty old text) shows it as new.
        let mut events = vec![gate(
            "Edit",
            serde_json::json!({"file_path":"new.txt","old_string":"","new_string":"a\nb\n"}),
        )];
        attach(&mut events, &cwd).await;
        assert_eq!(diff_of(&events[0]).lines[2].text, "@@ -0,0 +1,2 @@");
        let _ = std::fs::remove_dir_all(&cwd);
    }

    #[tokio::test]
    async fn write_card_diffs_against_the_file_on_disk() {
        let cwd = scratch("write");
        std::fs::write(cwd.join("w.txt"), "keep\nold\nkeep too\n").unwrap();
        let input = serde_json::json!({"file_path": cwd.join("w.txt").display().to_string(),
            "content":"keep\nnew\nkeep too\n"});
        let mut events = vec![gate("Write", input)];
        assert_eq!(diff_of(&events[0]).removed, 0, "before: everything new");
        attach(&mut events, &cwd).await;
        let d = diff_of(&events[0]);
        assert_eq!((d.added, d.removed), (1, 1));
        assert_eq!(d.lines[2].text, "@@ -1,3 +1,3 @@");
        // A new file stays a new file.
        let input = serde_json::json!({"file_path": cwd.join("n.txt").display().to_string(),
            "content":"a\n"});
        let mut events = vec![gate("Write", input)];
        attach(&mut events, &cwd).await;
        assert_eq!(diff_of(&events[0]).lines[2].text, "@@ -0,0 +1 @@");
        let _ = std::fs::remove_dir_all(&cwd);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn nothing_outside_the_cwd_or_unusual_is_read() {
        let cwd = scratch("contain");
        let outside = scratch("contain-outside");
        std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
        std::os::unix::fs::symlink(outside.join("secret.txt"), cwd.join("link.txt")).unwrap();
        for (path, why) in [
            (
                outside.join("secret.txt").display().to_string(),
                "absolute outside",
            ),
            ("../contain-outside/secret.txt".to_string(), "dot-dot"),
            ("link.txt".to_string(), "symlink out"),
        ] {
            assert!(read_beneath(&cwd, &path).is_err(), "{why}: {path}");
            let input = serde_json::json!({"file_path": path, "content":"x\n"});
            let mut events = vec![gate("Write", input)];
            attach(&mut events, &cwd).await;
            let d = diff_of(&events[0]);
            assert!(
                d.lines.iter().all(|l| l.kind != DiffKind::Remove),
                "{why}: the outside file leaked into the card"
            );
            // Never reads as a new file: the card says the file on disk was not compared.
            let BackendEvent::GateOpen(g) = &events[0] else {
                panic!()
            };
            let GateKind::Permission(p) = &g.kind else {
                panic!()
            };
            let note = p.description.as_deref().unwrap_or("");
            assert!(
                note.starts_with("⚠ existing file not read (")
                    && note.contains("the diff shows only the new content"),
                "{why}: {note}"
            );
        }
        // A FIFO is never opened for a blocking read.
        let fifo = cwd.join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let t = std::time::Instant::now();
        assert!(read_beneath(&cwd, "pipe").is_err());
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
        // Too large.
        let big = vec![b'a'; MAX_FILE_BYTES as usize + 1];
        std::fs::write(cwd.join("big"), big).unwrap();
        let err = read_beneath(&cwd, "big").unwrap_err();
        assert!(err.contains("larger than"), "{err}");
        let mut events = vec![gate(
            "Edit",
            serde_json::json!({"file_path":"big","old_string":"a","new_string":"b"}),
        )];
        attach(&mut events, &cwd).await;
        let BackendEvent::GateOpen(g) = &events[0] else {
            panic!()
        };
        let GateKind::Permission(p) = &g.kind else {
            panic!()
        };
        let note = p.description.as_deref().unwrap_or("");
        assert!(
            note.contains("larger than") && note.contains("not the file around it"),
            "{note}"
        );
        let _ = std::fs::remove_dir_all(&cwd);
        let _ = std::fs::remove_dir_all(&outside);
    }
}
