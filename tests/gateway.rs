//! The gateway backend against a fake host B on loopback (reference §11): connecting,
//! limits, reconnects, the crash between `executing` and `completed`, and the token never
//! written anywhere.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use tokio::sync::mpsc;

use switchboard::backend::gateway::codec::FRAME_BYTES;
use switchboard::backend::gateway::engine::{Decision, Engine, Out, Pinned};
use switchboard::backend::gateway::journal::Journal;
use switchboard::backend::gateway::transport::{self, Event, Token};
use switchboard::backend::gateway::validate::{Mode, sha256_hex};
use switchboard::contain::Root;
use switchboard::record::Recorder;
use switchboard_sim::gateway::fake_host::{self, FakeHost, Fault};

const WS: &str = "ws-test";
const INTENT: &str = "tidy the docs";
const TOKEN: &str = "tok-9f8e7d6c5b4a-very-secret";
const WAIT: Duration = Duration::from_secs(10);

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sb-gw-it-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("proj")).unwrap();
    std::fs::write(d.join("proj/notes.md"), "# notes\n").unwrap();
    d
}

fn call(id: &str, tool: &str, args: Value) -> String {
    fake_host::call(id, WS, "conv-1", INTENT, tool, args)
}

struct A {
    events: mpsc::Receiver<Event>,
    decisions: mpsc::UnboundedSender<(u64, Decision)>,
    task: tokio::task::JoinHandle<()>,
}

fn engine(base: &Path, mode: Mode) -> Engine {
    let root = Root::open(&base.join("proj")).unwrap();
    let j = Journal::open(
        &base.join("data/gateway/journal.jsonl"),
        switchboard::record::now_ms(),
    )
    .unwrap();
    Engine::new(
        Pinned {
            workspace_id: WS.into(),
            intention: INTENT.into(),
            mode,
            extra_tools: Vec::new(),
        },
        root,
        j,
    )
}

fn start(base: &Path, host: &FakeHost, mode: Mode) -> A {
    let e = Arc::new(Mutex::new(engine(base, mode)));
    let url = transport::channel_url(&host.base_url(), WS).unwrap();
    let rec = Recorder::create(
        &base.join("data/recording.jsonl"),
        switchboard::core::BackendKind::Gateway,
        &[],
        "",
    )
    .unwrap();
    let (etx, erx) = mpsc::channel(64);
    let (dtx, drx) = mpsc::unbounded_channel();
    let task = tokio::spawn(transport::run(
        e,
        url,
        Token::new(TOKEN.into()).unwrap(),
        Some(Arc::new(Mutex::new(rec))),
        etx,
        drx,
    ));
    A {
        events: erx,
        decisions: dtx,
        task,
    }
}

impl A {
    async fn next_engine_event(&mut self) -> Out {
        loop {
            match tokio::time::timeout(WAIT, self.events.recv()).await {
                // Audit rows and effect rows tell the owner; the tests here look at cards.
                Ok(Some(Event::Engine(Out::Ran { .. } | Out::Effect { .. }))) => continue,
                Ok(Some(Event::Engine(o))) => return o,
                Ok(Some(_)) => continue,
                other => panic!("no engine event: {other:?}"),
            }
        }
    }

    async fn disconnected(&mut self) -> Option<Duration> {
        loop {
            match tokio::time::timeout(WAIT, self.events.recv()).await {
                Ok(Some(Event::Disconnected { retry_in, .. })) => return retry_in,
                Ok(Some(_)) => continue,
                other => panic!("no disconnect: {other:?}"),
            }
        }
    }
}

async fn handshake(host: &mut FakeHost) -> fake_host::Conn {
    let mut c = host.accept(WAIT).await.expect("A connects");
    // A sends ready first, without waiting for ours.
    assert_eq!(
        c.recv_raw(WAIT).await.unwrap(),
        r#"{"type":"ready","protocol":1}"#
    );
    assert!(c.send(r#"{"type":"ready","protocol":1}"#.into()).await);
    c
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn assert_no_token(base: &Path) {
    let files = files_under(&base.join("data"));
    assert!(!files.is_empty());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let hay = String::from_utf8_lossy(&bytes);
        assert!(!hay.contains(TOKEN), "the token is in {}", f.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_not_followed_and_credentials_never_go_in_the_url() {
    let host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    host.set_fault(Fault::Redirect);
    let url = transport::channel_url(&host.base_url(), WS).unwrap();
    let e = transport::connect(&url, &Token::new(TOKEN.into()).unwrap())
        .await
        .unwrap_err();
    assert!(e.contains("302") && !e.contains(TOKEN), "{e}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        host.connections.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "no second connection"
    );
    assert!(transport::channel_url(&format!("{}/?token={TOKEN}", host.base_url()), WS).is_err());
    assert!(
        transport::channel_url("ws://10.0.0.1:80", WS).is_err(),
        "ws:// only to loopback"
    );
    // A wrong token is refused by the host: A does not get in.
    let e = transport::connect(&url, &Token::new("wrong".into()).unwrap()).await;
    assert!(e.is_err());
}

/// A result handed to the socket is journaled `sent`, so a restart knows the peer may have
/// it; a re-send of the id is answered from the receipt byte for byte, marked only once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_handed_to_the_socket_is_journaled_sent() {
    use switchboard::backend::gateway::journal::State;
    let base = scratch("sent");
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let a = start(&base, &host, Mode::Full);
    let mut c = handshake(&mut host).await;
    let args = json!({"path": "new.md", "content": "x\n", "expectedSha256": null});
    c.send(call("s1", "workspace_write", args.clone())).await;
    let first = c.result_for("s1", WAIT).await.unwrap();
    assert_eq!(fake_host::code_of(&first), "ok");
    c.send(call("s1", "workspace_write", args)).await;
    let again = c.result_for("s1", WAIT).await.unwrap();
    assert_eq!(first, again, "answered from the receipt byte for byte");
    // The read that follows is served after the mark of the re-send's frame was written.
    c.send(call("r1", "workspace_info", json!({}))).await;
    c.result_for("r1", WAIT).await.unwrap();
    drop(a.decisions);
    let _ = tokio::time::timeout(WAIT, a.task).await;
    let path = base.join("data/gateway/journal.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let states: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["id"] == "s1")
        .map(|v| v["state"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(states, ["executing", "completed", "sent"], "{text}");
    let j = Journal::open(&path, switchboard::record::now_ms()).unwrap();
    let e = j
        .get(&(WS.to_string(), "conv-1".to_string(), "s1".to_string()))
        .unwrap();
    assert_eq!(e.state, State::Sent);
    let v: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(e.result.as_deref().unwrap()).unwrap(),
        v["result"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_served_and_the_token_is_only_in_the_header() {
    let base = scratch("serve");
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let mut a = start(&base, &host, Mode::Ask);
    let mut c = handshake(&mut host).await;
    assert!(
        host.refusals.lock().unwrap().is_empty(),
        "the header was right"
    );
    c.send(call("r1", "workspace_read", json!({"path": "notes.md"})))
        .await;
    let r = c.result_for("r1", WAIT).await.unwrap();
    let v: Value = serde_json::from_str(&r).unwrap();
    assert_eq!(v["sessionId"], "conv-1");
    assert_eq!(v["result"]["structuredContent"]["content"], "# notes\n");
    // A write waits for the owner: approve it.
    let args = json!({"path": "notes.md", "content": "# notes\nmore\n", "expectedSha256": sha256_hex(b"# notes\n")});
    c.send(call("w1", "workspace_write", args)).await;
    let Out::Gate(g) = a.next_engine_event().await else {
        panic!()
    };
    a.decisions.send((g.gate, Decision::Allow)).unwrap();
    let r = c.result_for("w1", WAIT).await.unwrap();
    assert_eq!(fake_host::code_of(&r), "ok");
    assert_eq!(
        std::fs::read_to_string(base.join("proj/notes.md")).unwrap(),
        "# notes\nmore\n"
    );
    drop(a.decisions);
    let _ = tokio::time::timeout(WAIT, a.task).await;
    assert_no_token(&base);
    // The recording has the frames, not the handshake.
    let rec = std::fs::read_to_string(base.join("data/recording.jsonl")).unwrap();
    assert!(rec.contains("workspace_write") && !rec.to_lowercase().contains("authorization"));
    // And it validates: frames, tool schemas, one answer per id.
    let loaded = switchboard::replay::load::load(&base.join("data/recording.jsonl"), None).unwrap();
    let report = switchboard::replay::validate::validate(&loaded);
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!((report.requests, report.replies_checked), (2, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversize_frame_closes_the_channel_and_runs_nothing() {
    let base = scratch("oversize");
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let mut a = start(&base, &host, Mode::Full);
    let mut c = handshake(&mut host).await;
    let mut frame = call(
        "big",
        "workspace_write",
        json!({"path": "big.txt", "content": "", "expectedSha256": null}),
    );
    // Pad the content so the frame is exactly one byte over the limit.
    let pad = FRAME_BYTES + 1 - frame.len();
    frame = frame.replace(
        r#""content":"""#,
        &format!(r#""content":"{}""#, "x".repeat(pad)),
    );
    assert_eq!(frame.len(), FRAME_BYTES + 1);
    c.send(frame).await;
    assert!(
        c.recv_raw(WAIT).await.is_none(),
        "the channel is closed, nothing answered"
    );
    assert!(a.disconnected().await.is_some(), "A reconnects later");
    assert!(!base.join("proj/big.txt").exists());
    a.task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_reconnect_each_id_is_answered_exactly_once() {
    let base = scratch("reconnect");
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let mut a = start(&base, &host, Mode::Ask);
    let mut c = handshake(&mut host).await;
    let ask = call(
        "q1",
        "workspace_ask",
        json!({"question": "Which heading style?"}),
    );
    c.send(ask.clone()).await;
    let Out::Gate(g) = a.next_engine_event().await else {
        panic!()
    };
    c.close().await;
    a.disconnected().await;
    let mut c = handshake(&mut host).await;
    c.send(ask.clone()).await;
    assert_eq!(
        a.next_engine_event().await,
        Out::Joined { gate: g.gate },
        "no second card"
    );
    a.decisions
        .send((g.gate, Decision::Answer("ATX".into())))
        .unwrap();
    let first = c.result_for("q1", WAIT).await.unwrap();
    assert!(first.contains("ATX"));
    c.send(ask).await;
    let again = c.result_for("q1", WAIT).await.unwrap();
    assert_eq!(first, again, "byte for byte");
    a.task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifth_call_in_flight_is_busy_and_the_same_id_succeeds_later() {
    let base = scratch("busy");
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let mut a = start(&base, &host, Mode::Ask);
    let mut c = handshake(&mut host).await;
    let mut gates = Vec::new();
    for i in 0..4 {
        c.send(call(
            &format!("q{i}"),
            "workspace_ask",
            json!({"question": "?"}),
        ))
        .await;
        let Out::Gate(g) = a.next_engine_event().await else {
            panic!()
        };
        gates.push(g.gate);
    }
    let fifth = call("r5", "workspace_exec", json!({"command": "true"}));
    c.send(fifth.clone()).await;
    assert_eq!(
        fake_host::code_of(&c.result_for("r5", WAIT).await.unwrap()),
        "busy"
    );
    a.decisions.send((gates[0], Decision::Cancel)).unwrap();
    assert_eq!(
        fake_host::code_of(&c.result_for("q0", WAIT).await.unwrap()),
        "cancelled"
    );
    c.send(fifth).await;
    let Out::Gate(g) = a.next_engine_event().await else {
        panic!()
    };
    a.decisions
        .send((g.gate, Decision::Deny(Some("no shell today".into()))))
        .unwrap();
    let r = c.result_for("r5", WAIT).await.unwrap();
    assert_eq!(fake_host::code_of(&r), "denied_by_owner");
    assert!(r.contains("no shell today"));
    a.task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ready_with_another_protocol_closes_the_channel_for_good() {
    let base = scratch("proto");
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let mut a = start(&base, &host, Mode::Ask);
    let mut c = host.accept(WAIT).await.unwrap();
    c.recv_raw(WAIT).await.unwrap();
    c.send(r#"{"type":"ready","protocol":2}"#.into()).await;
    assert_eq!(
        a.disconnected().await,
        None,
        "no retry after a protocol mismatch"
    );
}

/// The child half of the crash test: serve the channel with the crash hook set by the parent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_child() {
    let Ok(base) = std::env::var("SB_GW_CRASH_BASE") else {
        return;
    };
    let port: u16 = std::env::var("SB_GW_CRASH_PORT").unwrap().parse().unwrap();
    let e = Arc::new(Mutex::new(engine(Path::new(&base), Mode::Edits)));
    let url = transport::channel_url(&format!("ws://127.0.0.1:{port}"), WS).unwrap();
    let (etx, mut erx) = mpsc::channel(64);
    let (_dtx, drx) = mpsc::unbounded_channel();
    tokio::spawn(async move { while erx.recv().await.is_some() {} });
    let t = tokio::spawn(transport::run(
        e,
        url,
        Token::new(TOKEN.into()).unwrap(),
        None,
        etx,
        drx,
    ));
    let _ = tokio::time::timeout(Duration::from_secs(20), t).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_executing_and_completed_leaves_an_uncertain_effect_never_rerun() {
    let base = scratch("crash");
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let port = host.port;
    let spawn = |crash: bool| {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args(["crash_child", "--exact", "--nocapture"])
            .env("SB_GW_CRASH_BASE", &base)
            .env("SB_GW_CRASH_PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if crash {
            cmd.env("SWITCHBOARD_GATEWAY_TEST_CRASH", "after_executing");
        } else {
            cmd.env_remove("SWITCHBOARD_GATEWAY_TEST_CRASH");
        }
        cmd.spawn().unwrap()
    };
    let write = call(
        "w1",
        "workspace_write",
        json!({"path": "notes.md", "content": "rewritten\n", "expectedSha256": sha256_hex(b"# notes\n")}),
    );
    let mut child = spawn(true);
    let mut c = handshake(&mut host).await;
    c.send(write.clone()).await;
    assert!(
        c.result_for("w1", WAIT).await.is_none(),
        "the process died before answering"
    );
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(!status.success(), "the child aborted");
    let j = std::fs::read_to_string(base.join("data/gateway/journal.jsonl")).unwrap();
    assert!(
        j.contains("\"executing\"") && !j.contains("\"completed\""),
        "{j}"
    );
    // Restart: B retries the same id.
    let mut child = spawn(false);
    let mut c = handshake(&mut host).await;
    c.send(write).await;
    let r = c.result_for("w1", WAIT).await.unwrap();
    assert_eq!(fake_host::code_of(&r), "uncertain_effect");
    assert_eq!(
        std::fs::read_to_string(base.join("proj/notes.md")).unwrap(),
        "# notes\n",
        "untouched"
    );
    let _ = child.kill();
    let _ = child.wait();
    assert_no_token(&base);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss_verifies_the_host_certificate_and_sends_the_token_only_in_the_header() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_rustls::rustls;
    use tokio_tungstenite::tungstenite::Message;
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = ck.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        ck.signing_key.serialize_der(),
    ));
    let server = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert.clone()], key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (seen_tx, mut seen_rx) = mpsc::unbounded_channel::<(String, String)>();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, seen) = (acceptor.clone(), seen_tx.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let auth = Arc::new(Mutex::new(String::new()));
                let a2 = auth.clone();
                #[allow(clippy::result_large_err)]
                let cb = move |req: &tokio_tungstenite::tungstenite::handshake::server::Request,
                               resp: tokio_tungstenite::tungstenite::handshake::server::Response| {
                    *a2.lock().unwrap() = format!(
                        "{} {}",
                        req.uri(),
                        req.headers().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("")
                    );
                    Ok(resp)
                };
                let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(tls, cb).await else {
                    return;
                };
                if let Some(Ok(Message::Text(t))) = ws.next().await {
                    let a = auth.lock().unwrap().clone();
                    let _ = seen.send((a, t.as_str().to_string()));
                }
                let _ = ws.close(None).await;
            });
        }
    });
    let url = transport::channel_url(&format!("wss://localhost:{port}"), WS).unwrap();
    let token = Token::new(TOKEN.into()).unwrap();
    // An untrusted certificate is refused.
    assert!(transport::connect(&url, &token).await.is_err());
    let mut ws = transport::connect_with_roots(&url, &token, &[cert])
        .await
        .unwrap();
    ws.send(Message::text(r#"{"type":"ready","protocol":1}"#))
        .await
        .unwrap();
    let (auth, first) = tokio::time::timeout(WAIT, seen_rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        auth,
        format!("/api/ai-gateway/v1/workspaces/{WS}/channel Bearer {TOKEN}")
    );
    assert_eq!(first, r#"{"type":"ready","protocol":1}"#);
}

/// Issue 21 item 9: a host that accepts the upgrade and closes at once is retried at a
/// growing delay (the delay starts over only after a connection stayed healthy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_closes_at_once_is_retried_at_a_growing_delay() {
    let base = scratch("backoff");
    let mut host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let mut a = start(&base, &host, Mode::Full);
    let mut waits = Vec::new();
    for _ in 0..3 {
        let c = host.accept(WAIT).await.expect("A connects");
        c.close().await;
        waits.push(a.disconnected().await.expect("A retries"));
    }
    let first = transport::BACKOFF_FIRST;
    for (i, w) in waits.iter().enumerate() {
        let floor = first * 2u32.pow(i as u32);
        assert!(
            *w >= floor && *w <= floor + floor / 4,
            "attempt {i}: {w:?} ({waits:?})"
        );
    }
    a.task.abort();
}

/// Issue 22 item 8: HTTP 401 from the host ends the retry loop with one row that says what
/// to check, instead of a new row every attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_stops_the_retry_loop_with_one_row() {
    let host = FakeHost::start(0, WS, TOKEN).await.unwrap();
    let e = Arc::new(Mutex::new(engine(&scratch("refused"), Mode::Full)));
    let url = transport::channel_url(&host.base_url(), WS).unwrap();
    let (etx, mut erx) = mpsc::channel(64);
    let (_dtx, drx) = mpsc::unbounded_channel();
    let task = tokio::spawn(transport::run(
        e,
        url,
        Token::new("wrong-token".into()).unwrap(),
        None,
        etx,
        drx,
    ));
    tokio::time::timeout(WAIT, task)
        .await
        .expect("the loop ends")
        .unwrap();
    let mut rows = Vec::new();
    while let Ok(ev) = erx.try_recv() {
        rows.push(ev);
    }
    assert_eq!(rows.len(), 1, "{rows:?}");
    let Event::Disconnected {
        reason,
        retry_in: None,
    } = &rows[0]
    else {
        panic!("{rows:?}")
    };
    assert!(
        reason.starts_with(transport::REFUSED) && reason.contains("401"),
        "{reason}"
    );
    assert!(reason.contains("--token-file"), "{reason}");
    assert_eq!(
        host.connections.load(std::sync::atomic::Ordering::SeqCst),
        1
    );
}
