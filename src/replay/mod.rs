//! Recordings after the fact: load, validate, replay, import and export.

pub mod chain;
pub mod cli;
// Reading recordings back is the record crate's; kept at these paths for the replay's modules.
pub use switchboard_record::{entry, load, mapper, offsets, source};
pub mod export;
pub mod feed;
pub mod player;
pub mod sessions;
pub mod validate;
/// The ACP rules (the ACP backend's).
pub use switchboard_acp::validate as validate_acp;
pub mod validate_manifest;
pub mod workspace;
