//! The iii engine backend (issue #12): switchboard connects to an iii engine as one more
//! worker, calls the harness / approval-gate / session-manager functions and receives their
//! events through handler functions bound with `registertrigger`.
//!
//! - `codec`: the engine's `Message` frames, bounded, unknown types kept raw.
//! - `transport`: the WebSocket (headers, loopback rule), backoff, retry safety (§7).
//! - `client`: the worker protocol as a state machine: register, bind, call, events, ping.
//! - `fake_engine`: an in-process engine with a scripted harness world (tests, `demo-engine`).
//! - `mapping`: sans-IO: function results and pushed events → domain events and gates per root
//!   session; decisions and prompts → calls.
//! - `session`: `IiiBackend`, the hosting source that joins the client and the mapper.
//! - `golden`: the harness authors' golden request schemas, which `validate` holds calls to.

pub mod client;
pub mod codec;
pub mod golden;
pub mod mapping;
pub mod replay;
pub mod session;
pub mod transport;
pub mod validate;

/// The core's reducer driven through this backend's mapper (docs/architecture.md).
#[cfg(test)]
mod reducer_tests;
