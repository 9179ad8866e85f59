//! A session's id: what messages, rules and state all name a session by (its own module, so
//! none of them depends on another for it).

/// Which session of the workspace: stable for the life of the process, never reused, so an
/// event or a decision can never reach another session than the one it names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub u32);

impl SessionId {
    /// The session of a one-session workspace (`switchboard claude`, `acp`, `demo`, replay).
    pub const FIRST: SessionId = SessionId(0);
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}
