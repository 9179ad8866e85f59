//! A small HTTP/1.1 server for the fakes of model APIs (`fake_gemini.rs`, `fake_openai.rs`):
//! 127.0.0.1 on an ephemeral port, its **own thread and tokio runtime** (so it answers while a
//! test blocks its own thread), keep-alive, `Content-Length` and chunked request bodies, JSON
//! replies and server-sent events sent with chunked transfer encoding. Every request is
//! recorded; one no handler knows is answered 404 and recorded as **unexpected**
//! (`HttpFake::assert_no_unexpected` fails the test and shows it).
//!
//! The Anthropic Messages fake (`fake_model.rs`) predates this server and keeps its own loop,
//! but reads requests with the same reader (`http_read.rs`).
#![allow(dead_code)]

// Each test binary includes the fakes it needs on their own, so a binary with both has the
// reader twice (identical code, no types shared between the two).
#[allow(clippy::duplicate_mod)]
#[path = "http_read.rs"]
mod http_read;
pub use http_read::Request;
use http_read::read_request;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};

/// One server-sent event: an optional `event:` name and its `data:` JSON.
#[derive(Clone, Debug)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: Value,
}

/// What the server sends back.
#[derive(Clone, Debug)]
pub enum Reply {
    Json {
        status: u16,
        body: Value,
    },
    /// `text/event-stream`: `delay` before the head, `gap` before each event.
    Sse {
        events: Vec<SseEvent>,
        delay: Duration,
        gap: Duration,
    },
}

/// A handler's answer: the reply, and what the record of the request says about it.
pub struct Answer {
    pub reply: Reply,
    /// The scenario rule (or built-in route) that answered.
    pub rule: Option<String>,
    /// Set when nothing should have asked this: the test fails on it.
    pub unexpected: Option<String>,
}

impl Answer {
    pub fn json(rule: &str, body: Value) -> Answer {
        Answer {
            reply: Reply::Json { status: 200, body },
            rule: Some(rule.into()),
            unexpected: None,
        }
    }

    pub fn unexpected(status: u16, why: String, body: Value) -> Answer {
        Answer {
            reply: Reply::Json { status, body },
            rule: None,
            unexpected: Some(why),
        }
    }
}

/// A model API: answers one request (called on the server's thread, one request at a time).
pub trait Handler: Send + Sync + 'static {
    fn answer(&self, req: &Request) -> Answer;
}

/// One request the server received, as recorded.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub index: usize,
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Value>,
    pub rule: Option<String>,
    pub unexpected: Option<String>,
    /// The client went away before the streamed reply was complete (a cancelled turn).
    pub aborted: bool,
    /// Seconds since the server started.
    pub at: f64,
}

impl Recorded {
    pub fn route(&self) -> &str {
        self.path.split('?').next().unwrap_or("")
    }

    pub fn summary(&self) -> String {
        let mut s = format!("#{} {} {}", self.index, self.method, self.path);
        if let Some(r) = &self.rule {
            s.push_str(&format!(" rule={r}"));
        }
        if let Some(u) = &self.unexpected {
            s.push_str(&format!(" UNEXPECTED({u})"));
        }
        if self.aborted {
            s.push_str(" aborted");
        }
        s
    }
}

struct Shared {
    handler: Box<dyn Handler>,
    log: Mutex<Vec<Recorded>>,
    started: Instant,
}

/// The running server; dropping it stops it.
pub struct HttpFake {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HttpFake {
    pub fn start(name: &str, handler: impl Handler) -> HttpFake {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("http_fake: bind");
        listener
            .set_nonblocking(true)
            .expect("http_fake: nonblocking");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            handler: Box::new(handler),
            log: Mutex::new(Vec::new()),
            started: Instant::now(),
        });
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("fake-{name}"))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("http_fake: runtime");
                rt.block_on(async move {
                    let listener = TcpListener::from_std(listener).expect("http_fake: listener");
                    let mut conns = tokio::task::JoinSet::new();
                    tokio::pin!(stop_rx);
                    loop {
                        tokio::select! {
                            _ = &mut stop_rx => break,
                            acc = listener.accept() => if let Ok((sock, _)) = acc {
                                let sh = sh.clone();
                                conns.spawn(async move { let _ = serve(sock, sh).await; });
                            },
                            Some(_) = conns.join_next(), if !conns.is_empty() => {}
                        }
                    }
                    conns.abort_all();
                });
            })
            .expect("http_fake: thread");
        HttpFake {
            addr,
            shared,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.log.lock().unwrap().clone()
    }

    /// When the server started: `Recorded::at` counts from here (the instant a request was
    /// answered, for latencies measured against it).
    pub fn started(&self) -> Instant {
        self.shared.started
    }

    /// The requests so far whose route (path without query) `want` accepts.
    pub fn requests_to(&self, want: impl Fn(&str) -> bool) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| want(r.route()))
            .collect()
    }

    pub fn unexpected(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.unexpected.is_some())
            .collect()
    }

    /// Every request, one line each (for failure messages).
    pub fn dump(&self) -> String {
        self.requests()
            .iter()
            .map(Recorded::summary)
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[track_caller]
    pub fn assert_no_unexpected(&self) {
        let u = self.unexpected();
        if !u.is_empty() {
            let mut msg = format!("{} unexpected request(s):\n", u.len());
            for r in &u {
                let body: String = r
                    .body
                    .as_ref()
                    .map(|b| b.to_string())
                    .unwrap_or_default()
                    .chars()
                    .take(1500)
                    .collect();
                msg.push_str(&format!("  {}\n    body: {body}\n", r.summary()));
            }
            panic!("{msg}");
        }
    }

    /// Wait until `pred` holds for the requests so far; false on timeout.
    pub async fn wait_for(&self, pred: impl Fn(&[Recorded]) -> bool, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if pred(&self.shared.log.lock().unwrap()) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for HttpFake {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(sock: TcpStream, sh: Arc<Shared>) -> std::io::Result<()> {
    let _ = sock.set_nodelay(true);
    let (rd, mut wr) = sock.into_split();
    let mut rd = BufReader::new(rd);
    while let Some(req) = read_request(&mut rd).await? {
        let close = req
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let answer = sh.handler.answer(&req);
        let index = {
            let mut log = sh.log.lock().unwrap();
            let index = log.len();
            log.push(Recorded {
                index,
                method: req.method.clone(),
                path: req.path.clone(),
                headers: req.headers.clone(),
                body: req.json().or_else(|| {
                    (!req.body.is_empty())
                        .then(|| Value::String(String::from_utf8_lossy(&req.body).into_owned()))
                }),
                rule: answer.rule,
                unexpected: answer.unexpected,
                aborted: false,
                at: sh.started.elapsed().as_secs_f64(),
            });
            index
        };
        if let Err(e) = send(&mut wr, &answer.reply).await {
            sh.log.lock().unwrap()[index].aborted = true;
            return Err(e);
        }
        if close {
            break;
        }
    }
    let _ = wr.shutdown().await;
    Ok(())
}

async fn send(wr: &mut OwnedWriteHalf, reply: &Reply) -> std::io::Result<()> {
    match reply {
        Reply::Json { status, body } => {
            let body = body.to_string();
            let head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: keep-alive\r\n\r\n",
                reason(*status),
                body.len()
            );
            wr.write_all(head.as_bytes()).await?;
            wr.write_all(body.as_bytes()).await?;
            wr.flush().await
        }
        Reply::Sse { events, delay, gap } => {
            if !delay.is_zero() {
                tokio::time::sleep(*delay).await;
            }
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n";
            wr.write_all(head.as_bytes()).await?;
            wr.flush().await?;
            for e in events {
                if !gap.is_zero() {
                    tokio::time::sleep(*gap).await;
                }
                let text = match &e.event {
                    Some(name) => format!("event: {name}\ndata: {}\n\n", e.data),
                    None => format!("data: {}\r\n\r\n", e.data),
                };
                wr.write_all(format!("{:x}\r\n{text}\r\n", text.len()).as_bytes())
                    .await?;
                wr.flush().await?;
            }
            wr.write_all(b"0\r\n\r\n").await?;
            wr.flush().await
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
