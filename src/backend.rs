//! The backends, one crate each (`crates/claude`, `acp`, `iii`, `gateway`, `adopt`), and what they share
//! (`crates/backend`: the `Backend` trait, processes, the session link). Gathered at this path
//! so the product's modules name them as `backend::claude`, `backend::Backend`, ….

pub use switchboard_acp as acp;
pub use switchboard_adopt as adopt;
pub use switchboard_backend::*;
pub use switchboard_claude as claude;
pub use switchboard_gateway as gateway;
pub use switchboard_iii as iii;
