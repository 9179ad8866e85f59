//! A fake agent host B on loopback, for the tests and for `switchboard demo-gateway`: it
//! checks the channel path and the bearer header, then hands each accepted connection to
//! its driver, which sends scripted calls and reads the results. Faults on demand: answer
//! the upgrade with a redirect or a 401, so a test can prove A neither follows nor leaks.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// How the host answers the next upgrade.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    /// `302 Found` to another origin.
    Redirect,
}

pub struct FakeHost {
    pub port: u16,
    /// Every TCP connection the host saw (a followed redirect would show up here).
    pub connections: Arc<AtomicUsize>,
    /// Every request line + headers that failed the check, for the test's eyes.
    pub refusals: Arc<std::sync::Mutex<Vec<String>>>,
    conns: mpsc::Receiver<Conn>,
    fault: Arc<std::sync::Mutex<Fault>>,
}

/// One accepted channel, as B sees it.
pub struct Conn {
    ws: tokio_tungstenite::WebSocketStream<TcpStream>,
}

impl FakeHost {
    /// Listen on 127.0.0.1 (port 0: any) for `workspace`, accepting only `Bearer <token>`.
    // The handshake callback's error type is tungstenite's own, as large as it is.
    #[allow(clippy::result_large_err)]
    pub async fn start(port: u16, workspace: &str, token: &str) -> std::io::Result<FakeHost> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        let (tx, rx) = mpsc::channel(16);
        let connections = Arc::new(AtomicUsize::new(0));
        let refusals = Arc::new(std::sync::Mutex::new(Vec::new()));
        let fault = Arc::new(std::sync::Mutex::new(Fault::None));
        let path = format!("/api/ai-gateway/v1/workspaces/{workspace}/channel");
        let want = format!("Bearer {token}");
        let (c2, r2, f2) = (connections.clone(), refusals.clone(), fault.clone());
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                c2.fetch_add(1, Ordering::SeqCst);
                let f = *f2.lock().unwrap_or_else(|p| p.into_inner());
                if f == Fault::Redirect {
                    let mut buf = [0u8; 4096];
                    let _ = tcp.read(&mut buf).await;
                    let _ = tcp
                        .write_all(b"HTTP/1.1 302 Found\r\nLocation: ws://127.0.0.2:1/elsewhere\r\nContent-Length: 0\r\n\r\n")
                        .await;
                    continue;
                }
                let (path, want, refusals, tx) =
                    (path.clone(), want.clone(), r2.clone(), tx.clone());
                tokio::spawn(async move {
                    let check =
                        move |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
                            let auth = req
                                .headers()
                                .get("authorization")
                                .and_then(|v| v.to_str().ok());
                            let why = if req.uri().path() != path {
                                Some(format!("wrong path {}", req.uri()))
                            } else if req.uri().query().is_some() {
                                Some("query in the URL".to_string())
                            } else if auth != Some(want.as_str()) {
                                Some("missing or wrong bearer token".to_string())
                            } else {
                                None
                            };
                            match why {
                                None => Ok(resp),
                                Some(w) => {
                                    refusals.lock().unwrap_or_else(|p| p.into_inner()).push(w);
                                    let mut r = ErrorResponse::new(None);
                                    *r.status_mut() = StatusCode::UNAUTHORIZED;
                                    Err(r)
                                }
                            }
                        };
                    // B's own reader allows larger frames, so tests can send an oversize one.
                    let cfg = WebSocketConfig::default()
                        .max_message_size(Some(8 << 20))
                        .max_frame_size(Some(8 << 20));
                    if let Ok(ws) =
                        tokio_tungstenite::accept_hdr_async_with_config(tcp, check, Some(cfg)).await
                    {
                        let _ = tx.send(Conn { ws }).await;
                    }
                });
            }
        });
        Ok(FakeHost {
            port,
            connections,
            refusals,
            conns: rx,
            fault,
        })
    }

    pub fn base_url(&self) -> String {
        format!("ws://127.0.0.1:{}", self.port)
    }

    pub fn set_fault(&self, f: Fault) {
        *self.fault.lock().unwrap_or_else(|p| p.into_inner()) = f;
    }

    /// The next accepted channel (`None` after `wait`).
    pub async fn accept(&mut self, wait: Duration) -> Option<Conn> {
        tokio::time::timeout(wait, self.conns.recv())
            .await
            .ok()
            .flatten()
    }
}

/// A call frame as B would send it.
pub fn call(
    id: &str,
    workspace: &str,
    session: &str,
    intention: &str,
    tool: &str,
    args: Value,
) -> String {
    json!({"type": "call", "protocol": 1, "id": id, "workspaceId": workspace, "sessionId": session,
           "intention": intention, "tool": tool, "args": args})
    .to_string()
}

impl Conn {
    pub async fn send(&mut self, text: String) -> bool {
        self.ws.send(Message::text(text)).await.is_ok()
    }

    /// The next text frame, raw (`None` on close, error or timeout).
    pub async fn recv_raw(&mut self, wait: Duration) -> Option<String> {
        loop {
            match tokio::time::timeout(wait, self.ws.next()).await {
                Ok(Some(Ok(Message::Text(t)))) => return Some(t.as_str().to_string()),
                Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => continue,
                _ => return None,
            }
        }
    }

    /// The next result frame for `id`, raw; other frames (ready) are skipped.
    pub async fn result_for(&mut self, id: &str, wait: Duration) -> Option<String> {
        loop {
            let t = self.recv_raw(wait).await?;
            let v: Value = serde_json::from_str(&t).ok()?;
            if v["type"] == "result" && v["id"] == id {
                return Some(t);
            }
        }
    }

    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

/// The code of a result frame (`ok` for a success).
pub fn code_of(frame: &str) -> String {
    let v: Value = serde_json::from_str(frame).unwrap_or_default();
    v["result"]["structuredContent"]["code"]
        .as_str()
        .unwrap_or("ok")
        .to_string()
}
