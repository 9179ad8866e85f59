//! Applying approval rules to new gates, and the keys that create rules.

use super::super::gate::{Decision, Gate, GateKind, Permission};
use super::super::rules::{Action, Origin, Subject};
use super::super::state::State;

/// What a rule matches for a permission: the tool name and the whole argument (the whole
/// shell line with the variables it sets, the normalised file path, or the compact input;
/// never the shortened summary), marked as a shell line where the mapper said so.
pub fn subject(p: &Permission) -> Subject<'_> {
    Subject {
        tool: &p.tool,
        arg: &p.rule_arg,
        shell: p.shell,
        dangerous_env: !p.dangerous_env().is_empty(),
    }
}

/// An ask rule is the strongest rule matching this permission: the person sees it.
pub fn asks(state: &State, p: &Permission) -> bool {
    state
        .rules
        .evaluate_in(&subject(p), Some(state.sid()))
        .is_some_and(|i| state.rules.list[i].spec.action == Action::Ask)
}

/// A rule's answer for a new gate: `Some((decision, rule description))` when an allow or
/// deny rule matches. Only permissions are ruled: questions, dialogs, forms and breakpoints
/// always wait for the human (a breakpoint stops even where rules would allow).
pub fn decide(state: &mut State, gate: &Gate) -> Option<(Decision, String)> {
    let GateKind::Permission(p) = &gate.kind else {
        return None;
    };
    let sid = state.sid();
    let i = state.rules.evaluate_in(&subject(p), Some(sid))?;
    let rule = &mut state.rules.list[i];
    rule.hits += 1;
    match rule.hits_by.iter_mut().find(|(s, _)| *s == sid) {
        Some((_, n)) => *n += 1,
        None => rule.hits_by.push((sid, 1)),
    }
    let desc = format!("({}: {})", rule.origin.label(), rule.describe());
    let action = rule.spec.action;
    let decision = match action {
        Action::Ask => return None,
        Action::Allow => match p
            .options
            .iter()
            .find(|o| o.kind == "allow_once")
            .or(p.options.iter().find(|o| o.allows()))
        {
            Some(o) => Decision::Option {
                option_id: o.option_id.clone(),
                name: o.label(),
                allow: true,
            },
            None if p.options.is_empty() => Decision::Allow {
                updated_input: None,
                always: false,
            },
            // The agent offers no allowing answer: let the human decide.
            None => return None,
        },
        Action::Deny => deny_decision(p, &format!("Denied by a switchboard rule {desc}."))?,
    };
    Some((decision, desc))
}

/// The deny answer for a permission: a plain deny carrying `message` (where the backend's
/// deny takes a reason, its default when `message` is empty), or the agent's reject-once
/// option (else any rejecting one); `None` when the agent offers no way to refuse.
/// Rules and the inbox's batch deny both answer this way.
pub fn deny_decision(p: &Permission, message: &str) -> Option<Decision> {
    // A backend whose deny carries a reason (iii) gets the message, not its bare option.
    if let Some(default) = &p.deny_reason {
        let message = match message.trim() {
            "" => default.clone(),
            m => m.to_string(),
        };
        return Some(Decision::Deny {
            message,
            interrupt: false,
        });
    }
    if p.options.is_empty() {
        return Some(Decision::Deny {
            message: message.to_string(),
            interrupt: false,
        });
    }
    p.options
        .iter()
        .find(|o| o.kind == "reject_once")
        .or(p.options.iter().find(|o| !o.allows()))
        .map(|o| Decision::Option {
            option_id: o.option_id.clone(),
            name: o.label(),
            allow: false,
        })
}

/// `a`: remember "allow this exact request" for the rest of the session (and tell the
/// workspace manifest).
pub fn add_session_rule(state: &mut State, p: &Permission) -> super::super::msg::Effect {
    let s = subject(p);
    // Exactly this request: the argument is a literal, never a glob.
    let spec = super::super::rules::RuleSpec {
        action: Action::Allow,
        tool: s.tool.to_string(),
        pattern: Some(s.arg.to_string()),
        exact: true,
    };
    let sid = state.sid();
    state
        .rules
        .add_scoped(spec.clone(), Origin::Session, Some(sid));
    super::super::msg::Effect::SessionRule {
        session: sid,
        spec,
        kept: true,
    }
}

/// `A` then Enter: keep the rule for good (an effect writes it to the rules file), and answer
/// the gate by it when it matches.
pub fn save_rule(
    state: &mut State,
    spec: super::super::rules::RuleSpec,
    gate: &Gate,
) -> Vec<super::super::msg::Effect> {
    let mut fx = Vec::new();
    let Some(path) = state.rules_file.clone() else {
        state.status_line =
            Some("no rules file is configured; the rule is kept for this session".into());
        let sid = state.sid();
        state
            .rules
            .add_scoped(spec.clone(), Origin::Session, Some(sid));
        fx.push(super::super::msg::Effect::SessionRule {
            session: sid,
            spec,
            kept: true,
        });
        return fx;
    };
    state.rules.add(spec.clone(), Origin::File(path.clone()));
    state.status_line = Some(format!(
        "rule saved to {path}: {}",
        super::super::rules::spec_line(&spec)
    ));
    if let GateKind::Permission(p) = &gate.kind
        && spec.action == Action::Allow
        && let Some(name) = p.dangerous_env().first()
    {
        state.status_line = Some(format!(
            "rule saved to {path}: {}; it cannot answer this request, which sets {}",
            super::super::rules::spec_line(&spec),
            super::super::text::neutralize(name)
        ));
    }
    fx.push(super::super::msg::Effect::SaveRule { path, spec });
    if let Some((decision, desc)) = decide(state, gate) {
        fx.extend(super::decide::answer_by_rule(
            state, &gate.id, decision, &desc,
        ));
    }
    fx
}
