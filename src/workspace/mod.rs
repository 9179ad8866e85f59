//! Sessions as the user defines them (`[[session]]` profiles) and how each one is started:
//! the shared launch code behind `switchboard up`, the one-session subcommands and the
//! new-session dialog; and the workspace manifest that ties their recordings together.

pub mod history;
pub mod launch;
pub mod manifest;
pub mod profile;
pub mod resume;
pub mod saved;
