//! The fifteen tools of the spec, each doing the real thing beneath the pinned root.

pub mod env;
pub mod exec;
pub mod extra;
pub mod feed;
pub mod files;
pub mod media;
