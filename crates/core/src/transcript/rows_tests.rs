//! Tests of `rows.rs`: shared chunks, packing, reading and scanning.

use super::*;
use crate::transcript::ItemKind;

fn row(n: usize) -> Item {
    Item::new(
        ItemKind::User {
            text: n.to_string(),
        },
        n as u64,
    )
}

/// A copy shares every chunk until one of them changes; a change copies that chunk only,
/// and neither side sees the other's changes.
#[test]
fn copies_share_chunks_until_changed() {
    let mut a = Rows::default();
    for n in 0..1000 {
        a.push(row(n));
    }
    let mut b = a.clone();
    assert!(Arc::ptr_eq(&a.chunks[0], &b.chunks[0]));
    b.get_mut(3).unwrap().expanded = true;
    b.push(row(1000));
    assert!(!Arc::ptr_eq(&a.chunks[0], &b.chunks[0]));
    assert!(Arc::ptr_eq(&a.chunks[1], &b.chunks[1]));
    assert!(!a[3].expanded && b[3].expanded);
    assert_eq!((a.len(), b.len()), (1000, 1001));
    assert_eq!(a.iter().count(), 1000);
    assert_eq!(a.iter().next_back().unwrap().at_ms, 999);
    assert_eq!(a.iter().rposition(|r| r.at_ms == 300), Some(300));
    assert_eq!(b.last().unwrap().at_ms, 1000);
    assert_eq!(
        b.range(254, 258).map(|r| r.at_ms).collect::<Vec<_>>(),
        [254, 255, 256, 257]
    );
    assert!(a.get(1000).is_none() && b.get(1001).is_none());
    assert_eq!(b.range(999, 5000).count(), 2);
    // Skipping is a jump, from either end.
    assert_eq!(a.iter().nth(700).unwrap().at_ms, 700);
    assert_eq!(
        a.iter().skip(998).map(|r| r.at_ms).collect::<Vec<_>>(),
        [998, 999]
    );
    assert_eq!(a.iter().nth_back(1).unwrap().at_ms, 998);
    assert!(a.iter().nth(5000).is_none() && a.iter().nth_back(5000).is_none());
    assert_eq!(a.range(10, 20).last().unwrap().at_ms, 19);
}

use crate::diff::Diff;
use crate::transcript::{Level, PlanEntry, Tone};

/// Row `n` of a mix of every kind, with text long and short, repetitive and not, and
/// characters of every width.
fn kind(n: usize) -> ItemKind {
    let long = format!(
        "row {n}: naïve → 日本 {}",
        "the quick brown fox ".repeat(n % 40)
    );
    let s = |t: &str| format!("{t}{n}");
    match n % 11 {
        0 => ItemKind::User { text: long },
        1 => ItemKind::Assistant {
            text: long,
            streaming: n.is_multiple_of(2),
            aborted: n.is_multiple_of(3),
        },
        2 => ItemKind::Thinking {
            text: long,
            redacted: true,
            streaming: false,
        },
        3 => ItemKind::ToolCall {
            id: s("call-"),
            name: s("Bash"),
            summary: s("ls "),
            input: long.clone(),
            diff: Some(Box::new(Diff::unified("a.txt", "a\n", &long, 3))),
        },
        4 => ItemKind::ToolResult {
            tool_use_id: s("call-"),
            text: long,
            is_error: true,
        },
        5 => ItemKind::System {
            label: s("retry"),
            text: long,
        },
        6 => ItemKind::TurnResult {
            ok: true,
            subtype: s("success"),
            text: long,
            cost_usd: Some(0.5),
            input_tokens: n as u64,
            output_tokens: 7,
            duration_ms: 9,
        },
        7 => ItemKind::Audit {
            text: long,
            tone: Tone::Denied,
        },
        8 => ItemKind::Protocol {
            level: Level::Warn,
            text: if n.is_multiple_of(2) {
                String::new()
            } else {
                long
            },
        },
        9 => ItemKind::Generic {
            label: s("odd"),
            raw: long,
        },
        _ => ItemKind::Plan {
            entries: (0..n % 4)
                .map(|k| PlanEntry {
                    content: format!("step {k} of {long}"),
                    status: "pending".into(),
                    priority: s("high"),
                })
                .collect(),
        },
    }
}

fn packed(r: &Rows) -> Vec<bool> {
    r.chunks
        .iter()
        .map(|c| matches!(**c, Chunk::Packed(_)))
        .collect()
}

/// Rows behind the open tail are packed and read back exactly as they were pushed, every
/// kind and string of them; reading unpacks a chunk into this copy's slot until the next
/// change.
#[test]
fn packed_rows_read_back_whole() {
    let mut r = Rows::default();
    for n in 0..700 {
        r.push(Item::new(kind(n), n as u64));
    }
    // 11 chunks: all but the last two packed.
    let p = packed(&r);
    assert_eq!(p.len(), 11);
    assert!(p[..9].iter().all(|p| *p) && !p[9] && !p[10], "{p:?}");
    // Long repetitive text is compressed; a chunk of it takes a fraction of the text.
    let Chunk::Packed(c) = &*r.chunks[3] else {
        unreachable!()
    };
    let (compressed, stored, raw_len) = c.text.stored();
    assert!(compressed && stored * 2 < raw_len, "{stored} of {raw_len}");
    for i in c.rows.iter() {
        i.kind
            .clone()
            .strings_mut(&mut |s| assert!(s.is_empty(), "{s}"));
    }
    for (n, item) in r.iter().enumerate() {
        assert_eq!(item.kind, kind(n), "row {n}");
        assert_eq!(item.at_ms, n as u64);
    }
    assert_eq!(r.filled.lock().unwrap().len(), 9);
    r.push(row(700));
    assert!(r.filled.lock().unwrap().is_empty());
    assert!(r.unpacked.iter().all(|s| s.get().is_none()));
    assert_eq!(r[5].kind, kind(5));
}

fn stored(r: &Rows, c: usize) -> (bool, usize, usize) {
    match &*r.chunks[c] {
        Chunk::Packed(p) => p.text.stored(),
        Chunk::Open(_) => panic!("chunk {c} is open"),
    }
}

/// A thread that defers compression packs as before but leaves the blocks as they are;
/// another thread compresses them in place, for every copy sharing them, and reads are the
/// same before and after. Turned off, it hands back what was left and compresses again.
#[test]
fn deferred_compression_is_run_elsewhere_for_every_copy() {
    use crate::transcript::packed::{defer_compression, take_deferred};
    assert!(defer_compression(true).is_empty());
    let mut a = Rows::default();
    for n in 0..700 {
        a.push(Item::new(kind(n), n as u64));
    }
    // Short text: packed, and nothing to compress.
    let mut short = Rows::default();
    for n in 0..200 {
        short.push(row(n));
    }
    let b = a.clone();
    assert!((0..9).all(|c| !stored(&a, c).0));
    for (n, item) in a.iter().enumerate() {
        assert_eq!(item.kind, kind(n), "row {n}");
    }
    let deferred = take_deferred();
    assert_eq!(deferred.len(), 9);
    assert!(take_deferred().is_empty());
    std::thread::spawn(move || deferred.run()).join().unwrap();
    for c in 0..9 {
        let (compressed, n, raw) = stored(&b, c);
        assert!(compressed && n * 2 < raw, "chunk {c}: {n} of {raw}");
    }
    let a2 = a.clone();
    for (n, item) in a2.iter().enumerate() {
        assert_eq!(item.kind, kind(n), "row {n}");
    }
    // Packed after the last take, then turned off: handed back by the call.
    for n in 700..770 {
        a.push(Item::new(kind(n), n as u64));
    }
    let left = defer_compression(false);
    assert_eq!(left.len(), 2);
    left.run();
    assert!(stored(&a, 9).0 && stored(&a, 10).0);
    for n in 770..900 {
        a.push(Item::new(kind(n), n as u64));
    }
    assert!(stored(&a, 11).0 && stored(&a, 12).0);
    assert!(take_deferred().is_empty());
    for (n, item) in a.iter().enumerate() {
        assert_eq!(item.kind, kind(n), "row {n}");
    }
}

/// Reads of packed chunks on one thread while another compresses them read the same rows
/// throughout; a transcript dropped before its blocks are run is not kept alive for them.
#[test]
fn packed_rows_read_the_same_while_compressed_elsewhere() {
    use crate::transcript::packed::{defer_compression, take_deferred};
    let _ = defer_compression(true);
    let mut a = Rows::default();
    for n in 0..2000 {
        a.push(Item::new(kind(n), n as u64));
    }
    let deferred = take_deferred();
    let _ = defer_compression(false);
    assert_eq!(a.uncompressed_chunks(), deferred.len());
    let b = a.clone();
    std::thread::scope(|s| {
        s.spawn(move || deferred.run());
        for _ in 0..3 {
            let c = b.clone();
            c.scan(0, c.len(), |n, item| {
                assert_eq!(item.kind, kind(n), "row {n}");
                ControlFlow::Continue(())
            });
        }
    });
    assert_eq!(a.uncompressed_chunks(), 0);
    // Dropped before it is run: nothing left to compress.
    let _ = defer_compression(true);
    let mut gone = Rows::default();
    for n in 0..700 {
        gone.push(Item::new(kind(n), n as u64));
    }
    let deferred = take_deferred();
    assert_eq!(deferred.len(), 9);
    drop(gone);
    assert!(deferred.is_empty());
    assert!(defer_compression(false).is_empty());
}

/// A change to a packed row opens its chunk (a copy taken before keeps the old row), and
/// the chunk is packed again when the next chunk starts, with the change in it.
#[test]
fn a_changed_packed_row_is_opened_then_packed_again() {
    let mut a = Rows::default();
    for n in 0..300 {
        a.push(Item::new(kind(n), n as u64));
    }
    let b = a.clone();
    assert!(Arc::ptr_eq(&a.chunks[1], &b.chunks[1]));
    let item = a.get_mut(70).unwrap();
    item.kind = ItemKind::User {
        text: "changed".into(),
    };
    item.expanded = true;
    assert!(!packed(&a)[1] && packed(&b)[1]);
    assert_eq!(a.reopened, [1]);
    // Row 320 starts a chunk.
    for n in 300..330 {
        a.push(Item::new(kind(n), n as u64));
    }
    assert!(packed(&a)[1] && a.reopened.is_empty());
    assert_eq!(a[70].kind.text(), "changed");
    assert!(a[70].expanded);
    assert_eq!(b[70].kind, kind(70));
    assert!(!b[70].expanded);
    for n in (0..330).filter(|n| *n != 70) {
        assert_eq!(a[n].kind, kind(n), "row {n}");
    }
    // Short text stays as it was: nothing to gain from compressing it.
    let mut c = Rows::default();
    for n in 0..200 {
        c.push(row(n));
    }
    let Chunk::Packed(p) = &*c.chunks[0] else {
        unreachable!()
    };
    assert!(!p.text.stored().0);
    assert_eq!(c[63].kind.text(), "63");
}

/// `scan` reads any range, across chunk boundaries and packed or not, stops when told,
/// and leaves nothing unpacked; a chunk a read unpacked is read from its slot.
#[test]
fn a_scan_reads_everything_and_keeps_nothing() {
    let mut r = Rows::default();
    for n in 0..300 {
        r.push(Item::new(kind(n), n as u64));
    }
    for (from, to) in [
        (0, 300),
        (5, 70),
        (63, 65),
        (128, 500),
        (250, 250),
        (400, 500),
    ] {
        let mut seen = Vec::new();
        r.scan(from, to, |i, item| {
            assert_eq!(item.kind, kind(i));
            seen.push(i);
            ControlFlow::Continue(())
        });
        assert_eq!(seen, (from..to.min(300)).collect::<Vec<_>>());
    }
    assert!(r.unpacked.iter().all(|s| s.get().is_none()));
    assert!(r.filled.lock().unwrap().is_empty());
    let mut n = 0;
    r.scan(0, 300, |i, _| {
        n += 1;
        if i == 100 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    assert_eq!(n, 101);
    assert_eq!(r[1].kind, kind(1));
    let mut again = 0;
    r.scan(0, 64, |i, item| {
        assert_eq!(item.kind, kind(i));
        again += 1;
        ControlFlow::Continue(())
    });
    assert_eq!((again, r.filled.lock().unwrap().len()), (64, 1));
    // A change to a row a read unpacked takes the unpacked rows.
    r.get_mut(2).unwrap().expanded = true;
    assert!(r[2].expanded && r[3].kind == kind(3));
    assert!(r.unpacked.iter().all(|s| s.get().is_none()));
}
