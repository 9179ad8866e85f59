//! A fake iii engine: the engine's WebSocket protocol in process, a scripted harness world
//! (sessions, sub-agents, gates) and its scale and churn models (`demo-engine`, tests, benches).

pub mod fake_engine;
pub mod fake_gate;
/// The scale world's content makers are shared with the iii replay bench.
pub mod fake_scale;
mod fake_world;
