//! switchboard: a terminal UI that supervises interactive AI-agent sessions.

/// The app loop and the renderer (`crates/tui`), kept at these paths for the commands.
pub use switchboard_tui::{app, host, ui};
pub mod backend;
/// Child environments and path containment (the shared backend crate's).
pub use switchboard_backend::{child_env, contain};
pub mod cli;
pub mod config;
/// The pure core, its own crate (`crates/core`): kept at this path so `switchboard::core` reads
/// as it always has.
pub use switchboard_core as core;
pub mod logging;
/// Private paths (the record crate's): kept at this path for the product's modules.
pub use switchboard_record::paths;
pub mod reaper;
/// The recording format and its writer (`crates/record`).
pub use switchboard_record as record;
pub mod registry;
pub mod replay;
pub mod schema;
/// The ACP schema checks (the ACP backend's).
pub use switchboard_acp::schema as schema_acp;
pub mod screenshots;
pub mod workspace;
