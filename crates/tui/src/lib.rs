//! switchboard's terminal UI: rendering a `State` (`ui`), and the app that runs a workspace
//! (`app`: the one `select!` loop over terminal input, backend events and the frame clock, the
//! terminal guard, the conversion of crossterm's events into the core's input, the headless
//! driver the tests use). The core it draws knows no terminal; this crate is where one lives.

pub mod app;
pub mod host;
pub mod settle;
pub mod ui;

#[cfg(test)]
mod test_gates;
