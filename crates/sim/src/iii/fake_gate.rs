//! Which approval gate the fake engine plays (issue 23 item 6): either naming generation of
//! iii-hq/workers' approval-gate, none, one we do not speak, or one whose `approval::gate` is
//! bound on a hook no worker provides. Like the real engine, a binding of a trigger type no
//! worker provides is parked: not listed by `engine::registered-triggers::list`, never fired.

use serde_json::{Value, json};

use switchboard_iii::mapping::Generation;

/// The gate the fake engine's world has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FakeGate {
    /// kebab-case ids, gate on `harness::hook::pre-trigger` (the newest).
    #[default]
    Kebab,
    /// snake_case ids, gate on `harness::hook::pre_dispatch` (the older generation).
    Snake,
    /// No approval-gate worker.
    Absent,
    /// The durable-subscriber gate (`approval::consume`, `approval::lookup_record`): no events.
    Foreign,
    /// kebab-case ids, but `approval::gate` bound on `harness::hook::pre-dispatch`, which this
    /// harness does not provide: the binding is parked and nothing is ever held.
    Unbound,
}

/// The hooks the fake harness provides (fires).
pub const HARNESS_HOOKS: [&str; 3] = [
    "harness::hook::pre-trigger",
    "harness::hook::post-trigger",
    "harness::hook::pre_dispatch",
];

impl FakeGate {
    /// The generation whose ids the gate answers to.
    pub fn generation(self) -> Option<Generation> {
        match self {
            FakeGate::Kebab | FakeGate::Unbound => Some(Generation::Kebab),
            FakeGate::Snake => Some(Generation::Snake),
            FakeGate::Absent | FakeGate::Foreign => None,
        }
    }

    /// The hook `approval::gate` is bound on.
    pub fn hook(self) -> Option<&'static str> {
        match self {
            FakeGate::Kebab => Some("harness::hook::pre-trigger"),
            FakeGate::Snake => Some("harness::hook::pre_dispatch"),
            FakeGate::Unbound => Some("harness::hook::pre-dispatch"),
            FakeGate::Absent | FakeGate::Foreign => None,
        }
    }

    /// Whether some worker of the fake engine provides `trigger_type`.
    pub fn provides(self, trigger_type: &str) -> bool {
        if let Some(rest) = trigger_type.strip_prefix("approval::") {
            let g = self.generation();
            return g.is_some_and(|g| g.created() == trigger_type || g.resolved() == trigger_type)
                && !rest.is_empty();
        }
        if trigger_type.starts_with("harness::hook::") {
            return HARNESS_HOOKS.contains(&trigger_type);
        }
        true
    }

    /// The gate's function ids (with `approval::resolve`, shared by both generations).
    pub fn functions(self) -> Vec<&'static str> {
        match self {
            FakeGate::Kebab | FakeGate::Unbound => vec![
                "approval::gate",
                "approval::list-pending",
                "approval::resolve",
                "approval::approve-always",
                "approval::get-settings",
            ],
            FakeGate::Snake => vec![
                "approval::gate",
                "approval::list_pending",
                "approval::resolve",
                "approval::approve_always",
                "approval::get_settings",
            ],
            FakeGate::Foreign => vec![
                "approval::resolve",
                "approval::list_pending",
                "approval::consume",
                "approval::lookup_record",
            ],
            FakeGate::Absent => vec![],
        }
    }

    /// What a call of `function_id` is, for this gate: the generic name the world handles
    /// (`approval::list-pending`, `approval::approve-always`, `approval::resolve`), or `None`
    /// when the gate has no such function.
    pub fn route(self, function_id: &str) -> Option<&'static str> {
        let g = self.generation()?;
        if function_id == g.list_pending() {
            Some("approval::list-pending")
        } else if function_id == g.approve_always() {
            Some("approval::approve-always")
        } else if function_id == "approval::resolve" {
            Some("approval::resolve")
        } else {
            None
        }
    }

    /// An event's name in this gate's generation (`approval::pending-created` given).
    pub fn event(self, kebab: &str) -> String {
        match (self.generation(), kebab) {
            (Some(g), "approval::pending-created") => g.created().into(),
            (Some(g), "approval::pending-resolved") => g.resolved().into(),
            _ => kebab.into(),
        }
    }

    /// The engine's `engine::workers::list` for this world.
    pub fn workers(self) -> Value {
        let mut w = vec![
            json!({"name": "harness", "version": "1.8.25", "status": "available"}),
            json!({"name": "session-manager", "version": "0.9.0", "status": "available"}),
        ];
        if self != FakeGate::Absent {
            w.push(json!({"name": "approval-gate", "version": "1.0.3", "status": "available"}));
        }
        json!({"workers": w})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_generation_provides_its_own_event_names_only() {
        assert!(FakeGate::Kebab.provides("approval::pending-created"));
        assert!(!FakeGate::Kebab.provides("approval::pending_created"));
        assert!(FakeGate::Snake.provides("approval::pending_created"));
        assert!(!FakeGate::Snake.provides("approval::pending-created"));
        assert!(!FakeGate::Absent.provides("approval::pending-created"));
        assert!(!FakeGate::Foreign.provides("approval::pending_created"));
        assert!(!FakeGate::Kebab.provides("harness::hook::pre-dispatch"));
        assert!(FakeGate::Kebab.provides("session::created"));
        assert_eq!(
            FakeGate::Snake.route("approval::list_pending"),
            Some("approval::list-pending")
        );
        assert_eq!(FakeGate::Snake.route("approval::list-pending"), None);
        assert_eq!(FakeGate::Absent.route("approval::resolve"), None);
    }
}
