//! Where a replay takes its frames from: a loaded list, or a recording file indexed by line
//! offsets and read one frame at a time, so a million-frame recording opens at once and is
//! never held in memory whole.

use std::fs::File;
use std::io;
use std::path::Path;

use serde_json::Value;

use switchboard_core::BackendKind;

use crate::Dir;
use crate::load::{Frame, Loaded};
use crate::offsets::{LineNumbers, Offsets};

/// Random access to the frames of a recording.
pub trait FrameSource: Send + Sync {
    fn len(&self) -> usize;
    fn frame(&self, i: usize) -> Frame;
    fn backend(&self) -> BackendKind;
    /// The time of the first frame that has one (the replay's start).
    fn start_ms(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Frames `from..to` in order, each handed to `f` with its index. A source on disk reads
    /// ahead in large blocks instead of once per frame (the replay's passes go through every
    /// frame this way). `f` may take a frame's text, or swap in a buffer of its own that the
    /// source then decodes the next frame into: no copy of the text is needed to keep it.
    fn scan(&self, from: usize, to: usize, f: &mut dyn FnMut(usize, &mut Frame)) {
        for i in from..to.min(self.len()) {
            f(i, &mut self.frame(i));
        }
    }
    /// The time of frame `i` alone (merging a workspace's recordings reads every frame's).
    fn ts(&self, i: usize) -> Option<u64> {
        self.frame(i).ts
    }
    /// Which lane frame `i` is fed to: the index of its session in the workspace replayed
    /// (always 0 for one recording).
    fn lane(&self, _i: usize) -> usize {
        0
    }
    /// The sessions the frames are fed to, in order (one for one recording).
    fn lanes(&self) -> Vec<Lane> {
        vec![Lane {
            name: self.backend().root_name().to_string(),
            backend: self.backend(),
            start_ms: self.start_ms(),
        }]
    }
}

/// One session of a replay: the tree root's name, the backend whose mapping reads its frames,
/// and the time of its first frame (the time of frames that carry none, until one does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    pub name: String,
    pub backend: BackendKind,
    pub start_ms: u64,
}

impl FrameSource for Loaded {
    fn len(&self) -> usize {
        self.frames.len()
    }
    fn frame(&self, i: usize) -> Frame {
        self.frames[i].clone()
    }
    fn backend(&self) -> BackendKind {
        self.backend
    }
    fn start_ms(&self) -> u64 {
        self.frames.iter().find_map(|f| f.ts).unwrap_or(0)
    }
}

/// A switchboard recording on disk: only the byte offset of each line is kept.
pub struct IndexedFile {
    file: File,
    /// Start of each entry line (the header is not an entry) and the end of the last one.
    starts: Offsets,
    /// The 1-based file line of each entry.
    lines: LineNumbers,
    backend: BackendKind,
    start_ms: u64,
}

impl IndexedFile {
    /// Index `path` (one pass over its bytes counting newlines). Fails when the file is not a
    /// version-1 recording; callers then fall back to loading it whole.
    pub fn open(path: &Path) -> Result<IndexedFile, String> {
        let file = File::open(path).map_err(|e| format!("cannot read: {e}"))?;
        let size = file
            .metadata()
            .map_err(|e| format!("cannot read: {e}"))?
            .len();
        let crate::index::Index {
            header,
            starts,
            lines,
        } = crate::index::index(&file, size).map_err(|e| format!("cannot read: {e}"))?;
        let header: Value = serde_json::from_slice(trim_newline(&header))
            .map_err(|_| "the first line is not a recording header".to_string())?;
        if header.get("switchboard_recording").and_then(Value::as_u64) != Some(1) {
            return Err("not a version-1 switchboard recording".into());
        }
        let backend = crate::load::header_backend(&header);
        let mut me = IndexedFile {
            file,
            starts,
            lines,
            backend,
            start_ms: 0,
        };
        me.start_ms = (0..me.len().min(64))
            .find_map(|i| me.frame(i).ts)
            .unwrap_or(0);
        Ok(me)
    }

    fn read_line(&self, i: usize) -> io::Result<Vec<u8>> {
        let (a, b) = (self.starts.get(i), self.starts.get(i + 1));
        let mut buf = vec![0u8; (b - a) as usize];
        read_exact_at(&self.file, &mut buf, a)?;
        Ok(buf)
    }
}

use crate::index::read_exact_at;

fn trim_newline(b: &[u8]) -> &[u8] {
    let mut end = b.len();
    while end > 0 && matches!(b[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    &b[..end]
}

impl FrameSource for IndexedFile {
    fn len(&self) -> usize {
        self.starts.len() - 1
    }

    fn frame(&self, i: usize) -> Frame {
        let src_line = self.lines.get(i) as usize;
        let raw = match self.read_line(i) {
            Ok(b) => b,
            Err(e) => {
                return Frame {
                    src_line,
                    ts: None,
                    dir: Dir::Note,
                    text: format!("unreadable recording entry: {e}"),
                };
            }
        };
        entry_frame(src_line, trim_newline(&raw), String::new())
    }

    fn scan(&self, from: usize, to: usize, f: &mut dyn FnMut(usize, &mut Frame)) {
        self.scan_blocks(from, to, f)
    }

    fn backend(&self) -> BackendKind {
        self.backend
    }

    fn start_ms(&self) -> u64 {
        self.start_ms
    }

    /// The recorder writes `{"ts":N,` first: read only the entry's first and last bytes when it
    /// does (a line cut short, without its closing brace, is read whole: it has no time), else
    /// the whole entry.
    fn ts(&self, i: usize) -> Option<u64> {
        let (a, b) = (self.starts.get(i), self.starts.get(i + 1));
        let mut head = [0u8; 32];
        let mut tail = [0u8; 2];
        let n = ((b - a) as usize).min(head.len());
        let t = ((b - a) as usize).min(tail.len());
        let closed = read_exact_at(&self.file, &mut tail[..t], b - t as u64).is_ok()
            && matches!(trim_newline(&tail[..t]).last(), Some(b'}'));
        if closed
            && read_exact_at(&self.file, &mut head[..n], a).is_ok()
            && let Some(rest) = head[..n].strip_prefix(b"{\"ts\":")
        {
            let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
            if (1..=19).contains(&digits) && rest.get(digits) == Some(&b',') {
                let text = std::str::from_utf8(&rest[..digits]).ok()?;
                return text.parse().ok();
            }
        }
        self.frame(i).ts
    }
}

/// Read ahead this much of the file at once when scanning (a longer entry is read alone).
const SCAN_BLOCK: u64 = 1 << 20;

/// One entry's bytes as a frame: the recorder's own shape through the fast reader (into
/// `text`'s buffer), anything else through serde, a damaged entry as a note.
fn entry_frame(src_line: usize, raw: &[u8], text: String) -> Frame {
    crate::load::entry::frame(src_line, raw, text).unwrap_or_else(|e| Frame {
        src_line,
        ts: None,
        dir: Dir::Note,
        text: format!(
            "unreadable recording entry: {e}: {}",
            String::from_utf8_lossy(raw)
        ),
    })
}

impl IndexedFile {
    /// `scan` for a file: blocks of up to `SCAN_BLOCK` bytes, each entry decoded from the block
    /// into a reused text buffer (the one the caller left in the frame before).
    fn scan_blocks(&self, from: usize, to: usize, f: &mut dyn FnMut(usize, &mut Frame)) {
        let to = to.min(self.len());
        // One read buffer per thread, kept across calls: the background pass scans a few
        // hundred kilobytes at a time, and a fresh buffer that size is fresh pages from the
        // kernel to zero every time.
        thread_local! {
            static BLOCK: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let mut block = BLOCK.with(|b| std::mem::take(&mut *b.borrow_mut()));
        let mut text = String::new();
        let mut i = from;
        while i < to {
            // As many whole entries as fit in one block (at least one).
            let start = self.starts.get(i);
            let mut j = i + 1;
            while j < to && self.starts.get(j + 1) - start <= SCAN_BLOCK {
                j += 1;
            }
            let len = (self.starts.get(j) - start) as usize;
            if block.len() < len {
                block.resize(len, 0);
            }
            if read_exact_at(&self.file, &mut block[..len], start).is_err() {
                // Frame by frame, so each unreadable one says so in its own note.
                for k in i..j {
                    f(k, &mut self.frame(k));
                }
                i = j;
                continue;
            }
            for k in i..j {
                let (a, b) = (
                    (self.starts.get(k) - start) as usize,
                    (self.starts.get(k + 1) - start) as usize,
                );
                let mut frame = entry_frame(
                    self.lines.get(k) as usize,
                    trim_newline(&block[a..b]),
                    std::mem::take(&mut text),
                );
                f(k, &mut frame);
                // The caller may have taken the text, or swapped in a buffer of its own.
                text = frame.text;
            }
            i = j;
        }
        // Kept unless one long entry made it larger than a block.
        if block.len() <= SCAN_BLOCK as usize {
            BLOCK.with(|b| *b.borrow_mut() = block);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load;

    #[test]
    fn indexed_file_reads_what_load_reads() {
        let dir = std::env::temp_dir().join(format!("sb-idx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.jsonl");
        let text = concat!(
            "{\"switchboard_recording\":1,\"backend\":\"claude\"}\n",
            "{\"ts\":5,\"dir\":\"out\",\"line\":\"{}\"}\n",
            "\n",
            "broken\n",
            "{\"ts\":7,\"dir\":\"in\",\"line\":\"x\\ny\"}"
        );
        std::fs::write(&path, text).unwrap();
        let idx = IndexedFile::open(&path).unwrap();
        let loaded = load::load(&path, None).unwrap();
        assert_eq!(idx.len(), loaded.frames.len());
        for i in 0..idx.len() {
            let (a, b) = (idx.frame(i), &loaded.frames[i]);
            assert_eq!(
                (a.src_line, a.ts, a.dir),
                (b.src_line, b.ts, b.dir),
                "frame {i}"
            );
            assert_eq!(idx.ts(i), b.ts, "frame {i}");
            assert_eq!(
                a.text.starts_with("unreadable"),
                b.text.starts_with("unreadable")
            );
            if !a.text.starts_with("unreadable") {
                assert_eq!(a.text, b.text);
            }
        }
        assert_eq!(idx.start_ms(), 5);
        std::fs::write(&path, "{\"events\":[]}\n").unwrap();
        assert!(IndexedFile::open(&path).is_err());
        std::fs::remove_dir_all(dir).ok();
    }

    /// Lines and blank lines that straddle the 1 MiB read buffer are indexed like `load` reads
    /// them.
    #[test]
    fn index_holds_across_read_buffer_boundaries() {
        let dir = std::env::temp_dir().join(format!("sb-idx-big-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.jsonl");
        let mut text = String::from("{\"switchboard_recording\":1,\"backend\":\"claude\"}\n");
        let mut i = 0;
        while text.len() < 3 << 20 {
            let pad = "x".repeat(i * 7919 % 3000);
            text.push_str(&format!(
                "{{\"ts\":{i},\"dir\":\"in\",\"line\":\"{pad}\"}}\n"
            ));
            if i % 5 == 0 {
                text.push_str(&" ".repeat(i % 9));
                text.push('\n');
            }
            i += 1;
        }
        std::fs::write(&path, &text).unwrap();
        let idx = IndexedFile::open(&path).unwrap();
        let loaded = load::load(&path, None).unwrap();
        assert_eq!(idx.len(), loaded.frames.len());
        for (n, b) in loaded.frames.iter().enumerate() {
            let a = idx.frame(n);
            assert_eq!((a.src_line, a.ts, &a.text), (b.src_line, b.ts, &b.text));
            assert_eq!(idx.ts(n), b.ts);
        }
        std::fs::remove_dir_all(dir).ok();
    }
}
