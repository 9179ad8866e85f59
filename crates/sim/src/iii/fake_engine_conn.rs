//! One worker connection to the fake engine: the `workerregistered` greeting, then its
//! frames: pings, registrations and bindings (refused as scripted), invocations answered from
//! the script or the world, and what a scripted reply does.

use std::collections::{HashSet, VecDeque};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message as WsMessage;

use super::{BindingInfo, Conn, FakeEngine, Inner, LOG_CAP, Out, Reply, push_batch};
use switchboard_iii::codec::{self, ErrorBody, FUNCTION_NAMESPACE_CONFLICT, Message};

impl FakeEngine {
    pub(super) async fn serve(
        &self,
        ws: tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>,
    ) {
        let (mut sink, mut stream) = ws.split();
        let (tx, mut rx) = mpsc::unbounded_channel::<Out>();
        let id = {
            let mut i = self.lock();
            i.next_conn += 1;
            i.connections_total += 1;
            let id = i.next_conn;
            i.conns.insert(
                id,
                Conn {
                    tx: tx.clone(),
                    functions: HashSet::new(),
                    bindings: Vec::new(),
                },
            );
            id
        };
        let hello = Message::WorkerRegistered {
            worker_id: format!("worker-{id}"),
            reattach_token: Some(format!("token-{id}")),
        };
        let _ = tx.send(Out::Frame(codec::encode(&hello).unwrap_or_default()));
        let writer = tokio::spawn(async move {
            while let Some(o) = rx.recv().await {
                match o {
                    Out::Frame(t) => {
                        if sink.send(WsMessage::text(t)).await.is_err() {
                            break;
                        }
                    }
                    Out::Drop => break,
                }
            }
            // Dropping the sink without a close frame: the client sees the socket vanish.
            let _ = sink.close().await;
        });
        while let Some(Ok(m)) = stream.next().await {
            if writer.is_finished() {
                break;
            }
            if let WsMessage::Text(t) = m {
                self.on_frame(id, &tx, t.as_str());
            }
        }
        writer.abort();
        // The engine drops all of a worker's functions and bindings when its socket closes.
        self.lock().conns.remove(&id);
    }

    fn on_frame(&self, conn: u64, tx: &mpsc::UnboundedSender<Out>, text: &str) {
        let raw: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(_) => return,
        };
        let mut i = self.lock();
        if !i.conns.contains_key(&conn) {
            return;
        }
        if i.log.len() < LOG_CAP && !i.no_log {
            i.log.push((conn, raw.clone()));
        }
        let send = |m: &Message| {
            let _ = tx.send(Out::Frame(codec::encode(m).unwrap_or_default()));
        };
        let msg = match codec::decode_value(raw.clone()) {
            Ok(m) => m,
            Err(_) => return,
        };
        match msg {
            Message::Ping if i.answer_pings => send(&Message::Pong),
            Message::Ping => {}
            Message::RegisterFunction { id, .. } => {
                if i.function_conflicts > 0 {
                    i.function_conflicts -= 1;
                    send(&Message::RegistrationRejected {
                        code: FUNCTION_NAMESPACE_CONFLICT.into(),
                        namespace: "default".into(),
                        worker_name: None,
                        function_id: Some(id),
                        owner_worker_id: "worker-0".into(),
                    });
                } else if let Some(c) = i.conns.get_mut(&conn) {
                    c.functions.insert(id);
                }
            }
            Message::RegisterTrigger {
                id,
                trigger_type,
                function_id,
                config,
                ..
            } => {
                // `null` is not "absent": newer engines refuse it (reference §2.1).
                let null_ns = ["namespace", "trigger_namespace"]
                    .iter()
                    .any(|k| raw.get(*k).is_some_and(Value::is_null));
                let known = i
                    .conns
                    .get(&conn)
                    .is_some_and(|c| c.functions.contains(&function_id));
                let error = if null_ns {
                    Some(ErrorBody::new(
                        "invalid_namespace",
                        "namespace must be a non-empty string when present (null is rejected)",
                    ))
                } else if i.fail_bindings.contains(&trigger_type) {
                    Some(ErrorBody::new(
                        "trigger_registration_failed",
                        format!("binding {trigger_type} refused (scripted)"),
                    ))
                } else if !known {
                    Some(ErrorBody::new(
                        "function_not_found",
                        format!("{function_id} is not registered by this worker"),
                    ))
                } else {
                    None
                };
                if error.is_none()
                    && let Some(c) = i.conns.get_mut(&conn)
                {
                    c.bindings.push(BindingInfo {
                        id: id.clone(),
                        trigger_type: trigger_type.clone(),
                        function_id: function_id.clone(),
                        config,
                    });
                }
                // Like the real engine (iii v0.23.0-rc.4 `RegisterTrigger`): a refusal is
                // answered, an accepted binding is not.
                if error.is_some() {
                    send(&Message::TriggerRegistrationResult {
                        id,
                        trigger_type,
                        function_id,
                        error,
                    });
                }
            }
            Message::UnregisterTrigger { id, .. } => {
                if let Some(c) = i.conns.get_mut(&conn) {
                    c.bindings.retain(|b| b.id != id);
                }
            }
            Message::UnregisterFunction { id } => {
                if let Some(c) = i.conns.get_mut(&conn) {
                    c.functions.remove(&id);
                }
            }
            Message::InvokeFunction {
                invocation_id,
                function_id,
                data,
                ..
            } => {
                let scripted = i.script.get_mut(&function_id).and_then(VecDeque::pop_front);
                let reply = match scripted {
                    Some(r) => r,
                    None if function_id == "engine::registered-triggers::list" => {
                        let listed = registered_triggers(&i, &data);
                        if let Some(id) = &invocation_id {
                            send(&Message::result(id, &function_id, Ok(listed)));
                        }
                        return;
                    }
                    None => {
                        let (outcome, events) = match i.world.handle(&function_id, &data) {
                            Some(o) => o,
                            None => (
                                Err(ErrorBody::new(
                                    "function_not_found",
                                    format!("function {function_id} not found"),
                                )),
                                vec![],
                            ),
                        };
                        // The reply first, then what the call caused.
                        if let Some(id) = &invocation_id {
                            send(&Message::result(id, &function_id, outcome));
                        }
                        push_batch(&mut i, events);
                        return;
                    }
                };
                drop(i);
                self.apply(conn, tx, invocation_id, function_id, reply);
            }
            // Acks of our pushes and everything else are only logged.
            _ => {}
        }
    }

    fn apply(
        &self,
        conn: u64,
        tx: &mpsc::UnboundedSender<Out>,
        invocation_id: Option<String>,
        function_id: String,
        reply: Reply,
    ) {
        let answer = |outcome: Result<Value, ErrorBody>| {
            if let Some(id) = &invocation_id {
                let m = Message::result(id, &function_id, outcome);
                let _ = tx.send(Out::Frame(codec::encode(&m).unwrap_or_default()));
            }
        };
        match reply {
            Reply::Result(v) => answer(Ok(v)),
            Reply::Error(e) => answer(Err(e)),
            Reply::Never => {}
            Reply::DropSocket => {
                // Forget the connection's registrations now, as the engine does on a close.
                self.lock().conns.remove(&conn);
                let _ = tx.send(Out::Drop);
            }
            Reply::Delay(d, r) => {
                let e = self.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(d).await;
                    e.apply(conn, &tx, invocation_id, function_id, *r);
                });
            }
        }
    }
}

/// `engine::registered-triggers::list`: the placed bindings (of a type some worker provides)
/// of every connection, and the gate's own on its hook, filtered like the real engine's.
fn registered_triggers(i: &Inner, filter: &Value) -> Value {
    let mut all: Vec<Value> = i
        .conns
        .values()
        .flat_map(|c| c.bindings.iter())
        .filter(|b| i.world.gate.provides(&b.trigger_type))
        .map(|b| json!({"id": b.id, "trigger_type": b.trigger_type, "function_id": b.function_id, "config": b.config}))
        .collect();
    if let Some(hook) = i.world.gate.hook()
        && i.world.gate.provides(hook)
    {
        all.push(json!({"id": "approval-gate::hook", "trigger_type": hook, "function_id": "approval::gate",
                        "config": {"functions": ["*"]}, "worker_name": "approval-gate"}));
    }
    all.retain(|t| {
        ["trigger_type", "function_id"].iter().all(|k| {
            filter
                .get(*k)
                .and_then(Value::as_str)
                .is_none_or(|want| t[*k] == want)
        })
    });
    json!({"registered_triggers": all})
}
