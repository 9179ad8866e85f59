//! Adopted sessions: Claude Code and Codex sessions people start in their own terminals,
//! joined to the workspace through their CLIs' own hooks (`switchboard hooks install`).
//!
//! A hook (`switchboard hook claude|codex`) hands each event to the host over its socket; the
//! host's connection task makes it a `HookCall` (crates/backend `hooks`), and this crate's
//! source (`source`) opens one workspace session per CLI session, follows its transcript
//! files (`tail`), and answers its permission requests on the usual cards (`gates`,
//! `encode`). What happens is decided by the sans-IO `mapping`, shared by live, replay and
//! validate; the recording's lines are `recorded`'s.
//!
//! Never deciding by default: anything not answered here (no host, a refused event, a card
//! handed back, the host stopping) leaves the hook printing nothing, and the CLI's own prompt
//! decides.

pub mod claude_lines;
pub mod codex_lines;
pub mod encode;
pub mod event;
pub mod gates;
pub mod install;
pub mod jsonspan;
pub mod mapping;
pub mod recorded;
pub mod replay;
pub mod session;
pub mod source;
pub mod tail;
pub mod validate;

pub use switchboard_backend::hooks::HookAgent;
