//! The pure core: state, messages and the reducer. No IO, no clocks, no terminal.

pub mod backend_kind;
pub mod bindings;
pub mod diff;
pub mod gate;
pub mod input;
pub mod keymap;
pub mod msg;
pub mod pretty;
pub mod rules;
pub mod session_id;
pub mod state;
#[cfg(any(test, feature = "test-hooks"))]
pub mod testing;
pub mod text;
pub mod text_field;
pub mod transcript;
pub mod tree;
pub mod update;
pub mod view_metrics;

pub use backend_kind::BackendKind;
pub use msg::{BackendEvent, Command, Effect, Msg};
pub use state::State;
pub use update::update;

/// The benches' realistic stream generator, for tests that need realistic random text (one
/// copy in the test build).
#[cfg(test)]
#[path = "../../../benches/support/gen.rs"]
pub(crate) mod test_gen;
