use super::*;
use crate::record::Dir;

/// The background pass indexes gates and answers exactly as the separate index pass does
/// (it builds the index of long recordings from what it applies).
#[test]
fn the_pass_indexes_what_the_index_pass_does() {
    let mut frames = Vec::new();
    for i in 0..12_000usize {
        let (dir, text) = if i % 1500 == 700 {
            (
                Dir::In,
                format!(
                    r#"{{"type":"control_request","request_id":"g{i}","request":{{"subtype":"can_use_tool","tool_name":"Bash","input":{{"command":"echo {i}"}}}}}}"#
                ),
            )
        } else if i % 1500 == 701 && i % 3000 != 701 {
            (
                Dir::Out,
                format!(
                    r#"{{"type":"control_response","response":{{"subtype":"success","request_id":"g{}","response":{{"behavior":"deny","message":"no"}}}}}}"#,
                    i - 1
                ),
            )
        } else {
            (
                Dir::In,
                format!(
                    r#"{{"type":"assistant","message":{{"id":"m{i}","content":[{{"type":"text","text":"line {i}"}}]}},"parent_tool_use_id":null}}"#
                ),
            )
        };
        frames.push(Frame {
            src_line: i + 2,
            ts: Some(i as u64 * 1000),
            dir,
            text,
        });
    }
    let src = super::tests::claude_recording(frames);
    let by_index = Mutex::new(GateIndex::default());
    build_index(&src, &by_index);
    let by_pass = Mutex::new(GateIndex::default());
    let store = Mutex::new(Store::default());
    background_pass(&src, &store, &AtomicBool::new(false), Some(&by_pass));
    let (a, b) = (
        by_index.into_inner().unwrap(),
        by_pass.into_inner().unwrap(),
    );
    assert_eq!(a.gate_frames.len(), 8);
    assert_eq!(a.answers.len(), 4, "{:?}", a.answers);
    assert_eq!(a.gate_frames, b.gate_frames);
    assert_eq!(a.answers, b.answers);
    assert_eq!((a.done, b.done), (12_000, 12_000));
}
