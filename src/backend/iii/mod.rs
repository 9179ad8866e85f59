//! The iii harness backend: supervise agent sessions hosted by an iii engine.

pub mod mapping;
