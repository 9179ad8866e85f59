//! One socket's life on the task: the handshake (reattach, `workerregistered`, our
//! register call, handlers and bindings, the barrier ping), then the steady state (pings,
//! calls sent, frames served) until it ends.

use std::collections::HashSet;

use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio_tungstenite::tungstenite::Message as WsMessage;

use super::codec::{self, FUNCTION_NAMESPACE_CONFLICT, Message, WORKER_NAMESPACE_CONFLICT};
use super::transport::{Backoff, Ws};
use super::{Binding, CallError, ClientEvent, Cmd, ConnState, Ended, Subscription, Task, short_id};
use switchboard_backend::process::record;
use switchboard_record::Dir;

impl Task {
    pub(super) async fn send(&self, ws: &mut Ws, msg: &Message) -> Result<(), String> {
        let text = codec::encode(msg).map_err(|e| e.to_string())?;
        record(&self.rec, Dir::Out, &text);
        ws.send(WsMessage::text(text))
            .await
            .map_err(|e| format!("cannot send to the engine: {e}"))
    }

    fn bindings(&self) -> Vec<Binding> {
        self.opts
            .subscriptions
            .iter()
            .enumerate()
            .map(|(i, s)| self.binding(i, s))
            .collect()
    }

    fn binding(&self, i: usize, s: &Subscription) -> Binding {
        let name = s.trigger_type.replace("::", "-");
        Binding {
            trigger_type: s.trigger_type.clone(),
            config: s.config.clone(),
            handler: format!("switchboard::{}::on-{name}", self.instance),
            binding_id: format!("{}-{i}", self.instance),
        }
    }

    async fn register_binding(&self, ws: &mut Ws, b: &Binding) -> Result<(), String> {
        self.send(
            ws,
            &Message::RegisterFunction {
                id: b.handler.clone(),
                description: Some(format!("switchboard: {} events", b.trigger_type)),
                request_format: None,
                response_format: None,
                metadata: None,
                invocation: None,
            },
        )
        .await?;
        self.send(
            ws,
            &Message::RegisterTrigger {
                id: b.binding_id.clone(),
                trigger_type: b.trigger_type.clone(),
                function_id: b.handler.clone(),
                config: b.config.clone(),
                metadata: None,
                namespace: None,
                trigger_namespace: None,
            },
        )
        .await
    }

    /// One socket: handshake, bindings, then steady state until it ends.
    pub(super) async fn serve(&mut self, mut ws: Ws, backoff: &mut Backoff) -> Ended {
        let handshake = tokio::time::Instant::now() + self.opts.handshake_timeout;
        // 0. A reconnect first retires our previous connection (the engine checks the token it
        // gave us there). Without it, an engine that has not yet noticed that connection die
        // still holds our worker name and refuses this one fatally
        // (`WORKER_NAMESPACE_CONFLICT`), and still holds our handler ids.
        if let Some((previous_worker_id, reattach_token)) = self.previous.clone()
            && let Err(e) = self
                .send(
                    &mut ws,
                    &Message::Reattach {
                        previous_worker_id,
                        reattach_token,
                    },
                )
                .await
        {
            return Ended::Lost(e);
        }
        // 1. workerregistered.
        let worker_id = loop {
            let frame = tokio::select! {
                _ = tokio::time::sleep_until(handshake) => return Ended::Lost("no workerregistered from the engine in time".into()),
                c = self.cmds.recv() => { if self.offline_cmd(c).is_break() { let _ = ws.close(None).await; return Ended::Stop("closed".into()); } continue; }
                f = ws.next() => f,
            };
            match self.read(frame) {
                Err(e) => return Ended::Lost(e),
                Ok(None) => continue,
                Ok(Some(Message::WorkerRegistered {
                    worker_id,
                    reattach_token,
                })) => {
                    self.previous = Some((worker_id.clone(), reattach_token));
                    break worker_id;
                }
                Ok(Some(Message::Error { error })) => {
                    // Refused before we were registered: should our reattach be the reason (an
                    // engine restarted since knows neither the worker id nor its token), the
                    // next attempt connects fresh instead of being refused the same way for ever.
                    self.previous = None;
                    return self.refused(error);
                }
                Ok(Some(Message::Ping)) => {
                    if let Err(e) = self.send(&mut ws, &Message::Pong).await {
                        return Ended::Lost(e);
                    }
                }
                Ok(Some(m)) => self.unexpected(&m),
            }
        };
        // 2. engine::workers::register, first of all.
        let register_id = uuid::Uuid::new_v4().to_string();
        let meta = json!({
            "name": self.name,
            "runtime": "rust",
            "version": env!("CARGO_PKG_VERSION"),
            "os": std::env::consts::OS,
            "pid": std::process::id(),
        });
        if let Err(e) = self
            .send(
                &mut ws,
                &Message::invoke(&register_id, "engine::workers::register", meta),
            )
            .await
        {
            return Ended::Lost(e);
        }
        // 3. handlers and bindings, then a ping as a barrier.
        let mut bindings = self.bindings();
        for b in &bindings {
            if let Err(e) = self.register_binding(&mut ws, b).await {
                return Ended::Lost(e);
            }
        }
        if let Err(e) = self.send(&mut ws, &Message::Ping).await {
            return Ended::Lost(e);
        }
        // 4. wait until the engine has applied every registration (events may already flow:
        // they are served). The real engine (iii v0.23.0-rc.4, `engine/src/engine/mod.rs`
        // `RegisterTrigger`) answers a binding with `triggerregistrationresult` only when it
        // fails; success, or a binding parked until a worker provides its trigger type, is
        // silent. So "applied" is: our `engine::workers::register` has its result (the engine
        // holds registrations that arrive before the namespace is known and applies them
        // before that result) and our barrier ping has its pong (the engine handles one
        // connection's frames in order, so every registration sent before the ping has been
        // applied, a refusal already sent). An engine that acknowledges every binding (older
        // engines, our fake) is applied once they all are.
        let mut unacked: HashSet<String> = bindings.iter().map(|b| b.binding_id.clone()).collect();
        let mut registered = false;
        // Barrier pings sent and pongs seen: pongs come in order, so the last ping's pong is
        // the `pings`-th one.
        let mut pings = 1u32;
        let mut pongs = 0u32;
        let mut renewals = 0u32;
        while !(registered && (pongs >= pings || unacked.is_empty())) {
            let frame = tokio::select! {
                _ = tokio::time::sleep_until(handshake) => return Ended::Lost(if registered {
                    format!("{} trigger bindings not confirmed in time", unacked.len())
                } else {
                    "no result for engine::workers::register in time".into()
                }),
                c = self.cmds.recv() => { if self.offline_cmd(c).is_break() { let _ = ws.close(None).await; return Ended::Stop("closed".into()); } continue; }
                f = ws.next() => f,
            };
            let msg = match self.read(frame) {
                Err(e) => return Ended::Lost(e),
                Ok(None) => continue,
                Ok(Some(m)) => m,
            };
            match msg {
                Message::Pong => pongs += 1,
                Message::InvocationResult {
                    ref invocation_id, ..
                } if *invocation_id == register_id => {
                    registered = true;
                    if let Some(end) = self.on_frame(&mut ws, msg, &bindings, &register_id).await {
                        return end;
                    }
                }
                Message::TriggerRegistrationResult {
                    id,
                    error,
                    trigger_type,
                    ..
                } => {
                    if unacked.remove(&id)
                        && let Some(err) = error
                    {
                        self.tell(ClientEvent::Warning(format!(
                            "the engine refused the {trigger_type} binding: {err}"
                        )));
                    }
                }
                Message::RegistrationRejected {
                    code, function_id, ..
                } if code == FUNCTION_NAMESPACE_CONFLICT => {
                    // The old connection still holds the id: take a new suffix, register again.
                    renewals += 1;
                    if renewals > 3 {
                        return Ended::Lost("handler ids keep conflicting".into());
                    }
                    self.instance = short_id();
                    self.tell(ClientEvent::Warning(format!(
                        "handler {} conflicts with a live registration; registering as switchboard::{}",
                        function_id.unwrap_or_default(),
                        self.instance
                    )));
                    // Withdraw the old ids, so no event arrives twice through them.
                    for b in &bindings {
                        let withdraw = [
                            Message::UnregisterTrigger {
                                id: b.binding_id.clone(),
                                trigger_type: Some(b.trigger_type.clone()),
                            },
                            Message::UnregisterFunction {
                                id: b.handler.clone(),
                            },
                        ];
                        for m in &withdraw {
                            if let Err(e) = self.send(&mut ws, m).await {
                                return Ended::Lost(e);
                            }
                        }
                    }
                    bindings = self.bindings();
                    for b in &bindings {
                        if let Err(e) = self.register_binding(&mut ws, b).await {
                            return Ended::Lost(e);
                        }
                    }
                    unacked = bindings.iter().map(|b| b.binding_id.clone()).collect();
                    // A new barrier for the new registrations.
                    pings += 1;
                    if let Err(e) = self.send(&mut ws, &Message::Ping).await {
                        return Ended::Lost(e);
                    }
                }
                m => {
                    if let Some(end) = self.on_frame(&mut ws, m, &bindings, &register_id).await {
                        return end;
                    }
                }
            }
        }
        // 5. live: send what waited.
        backoff.reset();
        self.state(ConnState::Live {
            worker_id: worker_id.clone(),
            handlers: format!("switchboard::{}::", self.instance),
        })
        .await;
        let waiting: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, p)| !p.sent)
            .map(|(id, _)| id.clone())
            .collect();
        for id in waiting {
            if let Err(e) = self.send_call(&mut ws, &id).await {
                return Ended::Lost(e);
            }
        }
        // 6. steady state.
        let mut ping = tokio::time::interval_at(
            tokio::time::Instant::now() + self.opts.ping_every,
            self.opts.ping_every,
        );
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut unanswered = 0u32;
        loop {
            tokio::select! {
                _ = ping.tick() => {
                    // Refused events are reported even if no further event comes.
                    if self.dropped > 0 && self.events.try_send(ClientEvent::EventsDropped(self.dropped)).is_ok() {
                        self.dropped = 0;
                    }
                    if unanswered >= 2 {
                        return Ended::Lost("two pings without a pong: the socket is dead".into());
                    }
                    unanswered += 1;
                    if let Err(e) = self.send(&mut ws, &Message::Ping).await {
                        return Ended::Lost(e);
                    }
                }
                c = self.cmds.recv() => match c {
                    None | Some(Cmd::Close) => {
                        let _ = ws.close(None).await;
                        return Ended::Stop("closed by switchboard".into());
                    }
                    Some(Cmd::Forget(id)) => { self.pending.remove(&id); }
                    Some(Cmd::Call { id, function_id, data, reply }) => {
                        self.queue(id.clone(), function_id, data, reply);
                        if let Err(e) = self.send_call(&mut ws, &id).await {
                            return Ended::Lost(e);
                        }
                    }
                },
                f = ws.next() => {
                    match self.read(f) {
                        Err(e) => return Ended::Lost(e),
                        Ok(None) => {}
                        Ok(Some(Message::Pong)) => unanswered = 0,
                        Ok(Some(Message::RegistrationRejected { code, namespace, .. })) if code == WORKER_NAMESPACE_CONFLICT => {
                            return Ended::Stop(format!("the engine refused this worker: {code} in namespace {namespace:?}"));
                        }
                        Ok(Some(m)) => {
                            if let Some(end) = self.on_frame(&mut ws, m, &bindings, &register_id).await {
                                return end;
                            }
                        }
                    }
                }
            }
        }
    }

    async fn send_call(&mut self, ws: &mut Ws, id: &str) -> Result<(), String> {
        let Some(p) = self.pending.get_mut(id) else {
            return Ok(());
        };
        p.sent = true;
        let msg = Message::invoke(id, &p.function_id, p.data.clone());
        match codec::encode(&msg) {
            Ok(_) => self.send(ws, &msg).await,
            Err(e) => {
                // Too large to send: this call fails, the socket is fine.
                if let Some(p) = self.pending.remove(id) {
                    let _ = p.reply.send(Err(CallError::Closed(e.to_string())));
                }
                Ok(())
            }
        }
    }
}
