//! Random ids (UUIDs, tool and message ids) and pacing ranges from the agent's own RNG.

use super::Agent;

impl<O: FnMut(String)> Agent<O> {
    pub(super) fn rand(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(super) fn uuid(&mut self) -> String {
        let a = self.rand();
        let b = self.rand();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:x}{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            8 | ((b >> 62) & 3),
            (b >> 48) & 0xfff,
            b & 0xffff_ffff_ffff
        )
    }

    pub(super) fn base62(&mut self, n: usize) -> String {
        const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        (0..n)
            .map(|_| ALPHABET[(self.rand() % 62) as usize] as char)
            .collect()
    }

    pub(super) fn tool_id(&mut self) -> String {
        format!("toolu_01{}", self.base62(22))
    }

    pub(super) fn msg_id(&mut self) -> String {
        format!("msg_01{}", self.base62(22))
    }

    pub(super) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.rand() % (hi - lo + 1)
    }

    // ---- output
}
