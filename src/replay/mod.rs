//! Recordings after the fact: load, validate, replay, import and export.

pub mod cli;
pub mod entry;
pub mod export;
pub mod feed;
pub mod load;
pub mod mapper;
pub mod offsets;
pub mod player;
pub mod sessions;
pub mod source;
pub mod validate;
pub mod validate_acp;
pub mod validate_manifest;
pub mod workspace;
