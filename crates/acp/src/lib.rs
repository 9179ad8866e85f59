//! The Agent Client Protocol (ACP v1) backend, with the Checkfu extension: transport over
//! `backend::process`, a two-stage codec (typed with the official schema crate, else raw), a
//! pure mapping, client-side terminals and the live session.
//!
//! The `agent-client-protocol-schema` types stay inside this module.

pub mod codec;
pub mod mapping;
pub mod replay;
pub mod schema;
pub mod session;
pub mod terminal;
pub mod validate;
