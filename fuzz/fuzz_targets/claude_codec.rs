//! The Claude codec's fast paths against its general serde path: each line of the input is
//! parsed by both; whenever a fast path reads a line, the result must be the one the general
//! path gives (and neither may panic). Much faster per input than `claude_line`, so it reaches
//! further into odd JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard::backend::claude::codec;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        let reference = format!("{:?}", codec::parse_reference(line));
        if let Some(fast) = codec::parse_fast(line) {
            assert_eq!(format!("{fast:?}"), reference, "line: {line}");
        }
        let _ = codec::parse(line);
    }
});
