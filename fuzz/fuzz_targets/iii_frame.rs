//! iii engine frames: the codec fed arbitrary text frames. Besides "no panic": a frame that
//! parses serializes to JSON that parses back to the same frame, and never carries `null`
//! for an absent optional field of a known type.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard::backend::iii::codec::{self, Message};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for frame in std::iter::once(text).chain(text.lines()) {
        let Ok(msg) = codec::decode(frame) else {
            continue;
        };
        let again = codec::encode(&msg).expect("a parsed frame serializes");
        let back = codec::decode(&again).expect("a serialized frame parses");
        // Floats may round-trip to a different representation; compare the re-encoding.
        assert_eq!(codec::encode(&back).expect("re-encodes"), again);
        if !matches!(msg, Message::Unknown(_)) {
            let v: serde_json::Value = serde_json::from_str(&again).expect("JSON");
            if let Some(o) = v.as_object() {
                // `data` and `config` are required JSON values: their null is a value.
                let absent_as_null = o
                    .iter()
                    .any(|(k, x)| x.is_null() && k != "data" && k != "config");
                assert!(!absent_as_null, "null field in {again}");
            }
        }
    }
});
