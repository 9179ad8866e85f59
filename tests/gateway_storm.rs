//! Issue 21 item 10: seeded storms of a hostile host against the gateway engine (the same
//! driver as the `gateway_frames` fuzz target), each checked by `validate`'s exactly-once
//! rule and by counting what ran.

#[path = "support/gateway_storm.rs"]
mod storm;

use std::collections::HashMap;

use switchboard::backend::gateway::recording;
use switchboard::replay::load::load_str;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u8 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as u8
    }
}

#[test]
fn storms_never_give_an_id_two_final_answers_or_run_a_command_twice() {
    // SB_STORM_SEEDS=2000 for a longer local run.
    let seeds: u64 = std::env::var("SB_STORM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24);
    for seed in 0..seeds {
        let base = std::env::temp_dir().join(format!("sb-gw-storm-{}-{seed}", std::process::id()));
        let mut s = storm::Storm::new(&base);
        let mut rng = Rng(seed);
        for _ in 0..120 {
            let (b, c) = (rng.next(), rng.next());
            s.step(b, c);
        }
        let loaded = load_str(&s.recording(), None).unwrap();
        let report = recording::validate(&loaded);
        let twice: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule == "exactly-once")
            .collect();
        assert!(twice.is_empty(), "seed {seed}: {twice:?}");
        std::thread::sleep(std::time::Duration::from_millis(200));
        let mut seen: HashMap<String, usize> = HashMap::new();
        for l in s.ran() {
            *seen.entry(l).or_default() += 1;
        }
        let again: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
        assert!(again.is_empty(), "seed {seed}: ran twice: {again:?}");
        assert!(report.requests > 50, "seed {seed}: the storm sent calls");
        let _ = std::fs::remove_dir_all(&base);
    }
}
