//! The line index of a recording on disk: where each entry starts and its file line, found
//! on two threads for a large file (each half of the file on its own), so opening a
//! gigabyte recording takes half the time it took on one core. The header (the first line)
//! is kept aside; blank lines are not entries.

use std::fs::File;
use std::io;

use crate::offsets::{LineNumbers, Offsets};

/// Files under this size are indexed on the calling thread alone.
const SPLIT_FROM: u64 = 16 << 20;
/// Bytes read at a time.
const READ: usize = 1 << 20;

/// What indexing a recording found.
pub(crate) struct Index {
    /// The first line, without its newline.
    pub header: Vec<u8>,
    /// The start of every non-blank line after the first, then the file's size.
    pub starts: Offsets,
    /// The 1-based file line of each of those (not of the size at the end).
    pub lines: LineNumbers,
}

/// One part's findings: the non-blank line starts in its range with their line numbers
/// counted from the part's start, and the newlines in its range.
#[derive(Default)]
struct Part {
    starts: Vec<u64>,
    /// (index into `starts`, newlines before that start within the part) where the number
    /// stops being the previous one plus one: blank lines passed over, rare.
    steps: Vec<(usize, u64)>,
    newlines: u64,
}

impl Part {
    fn push(&mut self, start: u64, newlines_before: u64) {
        let i = self.starts.len();
        let expected = self.steps.last().map(|&(at, n)| n + (i - at) as u64);
        if expected != Some(newlines_before) {
            self.steps.push((i, newlines_before));
        }
        self.starts.push(start);
    }

    fn newlines_before(&self, i: usize) -> u64 {
        let at = self.steps.partition_point(|&(from, _)| from <= i);
        let (from, n) = self.steps[at - 1];
        n + (i - from) as u64
    }
}

/// Index `file` of `size` bytes, on two threads when it is large.
pub(crate) fn index(file: &File, size: u64) -> io::Result<Index> {
    // Two threads need positional reads that share no cursor (`pread`): Unix only.
    let parts = if cfg!(unix) && size >= SPLIT_FROM {
        2
    } else {
        1
    };
    index_in(file, size, parts, READ)
}

/// `index` with `parts` ranges read `read` bytes at a time (the tests cut small files at
/// every place this way).
fn index_in(file: &File, size: u64, parts: usize, read: usize) -> io::Result<Index> {
    let bounds: Vec<u64> = (0..=parts as u64)
        .map(|k| size * k / parts as u64)
        .collect();
    let found: Vec<io::Result<Part>> = if parts == 1 {
        vec![scan_part(file, 0, size, size, read)]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = bounds
                .windows(2)
                .skip(1)
                .map(|w| {
                    let (lo, hi) = (w[0], w[1]);
                    s.spawn(move || scan_part(file, lo, hi, size, read))
                })
                .collect();
            let mut all = vec![scan_part(file, 0, bounds[1], size, read)];
            all.extend(handles.into_iter().map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("the index thread panicked")))
            }));
            all
        })
    };
    let mut starts = Offsets::default();
    let mut lines = LineNumbers::default();
    // Newlines before the current part: a line's number is one more than all before it.
    let mut before = 0u64;
    for part in found {
        let part = part?;
        for (i, &start) in part.starts.iter().enumerate() {
            // The first line is the header, never an entry.
            if start != 0 {
                starts.push(start);
                lines.push(1 + before + part.newlines_before(i));
            }
        }
        before += part.newlines;
    }
    starts.push(size);
    starts.shrink_to_fit();
    lines.shrink_to_fit();
    Ok(Index {
        header: first_line(file, size, read)?,
        starts,
        lines,
    })
}

/// The lines that start in `lo..hi` (a line starts at 0 and after each newline): which are
/// not blank (a byte other than whitespace before their newline or the end of the file, read
/// past `hi` when a line is still undecided there), and the newlines in `lo..hi`.
fn scan_part(file: &File, lo: u64, hi: u64, size: u64, read: usize) -> io::Result<Part> {
    let mut part = Part::default();
    let mut buf = vec![0u8; read.min((hi - lo) as usize + 1).max(1)];
    // Whether `lo` begins a line.
    let mut at_line_start = lo == 0 || {
        let mut b = [0u8; 1];
        read_exact_at(file, &mut b, lo - 1)?;
        b[0] == b'\n'
    };
    // A line begun in range whose first bytes so far were whitespace: its start and the
    // newlines before it.
    let mut undecided: Option<(u64, u64)> = None;
    let mut pos = lo;
    while pos < size && (pos < hi || undecided.is_some()) {
        let n = buf.len().min((size - pos) as usize);
        read_exact_at(file, &mut buf[..n], pos)?;
        let chunk = &buf[..n];
        let mut at = 0;
        while at < n {
            let here = pos + at as u64;
            if here >= hi && undecided.is_none() {
                break;
            }
            if at_line_start && here < hi {
                at_line_start = false;
                undecided = Some((here, part.newlines));
            }
            if let Some((start, nl)) = undecided {
                // Only the first bytes of a line are looked at to tell it blank.
                match chunk[at..]
                    .iter()
                    .position(|b| !b.is_ascii_whitespace() || *b == b'\n')
                {
                    Some(k) if chunk[at + k] != b'\n' => {
                        part.push(start, nl);
                        undecided = None;
                        at += k;
                    }
                    // Blank: the newline below ends it.
                    Some(k) => {
                        undecided = None;
                        at += k;
                    }
                    None => {
                        at = n;
                        continue;
                    }
                }
            }
            let Some(k) = memchr::memchr(b'\n', &chunk[at..]) else {
                at = n;
                continue;
            };
            let nl = pos + (at + k) as u64;
            at += k + 1;
            if nl < hi {
                part.newlines += 1;
                at_line_start = true;
            }
        }
        pos += n as u64;
    }
    Ok(part)
}

/// The file's first line, without its newline (the whole file when it has none).
fn first_line(file: &File, size: u64, read: usize) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let mut buf = vec![0u8; read.max(1)];
    let mut pos = 0;
    while pos < size {
        let n = buf.len().min((size - pos) as usize);
        read_exact_at(file, &mut buf[..n], pos)?;
        if let Some(k) = memchr::memchr(b'\n', &buf[..n]) {
            line.extend_from_slice(&buf[..k]);
            break;
        }
        line.extend_from_slice(&buf[..n]);
        pos += n as u64;
    }
    Ok(line)
}

#[cfg(unix)]
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    // A clone of the handle shares its cursor, so reads on two threads can interleave:
    // `index` uses one thread here (switchboard ships for Unix, where this is `pread`).
    use std::io::{Read, Seek, SeekFrom};
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::Start(offset))?;
    f.read_exact(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index one thread reading the whole file at once makes, by the rule itself.
    fn reference(text: &[u8]) -> (Vec<u8>, Vec<u64>, Vec<u64>) {
        let mut starts = Vec::new();
        let mut lines = Vec::new();
        let mut at = 0usize;
        let mut line = 1u64;
        let mut header = None;
        while at < text.len() {
            let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |k| at + k);
            let piece = &text[at..end];
            if header.is_none() {
                header = Some(piece.to_vec());
            } else if piece.iter().any(|b| !b.is_ascii_whitespace()) {
                starts.push(at as u64);
                lines.push(line);
            }
            line += 1;
            at = end + 1;
        }
        starts.push(text.len() as u64);
        (header.unwrap_or_default(), starts, lines)
    }

    fn index_of(text: &[u8], parts: usize, read: usize) -> (Vec<u8>, Vec<u64>, Vec<u64>) {
        let dir =
            std::env::temp_dir().join(format!("sb-index-{}-{parts}-{read}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.jsonl");
        std::fs::write(&path, text).unwrap();
        let file = File::open(&path).unwrap();
        let idx = index_in(&file, text.len() as u64, parts, read).unwrap();
        std::fs::remove_dir_all(dir).ok();
        let n = idx.starts.len();
        (
            idx.header,
            (0..n).map(|i| idx.starts.get(i)).collect(),
            (0..n - 1).map(|i| idx.lines.get(i)).collect(),
        )
    }

    /// Blank and whitespace lines, a CRLF, a missing last newline, a file of only a header or
    /// of nothing: cut into two or three parts at every size and read a few bytes at a time,
    /// the index is the one the rule gives.
    #[test]
    fn every_cut_indexes_as_one_reading_does() {
        let texts: [&[u8]; 7] = [
            b"{\"h\":1}\n{\"a\":1}\n\n  \n{\"b\":2}\r\n \t x\n{\"c\":3}",
            b"{\"h\":1}\n{\"a\":1}\n\n\n\n{\"b\":22222222}\n   \n",
            b"{\"h\":1}",
            b"",
            b"\n\n{\"a\":1}\n",
            b"{\"h\":1}\n   {\"a\":1}\n\t\n\n{\"b\":2}\n  ",
            b"h\nx\ny\nz\n\nw",
        ];
        for text in texts {
            let want = reference(text);
            for read in [1, 2, 3, 7, 64] {
                for parts in 1..=3 {
                    assert_eq!(
                        index_of(text, parts, read),
                        want,
                        "{:?} in {parts} parts, {read} bytes a read",
                        String::from_utf8_lossy(text)
                    );
                }
            }
        }
    }

    /// A larger file whose halves meet inside lines, blank runs and long lines.
    #[test]
    fn two_halves_of_a_large_file_index_as_one() {
        let mut text = b"{\"switchboard_recording\":1}\n".to_vec();
        let mut i = 0usize;
        while text.len() < 1 << 20 {
            text.extend_from_slice(
                format!("{{\"i\":{i},\"p\":\"{}\"}}\n", "x".repeat(i * 7919 % 900)).as_bytes(),
            );
            if i.is_multiple_of(7) {
                text.extend_from_slice(" ".repeat(i % 5).as_bytes());
                text.push(b'\n');
            }
            i += 1;
        }
        let want = reference(&text);
        for parts in [1, 2, 3] {
            assert_eq!(index_of(&text, parts, 4096), want, "{parts} parts");
        }
    }
}
