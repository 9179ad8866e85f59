//! Shared test support. Use with `mod support;` then `support::fake_model::…`,
//! or include a single file with `#[path = "support/fake_model.rs"] mod fake_model;`.
//! `scene.rs`: a state fed by real Claude lines, for screen tests (tests/ui_snapshots.rs).
#![allow(dead_code)]

pub mod fake_model;
pub mod scene;
