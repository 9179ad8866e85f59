//! Claude stream-json: the codec and the mapping (both directions) with the reducer and the
//! renderer behind them, fed arbitrary stdout lines and keys (see `drive.rs`).
#![no_main]

#[path = "drive.rs"]
mod drive;

use libfuzzer_sys::fuzz_target;
use switchboard::backend::claude::codec;
use switchboard::backend::claude::mapping::Mapper;
use switchboard::core::msg::{BackendEvent, Command};

struct Claude(Mapper);

impl drive::Wire for Claude {
    fn inbound(&mut self, line: &str) -> (Vec<BackendEvent>, Vec<String>) {
        let _ = codec::parse(line);
        let out = self.0.on_line(line);
        (out.events, out.replies)
    }
    fn command(&mut self, c: &Command) -> (Vec<BackendEvent>, Vec<String>) {
        let out = self.0.command(c);
        (out.events, out.replies)
    }
    fn exit(&mut self) -> Vec<String> {
        self.0.exit_answers().replies
    }
}

fuzz_target!(|data: &[u8]| {
    let mut m = Mapper::new(&["Bash".to_string()]);
    let _ = m.initialize_line();
    drive::run(switchboard::core::BackendKind::Claude, &mut Claude(m), data);
});
