//! The Claude Code stream-json backend: transport, codec, mapping, encoding.

pub mod codec;
pub mod decode;
pub mod encode;
pub mod file_diff;
pub mod gates;
pub mod mapping;
pub mod replay;
pub mod session;
