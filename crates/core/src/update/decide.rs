//! Turning a decision into an answer: remove the gate, write the audit row, send it.

use super::super::gate::{Decision, Gate, GateKind};
use super::super::msg::{Command, Effect};
use super::super::state::State;
use super::super::text::{one_line, truncate, visible_line};
use super::super::transcript::{ItemKind, Tone};
use super::closing::{after_gate_closed, remember_closed};

/// Answer the pending gate `id` with `decision`. Removing the gate first makes a second
/// answer impossible: an unknown or already closed id yields no effect.
pub fn answer(state: &mut State, id: &str, decision: Decision) -> Vec<Effect> {
    answer_noted(state, id, decision, None)
}

/// Leave gate `id` to the agent's own terminal (an adopted session): nothing is answered
/// from here, its own prompt decides.
pub(super) fn hand_back(state: &mut State, id: &str) -> Vec<Effect> {
    answer(
        state,
        id,
        Decision::OwnTerminal {
            why: "handed to its own terminal".into(),
        },
    )
}

/// Allow `id` without a card: an earlier approval covers it (`why` names it).
pub fn answer_covered(state: &mut State, id: &str, why: &str) -> Vec<Effect> {
    let allow = Decision::Allow {
        updated_input: None,
        always: false,
    };
    answer_as(state, id, allow, By::Approval(why))
}

/// Answer `id` as one of a batch of `n` decided together in the inbox.
pub fn answer_batch(state: &mut State, id: &str, decision: Decision, n: usize) -> Vec<Effect> {
    answer_as(state, id, decision, By::Batch(n))
}

/// Who decided, for the audit row and the recording.
enum By<'a> {
    Human,
    Batch(usize),
    Rule(&'a str),
    Approval(&'a str),
}

fn answer_noted(
    state: &mut State,
    id: &str,
    decision: Decision,
    rule: Option<&str>,
) -> Vec<Effect> {
    answer_as(state, id, decision, rule.map_or(By::Human, By::Rule))
}

/// Why no decision can be sent for this session's gates now (its backend is offline and
/// reconnecting), or `None`. Every answer goes through `answer_as`, which refuses then: card
/// keys, the inbox, rules.
pub fn decisions_blocked(state: &State) -> Option<String> {
    state
        .session
        .offline
        .as_deref()
        .map(|why| format!("offline: {why}; decisions are disabled"))
}

fn answer_as(state: &mut State, id: &str, decision: Decision, by: By) -> Vec<Effect> {
    if let Some(why) = decisions_blocked(state) {
        // Nothing is sent and the gate stays: it is answered once the connection is back.
        // The card says why too (a long footer can clip the status line).
        if let Some(ui) = state.gate_ui.get_mut(id) {
            ui.error = Some(why.clone());
            // A rule (or an earlier approval) that matched now, e.g. one saved from this very
            // card, answers it once the connection is back, if it is still held then.
            if matches!(by, By::Rule(_) | By::Approval(_)) {
                ui.rules_later = true;
            }
        }
        state.status_line = Some(why);
        return Vec::new();
    }
    let Some(pos) = state.gates.iter().position(|g| g.id == id) else {
        state.status_line = Some(format!("request {id} is no longer pending"));
        return Vec::new();
    };
    let gate = state.remove_gate(pos).expect("position is in range");
    let (mut text, tone) = audit_text(&gate, &decision);
    let mut fx = Vec::new();
    match by {
        By::Human => {}
        By::Batch(n) => {
            if let Some((head, rest)) = text.split_once(": ") {
                text = format!("{head} (inbox batch of {n}): {rest}");
            }
            fx.push(Effect::Send(
                state.sid(),
                Command::Note(format!("batch: {text}")),
            ));
        }
        By::Rule(rule) => {
            if let Some((head, rest)) = text.split_once(": ") {
                // The rule is the reason: the message it sent the agent would only repeat it.
                let subject = rest.split(" — ").next().unwrap_or(rest);
                text = format!("{head} by rule {rule}: {subject}");
            }
            // The recording keeps which rule decided, beside the wire reply.
            fx.push(Effect::Send(
                state.sid(),
                Command::Note(format!("rule: {text}")),
            ));
        }
        By::Approval(why) => {
            text = format!(
                "allowed without a second card: {}, covered by {why}",
                gate_subject(&gate)
            );
            fx.push(Effect::Send(
                state.sid(),
                Command::Note(format!("covered: {text}")),
            ));
        }
    }
    let node = state.tree.resolve(Some(&gate.node_key));
    let at = state.now_ms;
    state.tree.nodes[node]
        .transcript
        .push(ItemKind::Audit { text, tone }, at);
    remember_closed(state, gate.id.clone());
    after_gate_closed(state, &gate.id);
    state.answered += 1;
    fx.push(Effect::Send(
        state.sid(),
        Command::Answer {
            gate_id: gate.id,
            decision,
        },
    ));
    fx
}

/// Answer `id` because a rule said so; the audit row names the rule and its origin.
pub fn answer_by_rule(state: &mut State, id: &str, decision: Decision, rule: &str) -> Vec<Effect> {
    answer_noted(state, id, decision, Some(rule))
}

/// What a gate is about, in a few words: "Bash `touch x`".
pub fn gate_subject(gate: &Gate) -> String {
    match &gate.kind {
        GateKind::Permission(p) => subject(&p.tool, &p.summary),
        GateKind::Breakpoint(b) => subject(&b.tool, &b.summary),
        GateKind::Question(q) => match q.questions.first() {
            Some(first) if q.questions.len() > 1 => {
                format!(
                    "{} (+{} more)",
                    one_line(&first.question, 60),
                    q.questions.len() - 1
                )
            }
            Some(first) => one_line(&first.question, 80),
            None => "an empty question".into(),
        },
        GateKind::Dialog(d) => format!("{} dialog", d.dialog_kind),
        GateKind::Elicitation(e) => format!("{}: {}", e.server, one_line(&e.message, 60)),
    }
}

/// "Bash `touch x`": the audit row's subject, on one line. The summary is shown whole up to
/// the cut, a newline in it as `^J` (a path `evil\n\nnotes.txt` is not `evil`, nor drawn on
/// two rows).
fn subject(tool: &str, summary: &str) -> String {
    let tool = visible_line(tool);
    if summary.trim().is_empty() {
        tool.into_owned()
    } else {
        format!("{tool} `{}`", truncate(&visible_line(summary.trim()), 80))
    }
}

/// One line of what an edited input runs: its command, else the file it names, else the
/// tool's own summary of it.
fn edited_summary(p: &super::super::gate::Permission, edit: &serde_json::Value) -> String {
    let field = |k: &str| edit.get(k).and_then(serde_json::Value::as_str);
    if let Some(c) = field("command") {
        return super::super::gate::command_summary(c);
    }
    match field("file_path")
        .or_else(|| field("notebook_path"))
        .or_else(|| field("path"))
    {
        Some(path) => path.to_string(),
        None => super::super::text::tool_input_summary(&p.tool, edit),
    }
}

/// The top-level fields an edit changed, added or removed against the input as asked
/// (JSON), in the edit's order then the removed ones; at most four named, made
/// visible and cut. `input` when either side is no object.
fn changed_fields(asked: &str, edit: &serde_json::Value) -> Vec<String> {
    let asked = serde_json::from_str::<serde_json::Value>(asked).ok();
    let (Some(serde_json::Value::Object(a)), serde_json::Value::Object(e)) = (&asked, edit) else {
        return if asked.as_ref() == Some(edit) {
            Vec::new()
        } else {
            vec!["input".to_string()]
        };
    };
    let changed: Vec<&str> = e
        .iter()
        .filter(|(k, v)| a.get(*k) != Some(*v))
        .map(|(k, _)| k.as_str())
        .chain(a.keys().filter(|k| !e.contains_key(*k)).map(String::as_str))
        .collect();
    let mut names: Vec<String> = changed
        .iter()
        .take(4)
        .map(|k| truncate(&visible_line(k), 40))
        .collect();
    if changed.len() > 4 {
        names.push(format!("{} more", changed.len() - 4));
    }
    names
}

/// The audit row for a decision: "allowed once: Bash `touch x`".
pub fn audit_text(gate: &Gate, decision: &Decision) -> (String, Tone) {
    let what = gate_subject(gate);
    let with_msg = |head: &str, msg: &str| {
        if msg.trim().is_empty() {
            format!("{head}: {what}")
        } else {
            format!("{head}: {what} — {}", one_line(msg, 120))
        }
    };
    match decision {
        // What ran is the edit: the row names it, and beside it what the agent asked.
        Decision::Allow {
            updated_input: Some(edit),
            always: false,
        } => match &gate.kind {
            GateKind::Permission(p) => {
                let ran = edited_summary(p, edit);
                // The command as asked, where it is one (a summary may add where it runs).
                let asked = p
                    .command
                    .as_deref()
                    .map(super::super::gate::command_summary)
                    .unwrap_or_else(|| p.summary.trim().to_string());
                let asked = truncate(&visible_line(&asked), 80);
                let mut text = format!(
                    "allowed with an edit: {} (asked: `{asked}`",
                    subject(&p.tool, &ran)
                );
                // Both read the same when the edit changed what the summary does not show
                // (a file's content, an option): the row names what it changed.
                if truncate(&visible_line(ran.trim()), 80) == asked {
                    text.push_str(&match changed_fields(&p.input, edit).as_slice() {
                        [] => "; the edit changed nothing".to_string(),
                        names => format!("; the edit changed {}", names.join(", ")),
                    });
                }
                text.push(')');
                (text, Tone::Allowed)
            }
            _ => (format!("allowed with an edit: {what}"), Tone::Allowed),
        },
        Decision::Allow { always, .. } => {
            let head = if *always {
                "allowed always (session rule)"
            } else {
                "allowed once"
            };
            (format!("{head}: {what}"), Tone::Allowed)
        }
        Decision::Deny { message, interrupt } => {
            let head = match (&gate.kind, interrupt) {
                (GateKind::Question(_), _) => "declined to answer",
                (_, true) => "denied and interrupted",
                (_, false) => "denied",
            };
            (with_msg(head, message), Tone::Denied)
        }
        Decision::Answer { answers } => {
            let list: Vec<String> = answers
                .iter()
                .map(|(q, a)| format!("{} = {a}", truncate(q, 50)))
                .collect();
            (format!("answered: {}", list.join("; ")), Tone::Allowed)
        }
        Decision::DialogComplete { result } => (
            format!(
                "dialog completed: {what} → {}",
                truncate(&result.to_string(), 80)
            ),
            Tone::Allowed,
        ),
        Decision::DialogCancel => (format!("dialog cancelled: {what}"), Tone::Denied),
        Decision::ElicitAccept { content } => (
            format!("accepted: {what} {}", truncate(&content.to_string(), 100)),
            Tone::Allowed,
        ),
        Decision::ElicitDecline => (format!("declined: {what}"), Tone::Denied),
        Decision::ElicitCancel => (format!("cancelled: {what}"), Tone::Denied),
        Decision::Continue => (format!("continued at breakpoint: {what}"), Tone::Allowed),
        Decision::Block { reason } => (with_msg("blocked at breakpoint", reason), Tone::Denied),
        Decision::Option { name, allow, .. } => (
            format!("{}: {what}", one_line(name, 40)),
            if *allow { Tone::Allowed } else { Tone::Denied },
        ),
        Decision::Cancelled => (format!("cancelled: {what}"), Tone::Neutral),
        Decision::OwnTerminal { why } => (format!("{}: {what}", one_line(why, 80)), Tone::Neutral),
        Decision::Raw { body } => (
            format!(
                "raw reply sent: {what} {}",
                truncate(&body.to_string(), 100)
            ),
            Tone::Neutral,
        ),
    }
}
