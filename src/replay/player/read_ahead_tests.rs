use super::*;
use crate::record::Dir;

/// A Claude recording of `n` assistant messages, each its number and `pad`.
fn assistant_recording(n: usize, pad: &str) -> crate::replay::load::Loaded {
    let frames = (0..n)
        .map(|i| Frame {
            src_line: i + 2,
            ts: Some(i as u64),
            dir: Dir::In,
            text: format!(
                r#"{{"type":"assistant","message":{{"id":"m{i}","content":[{{"type":"text","text":"{i} {pad}"}}]}},"parent_tool_use_id":null}}"#
            ),
        })
        .collect();
    super::tests::claude_recording(frames)
}

/// No copy the pass kept holds a packed chunk left uncompressed.
fn all_compressed(st: &Store) {
    for (at, copy) in &st.checkpoints {
        let rows = &copy.state.tree.nodes[0].transcript.items;
        assert_eq!(rows.uncompressed_chunks(), 0, "copy at {at}");
    }
}

/// Frames long enough that the reader sends batches before each 1024 mark: the pass
/// applies every frame once, in order, and its copy of the end is the state a plain
/// replay reaches.
#[test]
fn batches_sent_early_apply_every_frame_once_in_order() {
    let src = assistant_recording(5000, &"x".repeat(1500));
    let store = Mutex::new(Store::default());
    background_pass(&src, &store, &AtomicBool::new(false), None);
    let st = store.into_inner().unwrap();
    assert!(st.finished);
    assert_eq!(st.done, 5000);
    let end = &st.checkpoints[&5000];
    let mut plain = Feeder::for_source(&src);
    for i in 0..5000 {
        plain.apply_from(&src, i);
    }
    let rows = |f: &Feeder| -> Vec<String> {
        f.state.tree.nodes[0]
            .transcript
            .items
            .iter()
            .map(|r| r.kind.text().chars().take(6).collect())
            .collect()
    };
    assert_eq!(end.pos, 5000);
    assert_eq!(rows(end), rows(&plain));
    assert_eq!(rows(end).len(), 5000);
    // The chunks the pass packed were compressed on the other threads, every one of them,
    // in the end's copy and in the copies before it.
    all_compressed(&st);
}

/// Stopped partway, the pass still leaves nothing it packed uncompressed.
#[test]
fn a_stopped_pass_leaves_nothing_uncompressed() {
    let src = assistant_recording(20_000, &"z".repeat(3000));
    let store = Mutex::new(Store::default());
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| background_pass(&src, &store, &stop, None));
        // Stopped after its first copy (at 4096).
        while store.lock().unwrap().checkpoints.is_empty() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let st = store.into_inner().unwrap();
    // (Stopped well before its end, unless this thread was held up for most of the pass.)
    assert!(st.finished);
    assert!(!st.checkpoints.is_empty());
    all_compressed(&st);
}

/// Each batch the reader sends holds at most `BATCH_BYTES` of text and one frame more,
/// also once batches come back to be filled again (their slots hold the texts of the
/// frames they carried before), and every frame comes once, in order, with its own text.
#[test]
fn batches_stay_within_their_bytes_when_they_go_round() {
    let pad = "y".repeat(40_000);
    let frames: Vec<Frame> = (0..3000usize)
        .map(|i| Frame {
            src_line: i + 2,
            ts: Some(i as u64),
            dir: Dir::In,
            // Long and short frames in runs, so recycled slots held other lengths.
            text: if (i / 300) % 2 == 0 {
                format!(r#"{{"type":"x","n":{i},"pad":"{pad}"}}"#)
            } else {
                format!(r#"{{"type":"x","n":{i}}}"#)
            },
        })
        .collect();
    let longest = frames.iter().map(|f| f.text.len()).max().unwrap_or(0);
    let src = super::tests::claude_recording(frames.clone());
    let (tx, rx) = std::sync::mpsc::sync_channel(2);
    let (back, returned) = std::sync::mpsc::channel();
    let stop = AtomicBool::new(false);
    let handoff = pass::Handoff::default();
    let mut next = 0;
    std::thread::scope(|scope| {
        scope.spawn(|| pass::read_ahead(&src, 3000, &stop, tx, returned, &handoff));
        for batch in rx.iter() {
            let bytes: usize = batch.iter().map(|(_, f, _)| f.text.len()).sum();
            assert!(
                bytes <= pass::BATCH_BYTES + longest,
                "a batch of {bytes} bytes in {} frames",
                batch.len()
            );
            for (i, f, _) in &batch {
                assert_eq!(*i, next);
                assert_eq!(f.text, frames[next].text, "frame {next}");
                next += 1;
            }
            let _ = back.send(batch);
        }
    });
    assert_eq!(next, 3000);
}

/// Taken back by halves at each full queue (12, 6, 3, 1, 0 in sixteen), not one at a time:
/// the pass waits in short runs and is the slower in between. Given out one at a time.
#[test]
fn parsing_is_taken_back_by_halves_and_given_out_one_at_a_time() {
    let mut leave = 0;
    for want in 1..=12 {
        leave = pass::next_leave(leave, false, true);
        assert_eq!(leave, want);
    }
    assert_eq!(pass::next_leave(12, false, true), 12);
    let mut seen = Vec::new();
    while leave > 0 {
        leave = pass::next_leave(leave, true, false);
        seen.push(leave);
    }
    assert_eq!(seen, [6, 3, 1, 0]);
    // A full queue and a wait since the last send: halved, then one more.
    assert_eq!(pass::next_leave(8, true, true), 5);
    assert_eq!(pass::next_leave(5, false, false), 5);
}

/// The reader leaves frames for the pass to parse while the pass waits on it, at most
/// twelve in sixteen, parses them all again once the pass keeps the queue full, and never
/// leaves any to a pass that does not wait.
#[test]
fn the_reader_leaves_parsing_to_a_waiting_pass_and_takes_it_back() {
    use std::sync::atomic::Ordering;
    let frames: Vec<Frame> = (0..60_000usize)
        .map(|i| Frame {
            src_line: i + 2,
            ts: Some(i as u64),
            dir: Dir::In,
            text: format!(r#"{{"type":"pong","n":{i},"pad":"{}"}}"#, "z".repeat(300)),
        })
        .collect();
    let src = Loaded {
        format: Format::Recording,
        backend: crate::core::BackendKind::Iii,
        header: None,
        frames,
    };
    let left = |batch: &pass::Batch| batch.iter().filter(|(_, _, p)| p.is_none()).count();
    // Shares of each batch left unparsed, for a pass that waits before its first
    // `waiting` batches (the reader is the slower) and is slow after them (the queue of
    // `queue` fills).
    let run = |queue: usize, waiting: usize| {
        let (tx, rx) = std::sync::mpsc::sync_channel(queue);
        let (_back, returned) = std::sync::mpsc::channel();
        let (stop, handoff) = (AtomicBool::new(false), pass::Handoff::default());
        let mut shares = Vec::new();
        std::thread::scope(|scope| {
            scope.spawn(|| pass::read_ahead(&src, 60_000, &stop, tx, returned, &handoff));
            loop {
                if shares.len() < waiting {
                    handoff.waits.fetch_add(1, Ordering::Relaxed);
                } else {
                    std::thread::sleep(std::time::Duration::from_millis(3));
                }
                let Ok(batch) = rx.recv() else { break };
                shares.push(left(&batch) as f64 / batch.len() as f64);
            }
        });
        shares
    };
    // Waiting throughout, the queue never full: up to twelve in sixteen (a short batch
    // rounds up a little).
    let shares = run(10_000, usize::MAX);
    assert_eq!(shares[0], 0.0, "nothing is left before the pass has waited");
    let most = shares.iter().copied().fold(0.0, f64::max);
    assert!((0.7..=0.77).contains(&most), "{shares:?}");
    // Waiting, then slow: the reader takes the parsing back.
    let shares = run(6, 30);
    assert_eq!(*shares.last().unwrap(), 0.0, "taken back: {shares:?}");
    // A pass that never waits: every frame is parsed ahead.
    let (tx, rx) = std::sync::mpsc::sync_channel(6);
    let (_back, returned) = std::sync::mpsc::channel();
    let (stop, handoff) = (AtomicBool::new(false), pass::Handoff::default());
    let mut unparsed = 0;
    std::thread::scope(|scope| {
        scope.spawn(|| pass::read_ahead(&src, 20_000, &stop, tx, returned, &handoff));
        for batch in rx.iter() {
            unparsed += left(&batch);
        }
    });
    assert_eq!(unparsed, 0);
}
