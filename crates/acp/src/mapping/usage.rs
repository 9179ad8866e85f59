//! Tokens, context and cost, from the fields the agent reports and from nothing else.
//!
//! ACP carries usage in two places: the `session/prompt` result's `usage` (this turn's tokens;
//! not every agent sends it: gemini-cli does not) and `usage_update` notifications (the context
//! gauge and the session's cumulative `cost`). The footer shows one figure per quantity: tokens
//! summed over turns, and the latest cumulative cost, counted into the session once (the core
//! adds cost deltas). Until the agent reports any usage, none is shown: zeros would be a claim.

use serde_json::Value;

use super::{Mapper, Out};
use switchboard_core::msg::{Abilities, BackendEvent};

/// One turn's tokens as the agent reported them, `None` when it reported none.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct TurnTokens {
    pub input: u64,
    pub output: u64,
}

impl TurnTokens {
    /// The prompt result's `usage`: input counts cached reads and writes too (they are input
    /// the model read), output is the generated tokens.
    pub(super) fn of(result: &Value) -> Option<TurnTokens> {
        let usage = result.get("usage").filter(|u| u.is_object())?;
        let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        Some(TurnTokens {
            input: n("inputTokens") + n("cachedReadTokens") + n("cachedWriteTokens"),
            output: n("outputTokens"),
        })
    }
}

impl Mapper {
    /// The agent reported usage: from now on the footer shows it.
    fn usage_seen(&mut self, out: &mut Out) {
        if !self.usage.seen {
            self.usage.seen = true;
            out.ev(BackendEvent::Abilities(Abilities::default()));
        }
    }

    /// Before any report: an agent that never reports usage never shows a zero.
    pub(super) fn usage_unknown(&self, out: &mut Out) {
        if !self.usage.seen {
            out.ev(BackendEvent::Abilities(Abilities {
                usage: false,
                ..Abilities::default()
            }));
        }
    }

    /// `usage_update`: the context gauge now, the cumulative cost counted at the turn's end.
    pub(super) fn usage(
        &mut self,
        used: Option<u64>,
        size: Option<u64>,
        cost: Option<f64>,
        out: &mut Out,
    ) {
        let h = switchboard_core::text::human_count;
        let ctx = match (used, size) {
            (Some(u), Some(s)) => Some(format!("ctx {}/{}", h(u), h(s))),
            (None, Some(s)) => Some(format!("ctx ?/{}", h(s))),
            (Some(u), None) => Some(format!("ctx {}", h(u))),
            (None, None) => None,
        };
        if ctx.is_some() {
            out.info("context", ctx);
        }
        if let Some(c) = cost.filter(|c| c.is_finite() && *c >= 0.0) {
            self.usage.cost = Some(c);
            self.usage_seen(out);
        }
    }

    /// The end of a turn: its tokens, and the cost reported since the last count. Returns what
    /// the turn's end line shows (tokens as reported, zero when not, and the session's cost).
    pub(super) fn turn_usage(&mut self, tokens: Option<TurnTokens>, out: &mut Out) -> TurnTokens {
        if tokens.is_some() {
            self.usage_seen(out);
        }
        let t = tokens.unwrap_or_default();
        let cost = self.usage.cost.unwrap_or(0.0);
        let delta = cost - self.usage.counted;
        self.usage.counted = cost;
        out.ev(BackendEvent::Usage {
            input_tokens: t.input,
            output_tokens: t.output,
            cost_usd: delta,
        });
        t
    }

    /// The session's cost as last reported (`None`: never).
    pub(super) fn cost(&self) -> Option<f64> {
        self.usage.cost
    }
}

/// What the mapper remembers of usage.
#[derive(Clone, Debug, Default)]
pub(super) struct UsageState {
    /// The agent reported tokens or a cost at least once.
    seen: bool,
    /// The latest cumulative cost it reported.
    cost: Option<f64>,
    /// The part of it already counted into the session (the core sums deltas).
    counted: f64,
}
