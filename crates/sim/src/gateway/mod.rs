//! A fake ai-gateway host (the remote side of the channel) and the scripted `demo-gateway`.

pub mod demo;
pub mod fake_host;
