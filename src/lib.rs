//! switchboard: a terminal UI that supervises interactive AI-agent sessions.

pub mod app;
pub mod backend;
pub mod cli;
pub mod config;
pub mod contain;
pub mod core;
pub mod demo;
pub mod logging;
pub mod paths;
pub mod record;
pub mod replay;
pub mod schema;
pub mod schema_acp;
pub mod screenshots;
pub mod ui;
pub mod workspace;
