//! The gateway engine under a hostile host's storm (tests/support/gateway_storm.rs, the
//! driver the suite's seeded storms use): each pair of input bytes is one step (a new call,
//! a re-send, an id reused for other arguments, the owner's allow, deny or edit, a restart,
//! a failing journal append). Besides "no panic": `validate` finds no id with two final
//! answers (the id table), and no command ran twice.
#![no_main]

#[path = "../../tests/support/gateway_storm.rs"]
mod storm;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let base = std::env::temp_dir().join(format!("sb-fuzz-gw-{}", std::process::id()));
    let mut s = storm::Storm::new(&base);
    for pair in data.chunks(2).take(200) {
        s.step(pair[0], *pair.get(1).unwrap_or(&0));
    }
    let loaded = switchboard::replay::load::load_str(&s.recording(), None).expect("loads");
    let report = switchboard::backend::gateway::recording::validate(&loaded);
    assert!(
        !report.findings.iter().any(|f| f.rule == "exactly-once"),
        "{:?}",
        report.findings
    );
    std::thread::sleep(std::time::Duration::from_millis(50));
    let mut ran = s.ran();
    let n = ran.len();
    ran.sort();
    ran.dedup();
    assert_eq!(ran.len(), n, "a command ran twice");
});
