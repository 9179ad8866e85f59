//! ACP (JSON-RPC over stdio): the codec and the mapping (both directions) with the reducer and
//! the renderer behind them, fed arbitrary agent lines and keys (see `drive.rs`). Actions that
//! need IO (files, terminals) are left unperformed: the mapping must not depend on them.
#![no_main]

#[path = "drive.rs"]
mod drive;

use libfuzzer_sys::fuzz_target;
use switchboard::backend::acp::codec;
use switchboard::backend::acp::mapping::{AcpOptions, Mapper};
use switchboard::core::msg::{BackendEvent, Command};

struct Acp(Mapper);

impl drive::Wire for Acp {
    fn inbound(&mut self, line: &str) -> (Vec<BackendEvent>, Vec<String>) {
        let _ = codec::parse(line);
        self.0.now += 1;
        let out = self.0.on_line(line);
        (out.events, out.lines)
    }
    fn command(&mut self, c: &Command) -> (Vec<BackendEvent>, Vec<String>) {
        let out = self.0.command(c);
        (out.events, out.lines)
    }
    fn exit(&mut self) -> Vec<String> {
        self.0.shutdown_answers()
    }
}

fuzz_target!(|data: &[u8]| {
    let mut m = Mapper::new(AcpOptions {
        cwd: "/nonexistent/fuzz-cwd".into(),
        ..AcpOptions::default()
    });
    let _ = m.initialize_line();
    drive::run(switchboard::core::BackendKind::Acp, &mut Acp(m), data);
});
