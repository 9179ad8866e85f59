//! Recording, cassette and JSONL loading, then what `validate` and the replay player do with
//! whatever loaded: every format, detected and forced.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard::replay::load::{Format, load_str};
use switchboard::replay::player::Player;
use switchboard::replay::validate::validate;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let forced = match data.first().map(|b| b % 4) {
        Some(1) => Some(Format::Recording),
        Some(2) => Some(Format::Cassette),
        Some(3) => Some(Format::Jsonl),
        _ => None,
    };
    for force in [None, forced] {
        let Ok(loaded) = load_str(text, force) else {
            continue;
        };
        let _ = validate(&loaded);
        let mut p = Player::open(loaded);
        let total = p.total();
        p.seek(total);
        p.seek(total / 2);
        let _ = p.state();
    }
});
