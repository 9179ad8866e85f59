//! switchboard's recordings: the format and its writer, private file paths, reading a
//! recording back (whole, as lines, or indexed on disk), the replay-mapping interface and the
//! validation framework. Below every backend: each backend's replay adapter and validation
//! check implement the traits here, so no backend needs another to be read back.

pub mod check;
mod index;
pub mod load;
pub mod mapper;
pub mod obj;
pub mod offsets;
pub mod paths;
pub mod recorder;
pub mod scan;
pub mod source;

pub use load::entry;
pub use recorder::*;
