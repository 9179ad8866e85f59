//! Everything that plays a peer: the scripted Claude agent and its demo workspace, the fake iii
//! engine with its harness world and scale models, the fake ai-gateway host and its demo. Used
//! by the demo commands (`demo`, `demo-agent`, `demo-engine`, `demo-gateway`), the tests and the
//! benches; nothing in the product's supervising path links it.

pub mod demo;
pub mod gateway;
pub mod iii;
