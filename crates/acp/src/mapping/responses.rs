//! Responses to our requests: initialize, session/new, prompt turns ending, failures.

use serde_json::Value;

use super::checkfu::telemetry_text;
use super::wire::s;
use super::{Mapper, Ours, Out, PROTOCOL_VERSION};
use crate::codec;
use crate::codec::{RpcError, schema};
use switchboard_core::msg::{BackendEvent, SessionPatch, TurnState};
use switchboard_core::text::{one_line, sanitize};
use switchboard_core::transcript::{ItemKind, Level};
use switchboard_core::tree::{NodePatch, ROOT_KEY};

impl Mapper {
    pub(super) fn response(&mut self, id: &Value, outcome: Result<Value, RpcError>, out: &mut Out) {
        let Some(ours) = self.ours.remove(&codec::id_key(id)) else {
            out.protocol(Level::Warn, format!("response to unknown request id {id}"));
            return;
        };
        let result = match outcome {
            Ok(r) => r,
            Err(e) => return self.failed(ours, e, out),
        };
        match ours {
            Ours::Initialize => self.initialized(&result, out),
            Ours::NewSession => self.session_created(&result, out),
            Ours::LoadSession(id) => self.session_loaded(&id, &result, out),
            Ours::Prompt => self.turn_ended(&result, out),
            Ours::SetMode(mode) => {
                out.ev(BackendEvent::Session(SessionPatch {
                    permission_mode: Some(mode.clone()),
                    ..SessionPatch::default()
                }));
                out.system("mode", format!("mode set to {mode}"));
            }
            Ours::SetConfig(id, value) => {
                // The answer holds every option as it is now (the agent may change others).
                match result.get("configOptions").and_then(Value::as_array) {
                    Some(opts) => self.config_options(opts),
                    None => {
                        if let Some(o) = self.caps.options.iter_mut().find(|o| o.id == id) {
                            o.current = sanitize(&value);
                        }
                    }
                }
                self.options_changed(out);
                let shown = self
                    .caps
                    .options
                    .iter()
                    .find(|o| o.id == id)
                    .map(|o| format!("{} → {}", o.name, o.current_label()))
                    .unwrap_or_else(|| format!("{} → {}", sanitize(&id), sanitize(&value)));
                out.system("option", shown);
            }
            Ours::SetModel(model) => {
                out.ev(BackendEvent::Session(SessionPatch {
                    model: Some(sanitize(&model)),
                    ..SessionPatch::default()
                }));
                out.system("model", format!("model set to {}", sanitize(&model)));
            }
            Ours::Steer { text } => {
                let d = s(&result, "disposition").unwrap_or_default();
                match d.as_str() {
                    "delivered" => out.system("steer", "delivered to the running turn"),
                    "queued" => out.system("steer", "queued by the agent for later in the turn"),
                    _ => self.steer_refused(text, &format!("disposition {d:?}"), out),
                }
            }
            Ours::Interrupt => {
                let d = s(&result, "disposition").unwrap_or_default();
                if d == "draining" {
                    self.draining = true;
                    out.system(
                        "interrupt",
                        "draining: the agent is winding the turn down (Ctrl-C again cancels)",
                    );
                    out.info("turn", Some("draining".into()));
                } else {
                    out.system(
                        "interrupt",
                        format!(
                            "{}: falling back to session/cancel",
                            if d.is_empty() { "no disposition" } else { &d }
                        ),
                    );
                    self.cancel(out);
                }
            }
        }
    }

    pub(super) fn failed(&mut self, ours: Ours, e: RpcError, out: &mut Out) {
        let what = e.describe();
        match ours {
            Ours::Initialize => out.protocol(Level::Error, format!("initialize failed: {what}")),
            Ours::NewSession => {
                out.protocol(Level::Error, format!("session/new failed: {what}"));
            }
            Ours::LoadSession(id) => self.load_failed(&id, &what, out),
            Ours::Prompt => {
                out.protocol(Level::Error, format!("session/prompt failed: {what}"));
                // The cost reported during the failed turn counts all the same.
                self.turn_usage(None, out);
                out.push(ItemKind::TurnResult {
                    ok: false,
                    subtype: "error".into(),
                    text: what,
                    cost_usd: self.cost(),
                    input_tokens: 0,
                    output_tokens: 0,
                    duration_ms: self.now.saturating_sub(self.turn_started_ms),
                });
                self.end_turn(out);
            }
            Ours::SetMode(mode) => out.protocol(
                Level::Error,
                format!("session/set_mode {mode} failed: {what}"),
            ),
            Ours::SetConfig(id, value) => out.protocol(
                Level::Error,
                format!(
                    "session/set_config_option {} = {} failed: {what}",
                    sanitize(&id),
                    sanitize(&value)
                ),
            ),
            Ours::SetModel(model) => out.protocol(
                Level::Error,
                format!("session/set_model {} failed: {what}", sanitize(&model)),
            ),
            Ours::Steer { text } => self.steer_refused(text, &what, out),
            Ours::Interrupt => {
                out.system(
                    "interrupt",
                    format!("failed ({what}): falling back to session/cancel"),
                );
                self.cancel(out);
            }
        }
    }

    pub(super) fn initialized(&mut self, result: &Value, out: &mut Out) {
        self.usage_unknown(out);
        if let Err(e) = codec::typed::<schema::InitializeResponse>(result) {
            out.protocol(
                Level::Warn,
                format!("initialize result outside the ACP types: {e}"),
            );
        }
        let version = result.get("protocolVersion").and_then(Value::as_u64);
        if version != Some(PROTOCOL_VERSION) {
            out.protocol(
                Level::Error,
                format!("the agent answered protocol version {version:?}; switchboard speaks {PROTOCOL_VERSION}"),
            );
        }
        let caps = result
            .get("_meta")
            .and_then(|m| m.get("checkfu.capabilities"))
            .or_else(|| {
                result
                    .get("agentCapabilities")
                    .and_then(|c| c.get("_meta"))
                    .and_then(|m| m.get("checkfu.capabilities"))
            })
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        self.checkfu = caps;
        let info = result.get("agentInfo").cloned().unwrap_or(Value::Null);
        let name = s(&info, "title").or_else(|| s(&info, "name"));
        let mut extra = vec![(
            "protocol".to_string(),
            version.map_or("?".into(), |v| v.to_string()),
        )];
        if let Some(n) = s(&info, "name") {
            extra.push(("agent".into(), sanitize(&n)));
        }
        let ac = result
            .get("agentCapabilities")
            .cloned()
            .unwrap_or(Value::Null);
        extra.push((
            "loadSession".into(),
            ac.get("loadSession")
                .and_then(Value::as_bool)
                .unwrap_or(false)
                .to_string(),
        ));
        if let Some(p) = ac.get("promptCapabilities") {
            extra.push(("prompt caps".into(), p.to_string()));
        }
        if let Some(a) = result
            .get("authMethods")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
        {
            let names: Vec<String> = a.iter().filter_map(|m| s(m, "name")).collect();
            extra.push(("auth methods".into(), sanitize(&names.join(", "))));
        }
        if self.checkfu.is_empty() {
            extra.push(("checkfu".into(), "not declared".into()));
        }
        for (k, v) in &self.checkfu {
            extra.push((
                format!("checkfu.{k}"),
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string()),
            ));
        }
        self.caps.extra = extra;
        out.ev(BackendEvent::Capabilities(self.caps.clone()));
        if let Some(n) = &name {
            out.ev(BackendEvent::NodeUpdate {
                key: ROOT_KEY.into(),
                patch: NodePatch {
                    name: Some(sanitize(n)),
                    ..NodePatch::default()
                },
            });
        }
        out.ev(BackendEvent::Session(SessionPatch {
            agent_version: s(&info, "version").map(|v| sanitize(&v)),
            ..SessionPatch::default()
        }));
        if !self.checkfu.is_empty() {
            let list: Vec<String> = self
                .checkfu
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("?")))
                .collect();
            out.system(
                "checkfu",
                format!("extension declared: {}", list.join(", ")),
            );
        }
        let can_load = ac.get("loadSession").and_then(Value::as_bool) == Some(true);
        self.start_session(can_load, out);
    }

    /// Ask for a new session.
    pub(super) fn new_session(&mut self, out: &mut Out) {
        let params = self.new_session_params(out);
        let line = self.request("session/new", params, Ours::NewSession);
        out.lines.push(line);
    }

    pub(super) fn session_created(&mut self, result: &Value, out: &mut Out) {
        if let Err(e) = codec::typed::<schema::NewSessionResponse>(result) {
            out.protocol(
                Level::Warn,
                format!("session/new result outside the ACP types: {e}"),
            );
        }
        let Some(sid) = s(result, "sessionId") else {
            out.protocol(Level::Error, "session/new result without a sessionId");
            return;
        };
        self.session_ready(sid, result, "started", out);
    }

    /// The session `sid` is ready (`verb`: started, loaded): what it offers, then queued
    /// prompts.
    pub(super) fn session_ready(&mut self, sid: String, result: &Value, verb: &str, out: &mut Out) {
        self.session_id = Some(sid.clone());
        let modes = result.get("modes").cloned().unwrap_or(Value::Null);
        self.caps.modes = modes
            .get("availableModes")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|m| s(m, "id"))
                    .map(|m| sanitize(&m))
                    .collect()
            })
            .unwrap_or_default();
        let models = result.get("models").cloned().unwrap_or(Value::Null);
        self.caps.models = models
            .get("availableModels")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|m| {
                        (
                            sanitize(&s(m, "modelId").unwrap_or_default()),
                            one_line(
                                &sanitize(
                                    &s(m, "name")
                                        .or_else(|| s(m, "description"))
                                        .unwrap_or_default(),
                                ),
                                120,
                            ),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if let Some(opts) = result.get("configOptions").and_then(Value::as_array) {
            self.config_options(opts);
        }
        out.ev(BackendEvent::Capabilities(self.caps.clone()));
        out.ev(BackendEvent::Session(SessionPatch {
            session_id: Some(sanitize(&sid)),
            cwd: Some(self.opts.cwd.display().to_string()),
            permission_mode: s(&modes, "currentModeId").map(|m| sanitize(&m)),
            model: s(&models, "currentModelId").map(|m| sanitize(&m)),
            interruptible: Some(true),
            ..SessionPatch::default()
        }));
        // Options name the mode and model of agents that declare them there (opencode,
        // codex-acp): the footer shows those.
        self.options_patch(out);
        let (mode_n, model_n) = self.mode_model_counts();
        let options = match self.caps.options.len() {
            0 => String::new(),
            n => format!(", {n} option(s) (O changes them)"),
        };
        out.system(
            "session",
            format!(
                "{verb} {}: {mode_n} mode(s), {model_n} model(s){options}",
                sanitize(&sid)
            ),
        );
        self.ready = true;
        out.ev(BackendEvent::Turn(TurnState::Idle));
        if let Some(next) = self.queued.pop_front() {
            self.send_prompt(next, out);
        }
    }

    /// Read the agent's session options (ACP `configOptions`, in `session/new` and
    /// `session/load` results, `config_option_update`, and `session/set_config_option`
    /// answers), replacing what was known. Malformed ones are skipped, each said once.
    pub(super) fn config_options(&mut self, opts: &[Value]) {
        self.caps.options = opts
            .iter()
            .take(MAX_OPTIONS)
            .filter_map(config_option)
            .collect();
    }

    /// The options changed: the core gets them, and the footer their mode and model.
    pub(super) fn options_changed(&mut self, out: &mut Out) {
        out.ev(BackendEvent::Capabilities(self.caps.clone()));
        self.options_patch(out);
    }

    /// The footer's mode and model from the options of those categories, when there are.
    pub(super) fn options_patch(&self, out: &mut Out) {
        let of = |cat: &str| {
            self.caps
                .option_of(cat)
                .map(|o| o.current_label().to_string())
        };
        let (mode, model) = (of("mode"), of("model"));
        if mode.is_some() || model.is_some() {
            out.ev(BackendEvent::Session(SessionPatch {
                permission_mode: mode,
                model,
                ..SessionPatch::default()
            }));
        }
    }

    /// How many modes and models the agent declared, by either route.
    fn mode_model_counts(&self) -> (usize, usize) {
        let count = |cat: &str| self.caps.option_of(cat).map(|o| o.choices.len());
        (
            count("mode").unwrap_or(self.caps.modes.len()),
            count("model").unwrap_or(self.caps.models.len()),
        )
    }

    pub(super) fn turn_ended(&mut self, result: &Value, out: &mut Out) {
        if let Err(e) = codec::typed::<schema::PromptResponse>(result) {
            out.protocol(
                Level::Warn,
                format!("session/prompt result outside the ACP types: {e}"),
            );
        }
        let stop = s(result, "stopReason").unwrap_or_else(|| "?".into());
        let telemetry = result
            .get("_meta")
            .and_then(|m| m.get("checkfu.turn"))
            .cloned();
        let wall = telemetry
            .as_ref()
            .and_then(|t| t.get("wall_time_ms"))
            .and_then(Value::as_u64);
        let duration = wall.unwrap_or_else(|| self.now.saturating_sub(self.turn_started_ms));
        let ok = matches!(stop.as_str(), "end_turn" | "cancelled");
        let text = match stop.as_str() {
            "end_turn" => String::new(),
            "cancelled" => "cancelled".to_string(),
            other => format!("stop reason {other}"),
        };
        let tokens = self.turn_usage(super::usage::TurnTokens::of(result), out);
        out.push(ItemKind::TurnResult {
            ok,
            subtype: sanitize(&stop),
            text,
            cost_usd: self.cost(),
            input_tokens: tokens.input,
            output_tokens: tokens.output,
            duration_ms: duration,
        });
        if let Some(t) = telemetry {
            out.system("turn telemetry", telemetry_text(&t));
        }
        self.end_turn(out);
    }

    pub(super) fn end_turn(&mut self, out: &mut Out) {
        // Repeats are caught within a turn; the next turn's rows have other keys.
        self.streamed.clear();
        self.turn = false;
        self.draining = false;
        out.info("turn", None);
        out.ev(BackendEvent::Turn(TurnState::Idle));
        if let Some(next) = self.queued.pop_front() {
            out.system("queue", "sending the queued prompt");
            self.send_prompt(next, out);
        }
    }

    pub(super) fn steer_refused(&mut self, text: String, why: &str, out: &mut Out) {
        out.system(
            "steer",
            format!("refused ({why}): the text is queued as the next prompt"),
        );
        if self.turn {
            self.queued.push_back(text);
        } else {
            self.send_prompt(text, out);
        }
    }

    // ---- session/update -------------------------------------------------------------------
}

/// Options one agent may declare, at most (a hostile agent must not grow memory).
const MAX_OPTIONS: usize = 64;
/// Choices of one option, at most.
const MAX_CHOICES: usize = 500;

/// One ACP `SessionConfigOption`: `{id, name, description?, category?, type: "select",
/// currentValue, options: [{value, name, description?}] | [{group, name, options: [...]}]}`
/// or `{…, type: "boolean", currentValue: bool}`. `None` when it is neither.
fn config_option(o: &Value) -> Option<switchboard_core::msg::ConfigOption> {
    let clean = |t: &str, n: usize| one_line(&sanitize(t), n);
    let id = s(o, "id")?;
    let name = s(o, "name").unwrap_or_else(|| id.clone());
    let mut opt = switchboard_core::msg::ConfigOption {
        id: clean(&id, 128),
        name: clean(&name, 80),
        category: s(o, "category").map(|c| clean(&c, 40)),
        description: s(o, "description").map(|d| clean(&d, 200)),
        ..Default::default()
    };
    match o.get("type").and_then(Value::as_str) {
        Some("boolean") => {
            let on = o.get("currentValue").and_then(Value::as_bool)?;
            opt.boolean = true;
            opt.current = on.to_string();
            opt.choices = vec![("true".into(), "on".into()), ("false".into(), "off".into())];
        }
        // `select` (and a missing type, which the schema reads as a select).
        Some("select") | None => {
            opt.current = clean(&s(o, "currentValue")?, 128);
            let mut choices = Vec::new();
            for c in o
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if choices.len() >= MAX_CHOICES {
                    break;
                }
                // A group holds its own options under a header: flattened, labelled with it.
                let (group, items) = match c.get("options").and_then(Value::as_array) {
                    Some(items) => (s(c, "name"), items.as_slice()),
                    None => (None, std::slice::from_ref(c)),
                };
                for item in items {
                    let Some(v) = s(item, "value") else { continue };
                    let label = s(item, "name").unwrap_or_else(|| v.clone());
                    let label = match &group {
                        Some(g) => format!("{g} · {label}"),
                        None => label,
                    };
                    choices.push((clean(&v, 128), clean(&label, 80)));
                    if choices.len() >= MAX_CHOICES {
                        break;
                    }
                }
            }
            opt.choices = choices;
        }
        Some(_) => return None,
    }
    Some(opt)
}
