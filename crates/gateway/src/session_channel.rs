//! The channel's task: the project root, the receipts journal, the recording and the
//! engine opened, the transport started, then engine output shown where it belongs and the
//! owner's answers routed back to their calls until the channel ends.

use super::*;

pub(super) async fn run(
    c: GatewayConfig,
    events: mpsc::Sender<Stamped>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    spawner: Option<Spawner>,
) {
    let fail = |e: String| BackendEvent::Exited {
        code: None,
        detail: e,
        stderr_tail: Vec::new(),
    };
    let url = match transport::channel_url(&c.url, &c.pinned.workspace_id) {
        Ok(u) => u,
        Err(e) => {
            ev(&events, fail(e)).await;
            return;
        }
    };
    let root = match Root::open(&c.root) {
        Ok(r) => r,
        Err(e) => {
            ev(
                &events,
                fail(format!(
                    "cannot open the project root {}: {e}",
                    c.root.display()
                )),
            )
            .await;
            return;
        }
    };
    let journal = match Journal::open(&c.journal, now_ms()) {
        Ok(j) => j,
        Err(e) => {
            ev(
                &events,
                fail(format!(
                    "cannot open the receipts journal {}: {e}",
                    c.journal.display()
                )),
            )
            .await;
            return;
        }
    };
    let rec_path = c
        .record
        .clone()
        .unwrap_or_else(|| switchboard_record::paths::new_recording_path("gateway"));
    let argv = vec![url.clone(), c.pinned.workspace_id.clone()];
    let recorder = match Recorder::create(
        &rec_path,
        switchboard_core::BackendKind::Gateway,
        &argv,
        &c.root.display().to_string(),
    ) {
        Ok(r) => Some(Arc::new(Mutex::new(r))),
        Err(e) => {
            note(&events, Level::Warn, format!("not recording: {e}")).await;
            None
        }
    };
    if recorder.is_some() {
        ev(
            &events,
            BackendEvent::Recording(rec_path.display().to_string()),
        )
        .await;
    }
    let engine = Engine::new(c.pinned.clone(), root, journal).with_env(c.exec_env.clone());
    let uncertain = engine.uncertain();
    let engine = Arc::new(Mutex::new(engine));
    ev(
        &events,
        BackendEvent::Started {
            program: format!("gateway → {url}"),
            pid: None,
        },
    )
    .await;
    ev(
        &events,
        BackendEvent::Abilities(Abilities::calls_only(format!(
            "Remote agent channel for {} (mode {}, intention: {}). Each conversation of the agent opens as a session of its own; their calls wait as cards in one inbox (g opens the oldest). It takes no prompt from here.",
            c.root.display(),
            format!("{:?}", c.pinned.mode).to_lowercase(),
            crate::codec::clip(&c.pinned.intention)
        ))),
    )
    .await;
    let patch = SessionPatch {
        session_id: Some(c.pinned.workspace_id.clone()),
        permission_mode: Some(format!("{:?}", c.pinned.mode).to_lowercase()),
        cwd: Some(c.root.display().to_string()),
        ..SessionPatch::default()
    };
    ev(&events, BackendEvent::Session(patch.clone())).await;
    note(
        &events,
        Level::Info,
        format!(
            "intention pinned for this channel: {}",
            crate::codec::clip(&c.pinned.intention)
        ),
    )
    .await;
    ev(
        &events,
        BackendEvent::Info {
            key: "journal".into(),
            value: Some(c.journal.display().to_string()),
        },
    )
    .await;
    // Each uncertain receipt is a card: `y` settles it (by the file's SHA when that is
    // conclusive, else on the owner's word), `n` leaves it uncertain. Never a re-run.
    let mut settle: Vec<crate::journal::Key> = Vec::new();
    for (k, e) in uncertain {
        let id = format!("gw-settle-{}", settle.len());
        ev(
            &events,
            BackendEvent::GateOpen(Box::new(mapping::settle_card(&id, &k, &e, now_ms()))),
        )
        .await;
        settle.push(k);
    }
    let (etx, mut erx) = mpsc::channel(256);
    let (dtx, drx) = mpsc::unbounded_channel();
    let transport = tokio::spawn(transport::run(
        engine.clone(),
        url,
        c.token.clone(),
        recorder.clone(),
        etx,
        drx,
    ));
    let (ctx, mut conv_commands) = mpsc::unbounded_channel();
    let mut convs = Conversations {
        spawner,
        open: HashMap::new(),
        closed: Default::default(),
        cards: HashMap::new(),
        commands: ctx,
        flat: Nodes::default(),
        patch,
    };
    let mut dtx = Some(dtx);
    // The commands approved on this channel, followed to their end (see `watch`).
    let mut watcher = Watcher::default();
    let mut tick = tokio::time::interval(crate::watch::TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick(), if !watcher.is_empty() => {
                for o in watcher.poll() {
                    convs.show(&events, &o).await;
                }
            }
            e = erx.recv() => match e {
                None => break,
                Some(Event::Connected { url }) => {
                    ev(&events, BackendEvent::Link("connected".into())).await;
                    note(&events, Level::Info, format!("connected to {url}")).await
                }
                Some(Event::Disconnected { reason, retry_in: Some(w) }) => {
                    ev(&events, BackendEvent::Link(format!("reconnecting in {} s", w.as_secs().max(1)))).await;
                    note(&events, Level::Warn, format!("disconnected: {reason}; retrying in {} ms", w.as_millis())).await
                }
                Some(Event::Disconnected { reason, retry_in: None }) => {
                    ev(&events, fail(format!("channel closed: {reason}"))).await;
                    break;
                }
                Some(Event::Engine(o)) => {
                    if let Out::Effect { session, outcome: Outcome::Command { command_id, command, watch }, .. } = &o {
                        watcher.add(session, command_id, command, watch.clone());
                    }
                    convs.show(&events, &o).await
                }
            },
            Some((conv, cmd)) = conv_commands.recv() => match cmd {
                // Closing one conversation's session (quitting closes the channel's too).
                Command::Shutdown => convs.close(&events, &conv, "conversation closed").await,
                Command::Answer { gate_id, decision } => {
                    convs.answered(&gate_id);
                    record_edit(recorder.as_ref(), &gate_id, &decision);
                    if let (Some(g), Some(tx)) = (mapping::engine_gate(&gate_id), dtx.as_ref()) {
                        let _ = tx.send((g, mapping::decision(&decision)));
                    }
                }
                Command::Note(text) => {
                    if let Some(r) = &recorder {
                        let _ = r.lock().unwrap_or_else(|p| p.into_inner()).record(Dir::Note, &text);
                    }
                }
                other => {
                    if let Some(tx) = convs.link(&conv).await {
                        let text = other.unsupported().unwrap_or_else(|| "the remote agent takes no prompts from here: answer its cards".into());
                        note(&tx, Level::Info, text).await;
                    }
                }
            },
            cmd = commands.recv() => match cmd {
                None | Some(Command::Shutdown) => {
                    // Quitting leaves waiting calls unanswered: B re-sends them next time.
                    dtx = None;
                    break;
                }
                Some(Command::Answer { gate_id, decision }) if gate_id.starts_with("gw-settle-") => {
                    let key = gate_id["gw-settle-".len()..].parse::<usize>().ok().and_then(|i| settle.get(i)).cloned();
                    let Some(key) = key else { continue };
                    if !matches!(decision, switchboard_core::gate::Decision::Allow { .. }) {
                        note(&events, Level::Info, format!("receipt {} left uncertain", key.2)).await;
                        continue;
                    }
                    let e = engine.clone();
                    let done = tokio::task::spawn_blocking(move || {
                        let mut e = e.lock().unwrap_or_else(|p| p.into_inner());
                        match e.settle(&key, None) {
                            Ok(_) => format!("receipt {} settled by the file's revision", key.2),
                            Err(why) => match e.settle(&key, Some("marked settled by the owner")) {
                                Ok(_) => format!("receipt {} settled on the owner's word ({why})", key.2),
                                Err(e) => format!("receipt {} not settled: {e}", key.2),
                            },
                        }
                    })
                    .await
                    .unwrap_or_else(|_| "settling failed".into());
                    note(&events, Level::Info, done).await;
                }
                Some(Command::Answer { gate_id, decision }) => {
                    convs.answered(&gate_id);
                    record_edit(recorder.as_ref(), &gate_id, &decision);
                    if let (Some(g), Some(tx)) = (mapping::engine_gate(&gate_id), dtx.as_ref()) {
                        let _ = tx.send((g, mapping::decision(&decision)));
                    }
                }
                Some(Command::Note(text)) => {
                    if let Some(r) = &recorder {
                        let _ = r.lock().unwrap_or_else(|p| p.into_inner()).record(Dir::Note, &text);
                    }
                }
                Some(other) => {
                    let text = other.unsupported().unwrap_or_else(|| "the remote agent takes no prompts from here: answer its cards".into());
                    note(&events, Level::Info, text).await
                }
            },
        }
    }
    drop(dtx);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), transport).await;
    convs.close_all("gateway closed").await;
    ev(
        &events,
        BackendEvent::Exited {
            code: Some(0),
            detail: "gateway closed".into(),
            stderr_tail: Vec::new(),
        },
    )
    .await;
}

/// Before an edited answer goes to the engine, the recording notes what the edit runs: the
/// wire's result says only that an edit ran, and replay and export name what did.
fn record_edit(
    recorder: Option<&Arc<Mutex<Recorder>>>,
    gate_id: &str,
    decision: &switchboard_core::gate::Decision,
) {
    if let (
        Some(r),
        switchboard_core::gate::Decision::Allow {
            updated_input: Some(args),
            ..
        },
    ) = (recorder, decision)
    {
        let _ = r
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(Dir::Note, &crate::recording::edit_note_text(gate_id, args));
    }
}
