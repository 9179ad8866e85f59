//! The built-in scripted agent behind `switchboard demo`.
pub mod agent;
