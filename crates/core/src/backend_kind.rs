//! Which protocol a session speaks. The one enum every layer names backends by: a backend name
//! is a string only on the wire (a recording's header, a profile's `backend =` key, a manifest),
//! and `from_name` is where such a string becomes a kind. The product's registry
//! (`src/registry.rs`) maps a kind to its mapping, replay adapter, validation check and reply
//! check.

/// A backend, by protocol.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BackendKind {
    /// The Claude Code stream-json control protocol (the `claude` CLI, and the demo agent).
    #[default]
    Claude,
    /// ACP v1 and the Checkfu extension.
    Acp,
    /// The iii harness over an iii engine's WebSocket.
    Iii,
    /// The ai-gateway channel (we are the workspace owner).
    Gateway,
    /// A Claude Code or Codex session started in its own terminal, adopted through the CLI's
    /// hooks (`switchboard hook`): its events, its transcript file and its permission prompts.
    Adopted,
}

impl BackendKind {
    pub const ALL: [BackendKind; 5] = [
        BackendKind::Claude,
        BackendKind::Acp,
        BackendKind::Iii,
        BackendKind::Gateway,
        BackendKind::Adopted,
    ];

    /// The name a recording's header gives (`"backend":"acp"`), and the one messages show.
    pub const fn name(self) -> &'static str {
        match self {
            BackendKind::Claude => "claude",
            BackendKind::Acp => "acp",
            BackendKind::Iii => "iii",
            BackendKind::Gateway => "gateway",
            BackendKind::Adopted => "adopted",
        }
    }

    /// The kind a header or a document names; `None` for a backend this build does not know.
    pub fn from_name(name: &str) -> Option<BackendKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The root node's name in the session tree, live and in replay.
    pub const fn root_name(self) -> &'static str {
        match self {
            BackendKind::Claude => "main",
            BackendKind::Acp => "agent",
            BackendKind::Iii => "iii engine",
            BackendKind::Gateway => "gateway",
            BackendKind::Adopted => "session",
        }
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::BackendKind;

    #[test]
    fn every_kind_reads_back_from_its_name_and_nothing_else_does() {
        for k in BackendKind::ALL {
            assert_eq!(BackendKind::from_name(k.name()), Some(k));
            assert_eq!(k.to_string(), k.name());
        }
        for other in ["", "demo", "Claude", "acp ", "ii"] {
            assert_eq!(BackendKind::from_name(other), None, "{other:?}");
        }
    }
}
