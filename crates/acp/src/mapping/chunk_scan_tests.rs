//! The hand-read chunk against serde's: wherever it reads a line, it reads what serde reads.

use super::fast::{Chunk, serde_chunk};

type Read = Option<(bool, String, Option<String>)>;

fn key(c: Option<Chunk<'_>>) -> Read {
    c.map(|c| {
        (
            c.thinking,
            c.text.into_owned(),
            c.message_id.map(|m| m.into_owned()),
        )
    })
}

fn note(update: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{update}}}}}"#
    )
}

/// Whether the hand read takes `line`; what it takes is serde's reading.
fn agrees(line: &str) -> bool {
    let hand = key(super::chunk_scan::chunk(line));
    if hand.is_some() {
        assert_eq!(hand, key(serde_chunk(line)), "{line:?}");
    }
    hand.is_some()
}

#[test]
fn the_hand_read_chunk_reads_what_serde_reads() {
    let taken = [
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello"}}"#),
        note(r#"{"content":{"text":"Hi","type":"text"},"sessionUpdate":"agent_thought_chunk"}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00"},"messageId":"m1"}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""},"messageId":null}"#),
        note(r#"{"messageId":"m\u0031","sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x\u001b[2J"}}"#),
        r#"{"params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"p"}},"sessionId":"s\"1"},"method":"session/update","jsonrpc":"2.0"}"#.to_string(),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"naïve → ✓"}}"#),
    ];
    let left = [
        // serde decides these (some it reads, most it refuses).
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a","annotations":null}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"AA=="}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"},"_meta":{}}"#),
        note(r#"{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"me"}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":1}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"},"sessionUpdate":"agent_thought_chunk"}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a","text":"b"}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\ud800"}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\x"}}"#),
        note("{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"a\ttab\"}}"),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"te\u0078t","text":"a"}}"#),
        note(r#"{"session\u0055pdate":"agent_message_chunk","content":{"type":"text","text":"a"}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"},"messageId":7}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk", "content":{"type":"text","text":"a"}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}} "#),
        note(r#"{"sessionUpdate":"agent_message_chunk","content":{"text":"a"}}"#),
        note(r#"{"sessionUpdate":"agent_message_chunk"}"#),
        note(r#"{}"#),
        r#"{"jsonrpc":"2.0","id":9,"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}"#.to_string(),
        r#"{"jsonrpc":"1.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":1,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}"#.to_string(),
        r#" {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}x"#.to_string(),
        String::new(),
        "{".to_string(),
    ];
    for l in &taken {
        assert!(agrees(l), "not taken: {l}");
    }
    for l in &left {
        assert!(!agrees(l), "taken: {l}");
    }
    // Every line of the real agents' recordings.
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/recordings/acp");
    let mut real = 0;
    for e in std::fs::read_dir(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display())) {
        let p = e.unwrap().path();
        for l in std::fs::read_to_string(&p).unwrap_or_default().lines() {
            real += usize::from(agrees(l));
        }
    }
    assert!(real >= 5, "{real} real chunks read by hand");
    // Each line changed by one byte, many ways: the hand read never reads one otherwise.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let alphabet = b"\"{}[]:,\\ nul0129eaxu/tsm\t";
    let mut mutated_taken = 0;
    for base in taken.iter() {
        for _ in 0..3000 {
            let mut b = base.clone().into_bytes();
            let at = (next() % b.len() as u64) as usize;
            let c = alphabet[(next() % alphabet.len() as u64) as usize];
            match next() % 3 {
                0 => {
                    b.remove(at);
                }
                1 => b.insert(at, c),
                _ => b[at] = c,
            }
            if let Ok(l) = String::from_utf8(b) {
                mutated_taken += usize::from(agrees(&l));
            }
        }
    }
    assert!(mutated_taken > 1000, "{mutated_taken}");
}
