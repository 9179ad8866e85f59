//! Frames from the engine on the task: one socket read decoded, results handed to their
//! waiters, pushed events queued to the consumer and acknowledged, refusals and warnings.

use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use super::codec::{self, ErrorBody, Message, WORKER_NAMESPACE_CONFLICT};
use super::transport::Ws;
use super::{Binding, CallError, ClientEvent, Ended, PushedEvent, Task};
use switchboard_backend::process::record;
use switchboard_record::Dir;

impl Task {
    /// One socket read: the frame, `None` for one to skip, or why the socket is done.
    pub(super) fn read(
        &mut self,
        f: Option<Result<WsMessage, tokio_tungstenite::tungstenite::Error>>,
    ) -> Result<Option<Message>, String> {
        match f {
            None => Err("the engine closed the connection".into()),
            Some(Err(e)) => Err(format!("engine socket error: {e}")),
            Some(Ok(WsMessage::Close(_))) => Err("the engine closed the connection".into()),
            Some(Ok(WsMessage::Text(t))) => {
                record(&self.rec, Dir::In, t.as_str());
                match codec::decode(t.as_str()) {
                    Ok(m) => Ok(Some(m)),
                    Err(e) => {
                        self.tell(ClientEvent::Warning(e.to_string()));
                        Ok(None)
                    }
                }
            }
            Some(Ok(WsMessage::Binary(b))) => {
                record(
                    &self.rec,
                    Dir::Note,
                    &format!("binary frame of {} bytes ignored", b.len()),
                );
                self.tell(ClientEvent::Warning("binary frame ignored".into()));
                Ok(None)
            }
            Some(Ok(_)) => Ok(None),
        }
    }

    /// The engine refused this connection (`error` frame, then it closes the socket): say why,
    /// and try again after the backoff (an auth function may come back, credentials may be
    /// fixed by whoever runs the engine).
    pub(super) fn refused(&mut self, error: ErrorBody) -> Ended {
        let why = format!("the engine refused the connection: {error}");
        self.tell(ClientEvent::Warning(why.clone()));
        Ended::Lost(why)
    }

    pub(super) fn unexpected(&mut self, m: &Message) {
        self.tell(ClientEvent::Warning(format!(
            "unexpected {} frame from the engine",
            m.kind()
        )));
    }

    /// Frames common to the handshake and the steady state.
    pub(super) async fn on_frame(
        &mut self,
        ws: &mut Ws,
        m: Message,
        bindings: &[Binding],
        register_id: &str,
    ) -> Option<Ended> {
        match m {
            Message::Ping => {
                if let Err(e) = self.send(ws, &Message::Pong).await {
                    return Some(Ended::Lost(e));
                }
            }
            Message::Pong => {}
            Message::InvocationResult {
                invocation_id,
                result,
                error,
                function_id,
                ..
            } => {
                if invocation_id == register_id {
                    if let Some(e) = error {
                        self.tell(ClientEvent::Warning(format!(
                            "engine::workers::register failed: {e}"
                        )));
                    }
                } else if let Some(p) = self.pending.remove(&invocation_id) {
                    let r = match (error, result) {
                        (Some(e), _) => Err(CallError::Remote(e)),
                        (None, r) => Ok(r.unwrap_or(Value::Null)),
                    };
                    let _ = p.reply.send(r);
                } else {
                    self.tell(ClientEvent::Warning(format!(
                        "late or unknown result for {function_id} ({invocation_id}) dropped"
                    )));
                }
            }
            Message::InvokeFunction {
                invocation_id,
                function_id,
                data,
                ..
            } => {
                let trigger = bindings
                    .iter()
                    .find(|b| b.handler == function_id)
                    .map(|b| b.trigger_type.clone());
                let outcome = match trigger {
                    Some(trigger_type) => self.push_event(PushedEvent { trigger_type, data }),
                    None => Err(ErrorBody::new(
                        "function_not_found",
                        format!("switchboard has no handler {function_id}"),
                    )),
                };
                if let Some(id) = invocation_id {
                    let reply = Message::result(&id, &function_id, outcome);
                    if let Err(e) = self.send(ws, &reply).await {
                        return Some(Ended::Lost(e));
                    }
                }
            }
            Message::Unknown(v) => self.tell(ClientEvent::Unknown(v)),
            Message::Error { error } => return Some(self.refused(error)),
            Message::RegistrationRejected {
                code, namespace, ..
            } if code == WORKER_NAMESPACE_CONFLICT => {
                return Some(Ended::Stop(format!(
                    "the engine refused this worker: {code} in namespace {namespace:?}"
                )));
            }
            Message::RegistrationRejected {
                code, function_id, ..
            } => self.tell(ClientEvent::Warning(format!(
                "the engine rejected {}: {code}",
                function_id.unwrap_or_default()
            ))),
            Message::TriggerRegistrationResult {
                error: Some(err),
                trigger_type,
                ..
            } => self.tell(ClientEvent::Warning(format!(
                "the engine refused the {trigger_type} binding: {err}"
            ))),
            Message::TriggerRegistrationResult { .. } => {}
            m => self.unexpected(&m),
        }
        None
    }

    /// Queue an event for the consumer without waiting; the ack is the caller's next frame.
    fn push_event(&mut self, e: PushedEvent) -> Result<Value, ErrorBody> {
        if self.dropped > 0
            && self
                .events
                .try_send(ClientEvent::EventsDropped(self.dropped))
                .is_ok()
        {
            self.dropped = 0;
        }
        match self.events.try_send(ClientEvent::Event(e)) {
            Ok(()) => Ok(json!({})),
            Err(_) => {
                self.dropped += 1;
                Err(ErrorBody::new(
                    "busy",
                    "switchboard's event queue is full; it will re-read",
                ))
            }
        }
    }
}
