//! The ai-gateway owner backend (issue 13): switchboard as the workspace owner A dials out
//! to an agent host B, which sends tool calls over one WebSocket channel; A validates each
//! call (reference §4), asks the owner where the mode says so, executes beneath the pinned
//! project root, and answers. Every effect is journaled before it happens and its result
//! before it is sent, so no reconnect or crash runs an effect twice.
//!
//! Sans-IO core (`codec`, `validate`, `engine`), the receipts (`journal`), the tools
//! (`tools/`), the network (`transport`).

pub mod codec;
pub mod effect;
pub mod engine;
pub mod journal;
pub mod journal_file;
pub mod mapping;
pub mod recording;
pub mod replay;
pub mod session;
pub mod tools;
pub mod transport;
pub mod validate;
pub mod watch;
