//! switchboard: a terminal UI that supervises interactive AI-agent sessions.

pub mod app;
pub mod backend;
pub mod child_env;
pub mod cli;
pub mod config;
pub mod contain;
/// The pure core, its own crate (`crates/core`): kept at this path so `switchboard::core` reads
/// as it always has.
pub use switchboard_core as core;
pub mod demo;
pub mod logging;
/// Private paths (the record crate's): kept at this path for the product's modules.
pub use switchboard_record::paths;
pub mod reaper;
/// The recording format and its writer (`crates/record`).
pub use switchboard_record as record;
pub mod registry;
pub mod replay;
pub mod schema;
pub mod schema_acp;
pub mod screenshots;
pub mod ui;
pub mod workspace;

/// Reducer tests that drive the core with the backends' real mappings.
#[cfg(test)]
mod reducer_tests;

/// The benches' realistic stream generator, for the unit tests that compare fast paths with
/// general ones (one copy in the test build).
#[cfg(test)]
#[path = "../benches/support/gen.rs"]
pub(crate) mod test_gen;
