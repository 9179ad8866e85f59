use super::*;
use crate::core::input::{KeyCode, KeyEvent, KeyModifiers};
use crate::record::Dir;
use crate::replay::load::Frame;

/// A long Claude recording of plain assistant text, with a gate every 5,000 frames.
fn long_recording(frames: usize) -> Loaded {
    let frames = (0..frames)
        .map(|i| {
            let text = if i % 5000 == 4999 {
                format!(
                    r#"{{"type":"control_request","request_id":"g{i}","request":{{"subtype":"can_use_tool","tool_name":"Bash","input":{{"command":"echo {i}"}}}}}}"#
                )
            } else {
                format!(
                    r#"{{"type":"assistant","message":{{"id":"m{i}","content":[{{"type":"text","text":"line {i}"}}]}},"parent_tool_use_id":null}}"#
                )
            };
            Frame {
                src_line: i + 2,
                ts: Some(i as u64),
                dir: Dir::In,
                text,
            }
        })
        .collect();
    claude_recording(frames)
}

/// `frames` as a Claude recording already loaded.
pub(super) fn claude_recording(frames: Vec<Frame>) -> Loaded {
    Loaded {
        format: Format::Recording,
        backend: crate::core::BackendKind::Claude,
        header: None,
        frames,
    }
}

fn shape(p: &Player) -> (usize, usize, usize, Vec<String>) {
    let s = p.state();
    (
        s.tree.nodes.len(),
        s.tree.nodes[0].transcript.len(),
        s.gates.len(),
        s.gates.iter().map(|g| g.id.clone()).collect(),
    )
}

fn fresh(frames: usize, n: usize) -> Player {
    let mut p = Player::with_background_pass(Arc::new(long_recording(frames)), false);
    p.seek(n);
    p
}

/// A seek that lands while the spare for the previous position is still being made: once
/// the work is done, the spare serves the new position (it used to stay at the old one, so
/// every step back after a jump copied the state in the key handler).
#[test]
fn the_spare_follows_the_viewer_after_a_jump() {
    let mut p = Player::open(long_recording(50_000));
    p.wait_prepared();
    p.seek(50_000);
    // Past a copy the seek itself keeps (and one the background pass has), so no other
    // work is left to make the spare as a side effect.
    let target = 5 * CHECKPOINT_SPACING + 100;
    p.seek(target);
    p.finish_work();
    // The race, made certain: the copy for the old position arrives only now (a long
    // session's copy takes longer than the seek).
    let (tx, rx) = std::sync::mpsc::channel();
    let old = p.feeder.clone();
    p.spare = None;
    p.spare_making = Some((49_152, rx));
    tx.send((None, old)).unwrap();
    p.finish_work();
    let behind = (target - 1) / CHECKPOINT_SPACING * CHECKPOINT_SPACING;
    assert_eq!(p.spare.as_ref().map(|s| s.0), Some(behind));
    p.seek(target - 1);
    assert_eq!(p.state().replay.as_ref().unwrap().frame, target - 1);
    assert_eq!(shape(&p), shape(&fresh(50_000, target - 1)));
}

#[test]
fn stepping_back_from_a_checkpoint_equals_replaying_from_the_start() {
    let mut p = Player::open(long_recording(50_000));
    p.wait_prepared();
    p.seek(50_000);
    let kept = p.checkpoint_positions();
    // The background pass: every multiple of its spacing, and the end.
    for c in (1..=6)
        .map(|k| k * background_spacing(50_000))
        .chain([50_000])
    {
        assert!(kept.contains(&c), "{c} not in {kept:?}");
    }
    for target in [45_001, 40_960, 40_959, 20_123, 3] {
        p.seek(target);
        assert_eq!(
            shape(&p),
            shape(&fresh(50_000, target)),
            "at frame {target}"
        );
        p.seek(50_000);
    }
}

/// Wherever the viewer lands, a copy at most `CHECKPOINT_SPACING` frames behind is kept or
/// prepared, so each step back replays at most that many frames; and stepping back gives the
/// state replaying from the start gives.
#[test]
fn every_step_back_starts_from_a_copy_close_behind() {
    let k = CHECKPOINT_SPACING;
    let total = 5 * k;
    let mut p = Player::with_background_pass(Arc::new(long_recording(total)), false);
    let step_back = |p: &mut Player, pos: &mut usize| {
        let behind = p
            .checkpoint_positions()
            .into_iter()
            .filter(|&c| c < *pos)
            .max()
            .unwrap_or(0);
        assert!(
            *pos - 1 - behind <= k,
            "at {pos}: nearest copy {behind} of {:?}",
            p.checkpoint_positions()
        );
        // A spare of that copy is ready, so the step back moves it in instead of copying.
        let spare = p.spare.as_ref().map(|(at, f)| (*at, f.pos));
        assert_eq!(spare, Some((behind, behind)), "at {pos}");
        p.key(KeyEvent::new(KeyCode::Char(','), KeyModifiers::NONE));
        assert!(!p.seeking(), "a step back at {pos} became a long seek");
        assert!(
            p.spare.is_none(),
            "the step back at {pos} did not take the spare"
        );
        p.finish_work();
        *pos -= 1;
        assert_eq!(p.state().replay.as_ref().unwrap().frame, *pos);
    };
    // Land just past a boundary, then step back across it and across the next one down
    // (landing there by a short seek, as a user holding `,` would after many presses).
    let mut pos = 4 * k + 2;
    p.seek(pos);
    p.finish_work();
    for _ in 0..3 {
        step_back(&mut p, &mut pos);
    }
    assert_eq!(shape(&p), shape(&fresh(total, pos)), "at frame {pos}");
    pos = 3 * k + 1;
    p.seek(pos);
    p.finish_work();
    for _ in 0..2 {
        step_back(&mut p, &mut pos);
    }
    assert_eq!(shape(&p), shape(&fresh(total, pos)), "at frame {pos}");
    // Presses in a row while the spare is still being made: each lands where it should.
    pos = 2 * k + 3;
    p.seek(pos);
    p.finish_work();
    for _ in 0..3 {
        p.key(KeyEvent::new(KeyCode::Char(','), KeyModifiers::NONE));
        assert!(!p.seeking());
        pos -= 1;
        assert_eq!(p.state().replay.as_ref().unwrap().frame, pos);
    }
    p.finish_work();
    assert_eq!(shape(&p), shape(&fresh(total, pos)), "at frame {pos}");
    // Only copies near the viewer are kept (no background pass here).
    assert!(
        p.checkpoint_positions().len() <= 4,
        "{:?}",
        p.checkpoint_positions()
    );
}

/// Two long sessions merged: (sessions' node counts, transcript lengths, pending gates).
fn workspace_shape(p: &Player) -> Vec<(usize, usize, Vec<String>)> {
    p.state()
        .sessions
        .iter()
        .map(|s| {
            (
                s.tree.nodes.len(),
                s.tree.nodes[0].transcript.len(),
                s.gates.iter().map(|g| g.id.clone()).collect(),
            )
        })
        .collect()
}

/// Two recordings with the same gate ids, the second's times offset by half a frame's
/// worth so the frames alternate.
fn long_workspace(frames: usize) -> Arc<dyn FrameSource> {
    let mut b = long_recording(frames);
    for (i, f) in b.frames.iter_mut().enumerate() {
        f.ts = f.ts.map(|t| t * 2 + 1);
        // b answers each of its gates on the next frame (a never does).
        if i > 0 && i % 5000 == 0 {
            let id = format!("g{}", i - 1);
            f.dir = Dir::Out;
            f.text = format!(
                r#"{{"type":"control_response","response":{{"subtype":"success","request_id":"{id}","response":{{"behavior":"allow","updatedInput":{{"command":"echo {}"}}}}}}}}"#,
                i - 1
            );
        }
    }
    let mut a = long_recording(frames);
    for f in &mut a.frames {
        f.ts = f.ts.map(|t| t * 2);
    }
    let ws = crate::replay::workspace::WorkspaceSource::merge(vec![
        ("a".into(), Arc::new(a) as Arc<dyn FrameSource>),
        ("b".into(), Arc::new(b)),
    ])
    .unwrap();
    Arc::new(ws)
}

/// The checkpoints of the background pass and of stepping back hold whole workspaces: seeks
/// and steps back over a merged timeline land where replaying from the start lands, and the
/// gate jump shows the session of the gate's frame.
#[test]
fn a_workspace_timeline_seeks_through_checkpoints_like_replaying_from_the_start() {
    let total = 2 * 25_000;
    let src = long_workspace(25_000);
    assert_eq!(src.len(), total);
    assert_eq!((src.lane(0), src.lane(1), src.lane(2)), (0, 1, 0));
    let fresh_ws = |n: usize| {
        let mut p = Player::with_background_pass(src.clone(), false);
        p.seek(n);
        workspace_shape(&p)
    };
    let mut p = Player::from_source(src.clone());
    p.wait_prepared();
    p.seek(total);
    let kept = p.checkpoint_positions();
    for c in (1..=6)
        .map(|k| k * background_spacing(total))
        .chain([total])
    {
        assert!(kept.contains(&c), "{c} not in {kept:?}");
    }
    for target in [45_001, 40_960, 40_959, 20_123, 3] {
        p.seek(target);
        assert_eq!(workspace_shape(&p), fresh_ws(target), "at frame {target}");
        p.key(KeyEvent::new(KeyCode::Char(','), KeyModifiers::NONE));
        p.finish_work();
        assert_eq!(
            workspace_shape(&p),
            fresh_ws(target - 1),
            "at {}",
            target - 1
        );
        p.seek(total);
    }
    // Each session has its own `g4999`: the second gate jump shows session b's.
    p.seek(0);
    p.key(KeyEvent::new(KeyCode::Char(']'), KeyModifiers::NONE));
    p.finish_work();
    assert_eq!(p.state().selected, 0);
    p.key(KeyEvent::new(KeyCode::Char(']'), KeyModifiers::NONE));
    p.finish_work();
    assert_eq!(p.state().selected, 1);
    assert_eq!(p.state().active().map(|g| g.id.as_str()), Some("g4999"));
    assert_eq!(p.state().replay.as_ref().unwrap().frame, 2 * 4999 + 2);
    let answers = &p.state().replay.as_ref().unwrap().answers;
    assert!(answers["g4999"].starts_with("allowed once"), "{answers:?}");
    // A gate jump long enough to run between keys lands on b's gate and shows b's answer,
    // though a has a gate of the same id pending (with no answer).
    let mut p = Player::with_background_pass(src.clone(), false);
    p.seek(0);
    let target = 2 * 19_999 + 2;
    p.go_to_gate(target);
    assert!(p.seeking());
    p.finish_work();
    let s = p.state();
    assert_eq!((s.replay.as_ref().unwrap().frame, s.selected), (target, 1));
    assert_eq!(s.active().map(|g| g.id.as_str()), Some("g19999"));
    assert!(s.sessions[0].gate("g19999").is_some());
    let answers = &s.replay.as_ref().unwrap().answers;
    assert!(answers["g19999"].starts_with("allowed once"), "{answers:?}");
}

/// `End` far from any copy runs between key presses with its progress shown; Esc cancels it
/// and leaves the view where it was; run to its end it lands where a direct seek lands.
#[test]
fn a_long_seek_runs_off_the_key_handler_and_esc_cancels_it() {
    let total = 3 * LONG_SEEK;
    let mut p = Player::with_background_pass(Arc::new(long_recording(total)), false);
    let before = shape(&p);
    p.key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
    assert!(p.seeking());
    assert_eq!(p.state().replay.as_ref().unwrap().frame, 1);
    p.work(Duration::from_millis(30));
    let status = p.state().status_line.clone().unwrap_or_default();
    assert!(
        status.starts_with(&format!("seeking from frame 1 to {total}: "))
            && status.ends_with("Esc cancels"),
        "{status}"
    );
    // Navigation keeps working on the frame shown while the seek runs.
    p.key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    assert!(p.seeking());
    p.key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert!(!p.seeking());
    assert_eq!(p.state().replay.as_ref().unwrap().frame, 1);
    assert_eq!(shape(&p), before);
    assert_eq!(p.state().status_line.as_deref(), Some("seek cancelled"));
    p.key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
    assert!(p.seeking());
    p.finish_work();
    assert_eq!(p.state().replay.as_ref().unwrap().frame, total);
    assert_eq!(shape(&p), shape(&fresh(total, total)));
    assert_eq!(p.state().status_line, None);
    // A gate jump far back is a long seek too, and shows its gate when it lands.
    p.key(KeyEvent::new(KeyCode::Home, KeyModifiers::NONE));
    p.finish_work();
    p.key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
    p.finish_work();
    p.key(KeyEvent::new(KeyCode::Char('['), KeyModifiers::NONE));
    p.finish_work();
    let last_gate = (0..total).rev().find(|i| i % 5000 == 4999).unwrap();
    assert_eq!(p.state().replay.as_ref().unwrap().frame, last_gate + 1);
    assert_eq!(p.state().focus, Focus::Gate);
}

/// `End` pressed while the background pass is on its way there: the seek waits for the
/// pass's copy of the end (no frame applied twice), says how far the pass got, and lands on
/// the same state as replaying from the start.
#[test]
fn end_pressed_early_follows_the_background_pass() {
    let total = 6 * LONG_SEEK;
    let mut p = Player::with_background_pass(Arc::new(long_recording(total)), true);
    p.key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
    assert!(p.seeking());
    assert!(p.following(), "waits for the background pass");
    assert!(p.only_waiting(), "the run loop polls instead of spinning");
    p.work(Duration::from_millis(30));
    assert!(
        p.job.as_ref().is_some_and(|j| j.feeder.is_none()),
        "no frame applied by the seek itself while it follows"
    );
    let status = p.state().status_line.clone().unwrap_or_default();
    assert!(
        status.starts_with(&format!("seeking from frame 1 to {total}: ")),
        "{status}"
    );
    // The replay's footer shows it (in place of the keys).
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 20)).unwrap();
    p.draw(&mut term, &crate::ui::theme::Theme::dark()).unwrap();
    let screen = format!("{:?}", term.backend().buffer());
    assert!(screen.contains("seeking from frame 1 to"), "{screen}");
    while p.state().replay.as_ref().unwrap().frame < total {
        std::thread::sleep(Duration::from_millis(1));
        p.work(SLICE);
    }
    assert_eq!(shape(&p), shape(&fresh(total, total)));
    assert_eq!(p.state().status_line, None);
}
