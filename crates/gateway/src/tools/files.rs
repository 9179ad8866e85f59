//! list, read, write, patch, delete: every path checked lexically (`validate::rel_path`) and
//! then opened beneath the pinned root's directory handle, never joined to a string.
//!
//! Effects are split in two: `plan_*` does the semantic checks of §4 step 10 (containment,
//! the SHA-256 precondition, the patch's single occurrence) with no effect, and yields what
//! the receipt records; `apply` performs it after the receipt is on disk, re-checking the
//! revision first so a change in between is refused instead of overwritten. The engine runs
//! one call at a time, which is the per-path lock of §6.2.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, OpenOptions};
use serde_json::{Map, Value, json};

use crate::codec::{Code, FRAME_BYTES, Refusal};
use crate::validate::{rel_path, sha256_hex};
use switchboard_backend::contain::Root;

/// Largest file read whole (for its revision and the UTF-8 check).
pub const READ_WHOLE: u64 = 64 * 1024 * 1024;
/// Default and largest page of `workspace_read` (spec: `limit` ≤ 131072).
pub const READ_PAGE: usize = 131_072;
/// Entries in one `workspace_list` page at most; fewer when the frame would grow too large.
pub const LIST_PAGE: usize = 1000;
/// Room left in a frame for everything around a page.
const FRAME_ROOM: usize = FRAME_BYTES - 64 * 1024;

pub fn io_refusal(e: io::Error, what: &str) -> Refusal {
    match switchboard_backend::contain::FsError::from(e) {
        switchboard_backend::contain::FsError::NotFound => {
            Refusal::new(Code::NotFound, format!("{what}: not found"))
        }
        switchboard_backend::contain::FsError::Outside(why) => {
            Refusal::new(Code::PathOutsideRoot, format!("{what}: {why}"))
        }
        switchboard_backend::contain::FsError::NotText => {
            Refusal::new(Code::NotUtf8, format!("{what}: not UTF-8"))
        }
        other => Refusal::new(Code::Failed, format!("{what}: {other}")),
    }
}

fn str_arg<'a>(args: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    args.get(k).and_then(Value::as_str)
}

fn path_arg(args: &Map<String, Value>) -> Result<(String, PathBuf), Refusal> {
    let p = str_arg(args, "path").unwrap_or(".");
    Ok((p.to_string(), rel_path(p)?))
}

/// The parent directory handle and the final name of a file path (the file itself must have
/// a name: the root is not a file).
fn parent_of(root: &Root, rel: &Path, create: bool) -> Result<(Dir, PathBuf), Refusal> {
    let shown = rel.display().to_string();
    let name = rel
        .file_name()
        .ok_or_else(|| Refusal::new(Code::NotRegularFile, "the project root is not a file"))?;
    let parent = rel.parent().unwrap_or(Path::new(""));
    let dir = if parent.as_os_str().is_empty() {
        root.dir().try_clone().map_err(|e| io_refusal(e, &shown))?
    } else {
        match root.dir().open_dir(parent) {
            Ok(d) => d,
            Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                root.dir()
                    .create_dir_all(parent)
                    .map_err(|e| io_refusal(e, &shown))?;
                root.dir()
                    .open_dir(parent)
                    .map_err(|e| io_refusal(e, &shown))?
            }
            Err(e) => return Err(io_refusal(e, &shown)),
        }
    };
    Ok((dir, PathBuf::from(name)))
}

/// The bytes of the regular file `name` beneath `dir`, or `None` when it does not exist. The
/// file is opened first (never blocking: a FIFO swapped in cannot hang a worker) and only the
/// opened handle is checked, so nothing can change between the check and the read. With
/// `follow_final = false` a symlink as the last component is refused too.
pub fn read_regular(
    dir: &Dir,
    name: &Path,
    shown: &str,
    follow_final: bool,
) -> Result<Option<Vec<u8>>, Refusal> {
    use cap_std::fs::OpenOptionsExt;
    let not_regular = || {
        Refusal::new(
            Code::NotRegularFile,
            format!("{shown} is not a regular file (a directory, a symlink or a device)"),
        )
    };
    let mut opts = OpenOptions::new();
    opts.read(true);
    let nofollow = if follow_final { 0 } else { libc::O_NOFOLLOW };
    opts.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | nofollow);
    let f = match dir.open_with(name, &opts) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) && !follow_final => {
            return Err(not_regular());
        }
        Err(e) => return Err(io_refusal(e, shown)),
    };
    let meta = f.metadata().map_err(|e| io_refusal(e, shown))?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    if meta.len() > READ_WHOLE {
        return Err(Refusal::new(
            Code::TooLarge,
            format!("{shown} is larger than {READ_WHOLE} bytes"),
        ));
    }
    let mut buf = Vec::new();
    // Bounded even if the file grows after the check.
    f.take(READ_WHOLE + 1)
        .read_to_end(&mut buf)
        .map_err(|e| io_refusal(e, shown))?;
    if buf.len() as u64 > READ_WHOLE {
        return Err(Refusal::new(
            Code::TooLarge,
            format!("{shown} is larger than {READ_WHOLE} bytes"),
        ));
    }
    Ok(Some(buf))
}

/// The bytes of a regular file (not through a final symlink), or `None` when absent.
fn current(dir: &Dir, name: &Path, shown: &str) -> Result<Option<Vec<u8>>, Refusal> {
    read_regular(dir, name, shown, false)
}

fn fsync_dir(dir: &Dir) -> io::Result<()> {
    // cap-std may hold the directory as an O_PATH descriptor, which cannot be fsync'd: open
    // the directory itself through it (never by name from outside) and sync that.
    // SAFETY: openat on a descriptor we hold with a static path; the new fd is closed below.
    let fd = unsafe {
        libc::openat(
            dir.as_fd().as_raw_fd(),
            c".".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is ours and valid; closed right after.
    let r = unsafe { libc::fsync(fd) };
    let err = io::Error::last_os_error();
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(fd) };
    if r != 0 {
        return Err(err);
    }
    Ok(())
}

/// `workspace_list`: one directory, sorted by name, paged by a numeric offset.
pub fn list(root: &Root, args: &Map<String, Value>) -> Result<Value, Refusal> {
    let (shown, rel) = path_arg(args)?;
    let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
    let dir = if rel.as_os_str().is_empty() {
        root.dir().try_clone()
    } else {
        root.dir().open_dir(&rel)
    }
    .map_err(|e| io_refusal(e, &shown))?;
    let mut names = Vec::new();
    for e in dir.entries().map_err(|e| io_refusal(e, &shown))? {
        let e = e.map_err(|e| io_refusal(e, &shown))?;
        names.push(e.file_name());
    }
    names.sort();
    let total = names.len();
    let mut entries = Vec::new();
    let mut bytes = 0usize;
    let mut next = offset;
    for name in names.iter().skip(offset) {
        if entries.len() >= LIST_PAGE {
            break;
        }
        let n = name.to_string_lossy().to_string();
        let (kind, size) = match dir.symlink_metadata(name) {
            Ok(m) if m.file_type().is_symlink() => ("symlink", 0),
            Ok(m) if m.is_dir() => ("dir", 0),
            Ok(m) if m.is_file() => ("file", m.len()),
            Ok(_) => ("other", 0),
            Err(_) => ("unknown", 0),
        };
        let e = json!({"name": n, "type": kind, "size": size});
        bytes += e.to_string().len() + 1;
        if bytes > FRAME_ROOM / 2 {
            break;
        }
        entries.push(e);
        next += 1;
    }
    Ok(json!({
        "path": shown,
        "entries": entries,
        "total": total,
        "offset": offset,
        "nextOffset": if next < total { Value::from(next) } else { Value::Null },
    }))
}

/// `workspace_read`: a byte window of a UTF-8 file, with the SHA-256 of the whole file.
pub fn read(root: &Root, args: &Map<String, Value>) -> Result<Value, Refusal> {
    let (shown, rel) = path_arg(args)?;
    let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
    let limit = args
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(READ_PAGE, |l| l as usize)
        .min(READ_PAGE);
    let buf = read_regular(root.dir(), &rel, &shown, true)?
        .ok_or_else(|| Refusal::new(Code::NotFound, format!("{shown}: not found")))?;
    let text = std::str::from_utf8(&buf)
        .map_err(|_| Refusal::new(Code::NotUtf8, format!("{shown} is not UTF-8 text")))?;
    let size = buf.len();
    if offset > size {
        return Err(Refusal::new(
            Code::SchemaViolation,
            format!("offset {offset} is past the end ({size} bytes)"),
        ));
    }
    if !text.is_char_boundary(offset) {
        return Err(Refusal::new(
            Code::NotUtf8,
            format!("offset {offset} splits a UTF-8 character"),
        ));
    }
    let mut end = offset.saturating_add(limit).min(size);
    // Never cut a character: the page ends at the previous boundary and nextOffset says so.
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Ok(json!({
        "path": shown,
        "sha256": sha256_hex(&buf),
        "size": size,
        "offset": offset,
        "content": &text[offset..end],
        "nextOffset": if end < size { Value::from(end) } else { Value::Null },
    }))
}

/// What an approved file effect will do, worked out (and checked) before the receipt.
#[derive(Debug, Clone)]
pub struct Plan {
    pub rel: PathBuf,
    pub shown: String,
    /// The file's revision now (`None`: it does not exist).
    pub before: Option<String>,
    /// The new bytes (`None`: delete).
    pub after: Option<Vec<u8>>,
    /// Text before and after, for the owner's diff.
    pub old_text: Option<String>,
}

impl Plan {
    pub fn after_sha(&self) -> Option<String> {
        self.after.as_deref().map(sha256_hex)
    }

    /// The receipt's `effect`: path and SHAs only, never contents.
    pub fn effect(&self, tool: &str) -> Value {
        json!({
            "tool": tool,
            "path": self.shown,
            "expectedSha256": self.before,
            "newSha256": self.after_sha(),
        })
    }
}

fn expected(args: &Map<String, Value>) -> Option<String> {
    str_arg(args, "expectedSha256").map(str::to_string)
}

fn stale(shown: &str, have: &Option<String>, want: &Option<String>) -> Refusal {
    Refusal::new(
        Code::StaleRevision,
        match (have, want) {
            (Some(h), None) => {
                format!("{shown} exists (sha256 {h}); a null expectedSha256 only creates")
            }
            (None, Some(_)) => format!("{shown} does not exist"),
            (Some(h), Some(_)) => format!("{shown} changed: its sha256 is now {h}"),
            (None, None) => format!("{shown}: no revision"),
        },
    )
}

pub fn plan_write(root: &Root, args: &Map<String, Value>) -> Result<Plan, Refusal> {
    let (shown, rel) = path_arg(args)?;
    let want = expected(args);
    let content = str_arg(args, "content").unwrap_or_default();
    let (dir, name) = match parent_of(root, &rel, false) {
        Ok(x) => x,
        // A new file in a new directory: nothing exists yet.
        Err(r) if r.code == Code::NotFound && want.is_none() => {
            return Ok(Plan {
                rel,
                shown,
                before: None,
                after: Some(content.as_bytes().to_vec()),
                old_text: None,
            });
        }
        Err(r) => return Err(r),
    };
    let cur = current(&dir, &name, &shown)?;
    let have = cur.as_deref().map(sha256_hex);
    if have != want {
        return Err(stale(&shown, &have, &want));
    }
    Ok(Plan {
        rel,
        shown,
        before: have,
        after: Some(content.as_bytes().to_vec()),
        old_text: cur.map(|b| String::from_utf8_lossy(&b).into_owned()),
    })
}

pub fn plan_patch(root: &Root, args: &Map<String, Value>) -> Result<Plan, Refusal> {
    let (shown, rel) = path_arg(args)?;
    let Some(want) = expected(args) else {
        return Err(Refusal::new(
            Code::StaleRevision,
            "patching needs the sha256 read from workspace_read, not null",
        ));
    };
    let (dir, name) = parent_of(root, &rel, false)?;
    let Some(cur) = current(&dir, &name, &shown)? else {
        return Err(Refusal::new(Code::NotFound, format!("{shown}: not found")));
    };
    let have = sha256_hex(&cur);
    if have != want {
        return Err(stale(&shown, &Some(have), &Some(want)));
    }
    let text = String::from_utf8(cur)
        .map_err(|_| Refusal::new(Code::NotUtf8, format!("{shown} is not UTF-8 text")))?;
    let old = str_arg(args, "oldText").unwrap_or_default();
    let new = str_arg(args, "newText").unwrap_or_default();
    if old.is_empty() {
        return Err(Refusal::new(
            Code::AmbiguousPatch,
            "oldText is empty: it occurs everywhere",
        ));
    }
    let n = text.matches(old).take(2).count();
    match n {
        0 => Err(Refusal::new(
            Code::NotFound,
            format!("oldText does not occur in {shown}"),
        )),
        1 => Ok(Plan {
            rel,
            shown,
            before: Some(have),
            after: Some(text.replacen(old, new, 1).into_bytes()),
            old_text: Some(text),
        }),
        _ => Err(Refusal::new(
            Code::AmbiguousPatch,
            format!("oldText occurs more than once in {shown}"),
        )),
    }
}

pub fn plan_delete(root: &Root, args: &Map<String, Value>) -> Result<Plan, Refusal> {
    let (shown, rel) = path_arg(args)?;
    let Some(want) = expected(args) else {
        return Err(Refusal::new(
            Code::StaleRevision,
            "deleting needs the file's sha256, not null",
        ));
    };
    let (dir, name) = parent_of(root, &rel, false)?;
    let Some(cur) = current(&dir, &name, &shown)? else {
        return Err(Refusal::new(Code::NotFound, format!("{shown}: not found")));
    };
    let have = sha256_hex(&cur);
    if have != want {
        return Err(stale(&shown, &Some(have), &Some(want)));
    }
    Ok(Plan {
        rel,
        shown,
        before: Some(have),
        after: None,
        old_text: Some(String::from_utf8_lossy(&cur).into_owned()),
    })
}

/// Perform a plan: re-check the revision, then create exclusively, replace atomically
/// (temporary file, fsync, rename, fsync the directory) or remove.
pub fn apply(root: &Root, plan: &Plan) -> Result<Value, Refusal> {
    let shown = plan.shown.as_str();
    let (dir, name) = parent_of(root, &plan.rel, plan.after.is_some())?;
    let cur = current(&dir, &name, shown)?;
    let have = cur.as_deref().map(sha256_hex);
    if have != plan.before {
        return Err(stale(shown, &have, &plan.before));
    }
    let io = |e: io::Error| io_refusal(e, shown);
    match &plan.after {
        None => {
            dir.remove_file(&name).map_err(io)?;
            fsync_dir(&dir).map_err(io)?;
            Ok(json!({"path": shown, "deleted": true, "sha256": Value::Null}))
        }
        Some(bytes) if plan.before.is_none() => {
            let mut o = OpenOptions::new();
            o.write(true).create_new(true);
            let mut f = dir.open_with(&name, &o).map_err(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    stale(shown, &Some("(unknown)".into()), &None)
                } else {
                    io_refusal(e, shown)
                }
            })?;
            f.write_all(bytes).map_err(io)?;
            f.sync_all().map_err(io)?;
            fsync_dir(&dir).map_err(io)?;
            Ok(
                json!({"path": shown, "created": true, "size": bytes.len(), "sha256": sha256_hex(bytes)}),
            )
        }
        Some(bytes) => {
            let perms = dir.metadata(&name).map_err(io)?.permissions();
            let mut attempt = 0u32;
            let (tmp, mut f) = loop {
                let tmp = PathBuf::from(format!(
                    ".{}.switchboard-gw-{}-{attempt}.tmp",
                    name.to_string_lossy(),
                    std::process::id()
                ));
                let mut o = OpenOptions::new();
                o.write(true).create_new(true);
                match dir.open_with(&tmp, &o) {
                    Ok(f) => break (tmp, f),
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 64 => {
                        attempt += 1
                    }
                    Err(e) => return Err(io(e)),
                }
            };
            let done = (|| {
                f.set_permissions(perms)?;
                f.write_all(bytes)?;
                f.sync_all()?;
                dir.rename(&tmp, &dir, &name)?;
                fsync_dir(&dir)
            })();
            if let Err(e) = done {
                let _ = dir.remove_file(&tmp);
                return Err(io(e));
            }
            Ok(
                json!({"path": shown, "created": false, "size": bytes.len(), "sha256": sha256_hex(bytes)}),
            )
        }
    }
}

/// The revision of a file now, for settling an uncertain write by observation.
pub fn sha_now(root: &Root, shown: &str) -> Result<Option<String>, Refusal> {
    let rel = rel_path(shown)?;
    let (dir, name) = match parent_of(root, &rel, false) {
        Ok(x) => x,
        Err(r) if r.code == Code::NotFound => return Ok(None),
        Err(r) => return Err(r),
    };
    Ok(current(&dir, &name, shown)?.as_deref().map(sha256_hex))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    pub(crate) fn scratch(name: &str) -> (PathBuf, Root) {
        let base = std::env::temp_dir().join(format!("sb-gw-files-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("root/src")).unwrap();
        std::fs::write(base.join("outside.txt"), "secret").unwrap();
        let root = Root::open(&base.join("root")).unwrap();
        (base, root)
    }

    fn a(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// A FIFO (or one swapped in for a file) is refused at once, never opened for a blocking
    /// read, and a write never reads through a final symlink.
    #[test]
    fn reads_check_the_opened_handle_and_never_block_on_a_fifo() {
        let (base, root) = scratch("fifo");
        let fifo = base.join("root/pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let t = std::time::Instant::now();
        let e = read(&root, &a(json!({"path": "pipe"}))).unwrap_err();
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
        assert!(e.message.contains("not a regular file"), "{}", e.message);
        std::fs::write(base.join("root/real.txt"), "x").unwrap();
        // Relative: an absolute link target counts as leading outside the root.
        symlink("real.txt", base.join("root/link.txt")).unwrap();
        assert!(
            read_regular(root.dir(), Path::new("link.txt"), "link.txt", true)
                .unwrap()
                .is_some()
        );
        let e = read_regular(root.dir(), Path::new("link.txt"), "link.txt", false).unwrap_err();
        assert!(e.message.contains("not a regular file"), "{}", e.message);
        assert!(
            read_regular(root.dir(), Path::new("none"), "none", true)
                .unwrap()
                .is_none()
        );
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn read_pages_never_split_a_character_and_report_the_whole_sha() {
        let (base, root) = scratch("read");
        std::fs::write(base.join("root/u.txt"), "aé€z").unwrap(); // 1+2+3+1 bytes
        let r = read(&root, &a(json!({"path": "u.txt", "limit": 4}))).unwrap();
        assert_eq!(r["content"], "aé");
        assert_eq!(r["nextOffset"], 3);
        assert_eq!(r["sha256"], sha256_hex("aé€z".as_bytes()));
        let r = read(&root, &a(json!({"path": "u.txt", "offset": 3}))).unwrap();
        assert_eq!(r["content"], "€z");
        assert_eq!(r["nextOffset"], Value::Null);
        assert_eq!(
            read(&root, &a(json!({"path": "u.txt", "offset": 2})))
                .unwrap_err()
                .code,
            Code::NotUtf8
        );
        std::fs::write(base.join("root/b.bin"), [0xff, 0xfe]).unwrap();
        assert_eq!(
            read(&root, &a(json!({"path": "b.bin"}))).unwrap_err().code,
            Code::NotUtf8
        );
    }

    #[test]
    fn escapes_through_links_are_refused() {
        let (base, root) = scratch("links");
        symlink(base.join("outside.txt"), base.join("root/out")).unwrap();
        symlink(&base, base.join("root/updir")).unwrap();
        for p in ["out", "updir/outside.txt"] {
            let e = read(&root, &a(json!({"path": p}))).unwrap_err();
            assert_eq!(e.code, Code::PathOutsideRoot, "{p}: {e:?}");
        }
        let e = plan_write(
            &root,
            &a(json!({"path": "updir/x", "content": "", "expectedSha256": null})),
        )
        .unwrap_err();
        assert_eq!(e.code, Code::PathOutsideRoot);
        let sha = sha256_hex(b"secret");
        let e = plan_delete(&root, &a(json!({"path": "out", "expectedSha256": sha}))).unwrap_err();
        assert_eq!(
            e.code,
            Code::NotRegularFile,
            "delete never follows the final link"
        );
        assert!(base.join("outside.txt").exists());
    }

    #[test]
    fn sha_rules_for_write_patch_delete() {
        let (base, root) = scratch("sha");
        let p = plan_write(
            &root,
            &a(json!({"path": "new/a.txt", "content": "one two", "expectedSha256": null})),
        )
        .unwrap();
        let r = apply(&root, &p).unwrap();
        assert_eq!(
            std::fs::read_to_string(base.join("root/new/a.txt")).unwrap(),
            "one two"
        );
        let sha = r["sha256"].as_str().unwrap().to_string();
        // null on an existing file, a wrong sha: stale.
        let e = plan_write(
            &root,
            &a(json!({"path": "new/a.txt", "content": "x", "expectedSha256": null})),
        )
        .unwrap_err();
        assert_eq!(e.code, Code::StaleRevision);
        let e = plan_write(
            &root,
            &a(json!({"path": "new/a.txt", "content": "x", "expectedSha256": "0".repeat(64)})),
        )
        .unwrap_err();
        assert_eq!(e.code, Code::StaleRevision);
        // patch: 0, 2 occurrences, empty oldText, null sha.
        let pa = |old: &str, sha: Value| {
            plan_patch(
                &root,
                &a(
                    json!({"path": "new/a.txt", "oldText": old, "newText": "N", "expectedSha256": sha}),
                ),
            )
        };
        assert_eq!(pa("zzz", json!(sha)).unwrap_err().code, Code::NotFound);
        assert_eq!(pa("o", json!(sha)).unwrap_err().code, Code::AmbiguousPatch);
        assert_eq!(pa("", json!(sha)).unwrap_err().code, Code::AmbiguousPatch);
        assert_eq!(
            pa("one", Value::Null).unwrap_err().code,
            Code::StaleRevision
        );
        let plan = pa("one", json!(sha)).unwrap();
        // A change between the plan and the effect is caught at apply.
        std::fs::write(base.join("root/new/a.txt"), "one two!").unwrap();
        assert_eq!(apply(&root, &plan).unwrap_err().code, Code::StaleRevision);
        assert_eq!(
            std::fs::read_to_string(base.join("root/new/a.txt")).unwrap(),
            "one two!"
        );
        let sha = sha256_hex(b"one two!");
        let plan = pa("one", json!(sha)).unwrap();
        apply(&root, &plan).unwrap();
        assert_eq!(
            std::fs::read_to_string(base.join("root/new/a.txt")).unwrap(),
            "N two!"
        );
        // delete: null, stale, directory.
        let d =
            |p: &str, sha: Value| plan_delete(&root, &a(json!({"path": p, "expectedSha256": sha})));
        assert_eq!(
            d("new/a.txt", Value::Null).unwrap_err().code,
            Code::StaleRevision
        );
        assert_eq!(
            d("new/a.txt", json!(sha)).unwrap_err().code,
            Code::StaleRevision
        );
        assert_eq!(d("src", json!(sha)).unwrap_err().code, Code::NotRegularFile);
        let sha = sha256_hex(b"N two!");
        apply(&root, &d("new/a.txt", json!(sha)).unwrap()).unwrap();
        assert!(!base.join("root/new/a.txt").exists());
    }

    #[test]
    fn list_is_sorted_and_paged() {
        let (base, root) = scratch("list");
        for n in ["b", "a", "c"] {
            std::fs::write(base.join("root").join(n), n).unwrap();
        }
        let r = list(&root, &Map::new()).unwrap();
        let names: Vec<&str> = r["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a", "b", "c", "src"]);
        assert_eq!(r["entries"][3]["type"], "dir");
        let r = list(&root, &a(json!({"offset": 3}))).unwrap();
        assert_eq!(r["entries"].as_array().unwrap().len(), 1);
        assert_eq!(r["nextOffset"], Value::Null);
    }
}
