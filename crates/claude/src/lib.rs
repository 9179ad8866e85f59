//! The Claude Code stream-json backend: transport, codec, mapping, encoding.

pub mod codec;
pub mod decode;
pub mod encode;
pub mod file_diff;
pub mod gates;
pub mod mapping;
pub mod replay;
pub mod schema;
pub mod session;
pub mod validate;

/// The benches' realistic stream generator, for the tests that compare fast paths with general
/// ones (one copy in the test build).
#[cfg(test)]
#[path = "../../../benches/support/gen.rs"]
pub(crate) mod test_gen;
