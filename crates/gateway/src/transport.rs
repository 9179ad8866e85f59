//! The channel on the wire (reference §3, §8): a WebSocket A opens to B, the bearer token
//! only in the handshake header, no redirect followed, `ws://` only to loopback, 2 MiB
//! frames both ways, `ready` sent at once, reconnect with backoff, the channel caps.
//!
//! The engine does the work; this loop only moves frames, records them (after the upgrade:
//! headers never reach a recording) and forwards what the owner must see.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::codec::{self, FRAME_BYTES};
use super::engine::{Decision, Engine, Out};
use switchboard_record::{Dir, Recorder};

/// Channels at once per bearer token and in all (spec `limits`).
pub const CHANNELS_PER_TOKEN: usize = 4;
pub const CHANNELS: usize = 20;
/// Reconnect backoff: doubling from the first to the cap, with jitter.
pub const BACKOFF_FIRST: Duration = Duration::from_millis(500);
pub const BACKOFF_CAP: Duration = Duration::from_secs(60);
/// A connection that stayed up this long was healthy: the reconnect delay starts over.
pub const HEALTHY: Duration = Duration::from_secs(30);

/// The bearer token. It prints as `[redacted]` in every `Debug` and `Display`, so no log
/// line, panic message or recording can carry it; only the handshake header sees the bytes.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    pub fn new(s: String) -> Result<Token, String> {
        let s = s.trim().to_string();
        if s.is_empty() {
            return Err("the token is empty".into());
        }
        if s.chars().any(|c| c.is_control() || c == ' ') {
            return Err("the token has spaces or control characters".into());
        }
        Ok(Token(s))
    }

    fn header(&self) -> Result<HeaderValue, String> {
        let mut v = HeaderValue::from_str(&format!("Bearer {}", self.0))
            .map_err(|_| "the token is not a valid header value".to_string())?;
        v.set_sensitive(true);
        Ok(v)
    }

    fn fingerprint(&self) -> String {
        super::validate::sha256_hex(self.0.as_bytes())
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The channel URL: the host's base plus `/api/ai-gateway/v1/workspaces/{id}/channel`, the
/// id percent-encoded as one segment. No query, fragment or credentials in the URL; `ws://`
/// only to a loopback host.
pub fn channel_url(base: &str, workspace: &str) -> Result<String, String> {
    let (scheme, rest) = base
        .split_once("://")
        .ok_or_else(|| format!("{base:?} is not a ws:// or wss:// URL"))?;
    if rest.contains(['?', '#', '@']) {
        return Err("the URL may not carry a query, a fragment or credentials: the token goes only in the Authorization header".into());
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let host = if let Some(h) = authority.strip_prefix('[') {
        h.split(']').next().unwrap_or_default()
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    if host.is_empty() {
        return Err("the URL has no host".into());
    }
    match scheme {
        "ws" if is_loopback(host) => {}
        "ws" => {
            return Err(format!(
                "ws:// is refused except to loopback ({host} is not): use wss://"
            ));
        }
        "wss" => {}
        s => return Err(format!("{s}:// is not a WebSocket scheme")),
    }
    let mut seg = String::new();
    for b in workspace.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            seg.push(b as char);
        } else {
            seg.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(format!(
        "{scheme}://{authority}{path}/api/ai-gateway/v1/workspaces/{seg}/channel"
    ))
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(FRAME_BYTES))
        .max_frame_size(Some(FRAME_BYTES))
}

/// A slot under the channel caps, released on drop.
pub struct ChannelSlot {
    fingerprint: String,
}

fn slots() -> &'static Mutex<HashMap<String, usize>> {
    static S: std::sync::OnceLock<Mutex<HashMap<String, usize>>> = std::sync::OnceLock::new();
    S.get_or_init(|| Mutex::new(HashMap::new()))
}

impl ChannelSlot {
    pub fn take(token: &Token) -> Result<ChannelSlot, String> {
        let mut m = slots().lock().unwrap_or_else(|p| p.into_inner());
        let total: usize = m.values().sum();
        let fp = token.fingerprint();
        let mine = m.get(&fp).copied().unwrap_or(0);
        if total >= CHANNELS || mine >= CHANNELS_PER_TOKEN {
            return Err(format!(
                "channel limit reached ({CHANNELS_PER_TOKEN} per token, {CHANNELS} in all)"
            ));
        }
        m.insert(fp.clone(), mine + 1);
        Ok(ChannelSlot { fingerprint: fp })
    }
}

impl Drop for ChannelSlot {
    fn drop(&mut self) {
        let mut m = slots().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = m.get_mut(&self.fingerprint) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                m.remove(&self.fingerprint);
            }
        }
    }
}

/// What the owner's side hears from the channel.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Connected {
        url: String,
    },
    /// The connection ended or failed; `retry_in` is the backoff before the next attempt
    /// (`None`: the channel gives up, e.g. a refused URL or a protocol mismatch).
    Disconnected {
        reason: String,
        retry_in: Option<Duration>,
    },
    /// From the engine: a card, a join, an audit row, a dropped frame.
    Engine(Out),
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

/// TLS for `wss://`: rustls on the ring provider with Mozilla's roots (plus `extra_roots`,
/// which only the tests use, for their throwaway certificate).
fn tls_config(
    extra_roots: &[rustls::pki_types::CertificateDer<'static>],
) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for r in extra_roots {
        roots
            .add(r.clone())
            .map_err(|e| format!("bad root certificate: {e}"))?;
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
}

/// Open the socket. Any answer but 101 is a failure: a redirect is never followed.
pub async fn connect(url: &str, token: &Token) -> Result<Ws, String> {
    connect_with_roots(url, token, &[]).await
}

/// `connect`, trusting `extra_roots` besides the public ones (for tests).
pub async fn connect_with_roots(
    url: &str,
    token: &Token,
    extra_roots: &[rustls::pki_types::CertificateDer<'static>],
) -> Result<Ws, String> {
    let mut req = url
        .into_client_request()
        .map_err(|e| format!("bad URL: {e}"))?;
    req.headers_mut().insert("Authorization", token.header()?);
    let tls = req.uri().scheme_str() == Some("wss");
    let host = req
        .uri()
        .host()
        .unwrap_or_default()
        .trim_matches(['[', ']'])
        .to_string();
    let port = req.uri().port_u16().unwrap_or(if tls { 443 } else { 80 });
    let connector = if tls {
        tokio_tungstenite::Connector::Rustls(Arc::new(tls_config(extra_roots)?))
    } else {
        tokio_tungstenite::Connector::Plain
    };
    let tcp = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| format!("cannot reach {host}:{port}: {e}"))?;
    match tokio_tungstenite::client_async_tls_with_config(
        req,
        tcp,
        Some(ws_config()),
        Some(connector),
    )
    .await
    {
        Ok((ws, _)) => Ok(ws),
        // The token itself was refused: retrying with the same one cannot help.
        Err(tokio_tungstenite::tungstenite::Error::Http(resp))
            if matches!(resp.status().as_u16(), 401 | 403) =>
        {
            Err(format!(
                "{REFUSED}: the host answered HTTP {}; check the token (--token-file / --token-env or the profile's token_file / token_env) and start the channel again",
                resp.status()
            ))
        }
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => Err(format!(
            "the host answered HTTP {} instead of switching protocols (redirects are not followed)",
            resp.status()
        )),
        Err(e) => Err(format!("handshake failed: {e}")),
    }
}

/// The channel's life: connect, send `ready`, serve frames, reconnect with backoff, until
/// `decisions` closes (the owner quit). Waiting calls stay unanswered and unjournaled.
/// How a connection error that no retry can heal begins (the token was refused).
pub const REFUSED: &str = "the host refused our credentials";

pub async fn run(
    engine: Arc<Mutex<Engine>>,
    url: String,
    token: Token,
    recorder: Option<Arc<Mutex<Recorder>>>,
    events: mpsc::Sender<Event>,
    mut decisions: mpsc::UnboundedReceiver<(u64, Decision)>,
) {
    let record = |dir: Dir, line: &str| {
        if let Some(r) = &recorder {
            let _ = r
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .record(dir, line);
        }
    };
    let _slot = match ChannelSlot::take(&token) {
        Ok(s) => s,
        Err(reason) => {
            let _ = events
                .send(Event::Disconnected {
                    reason,
                    retry_in: None,
                })
                .await;
            return;
        }
    };
    let mut backoff = switchboard_backend::backoff::Backoff::new(BACKOFF_FIRST, BACKOFF_CAP);
    loop {
        let reason = match connect(&url, &token).await {
            Err(e) if e.starts_with(REFUSED) => {
                // One row, no retry loop: the owner fixes the token and starts again.
                let _ = events
                    .send(Event::Disconnected {
                        reason: e,
                        retry_in: None,
                    })
                    .await;
                return;
            }
            Err(e) => e,
            Ok(mut ws) => {
                let up = std::time::Instant::now();
                let _ = events.send(Event::Connected { url: url.clone() }).await;
                // Never wait for B's ready first: both waiting would deadlock.
                let ready = codec::ready_frame();
                record(Dir::Out, &ready);
                match ws.send(Message::text(ready)).await {
                    Err(e) => format!("could not send ready: {e}"),
                    Ok(()) => match serve(&engine, &mut ws, &events, &mut decisions, &record).await
                    {
                        Served::Quit => {
                            let _ = ws.close(None).await;
                            return;
                        }
                        Served::Close(reason) => {
                            tracing::warn!(target: "gateway", "closing the channel: {reason}");
                            let _ = ws.close(None).await;
                            let _ = events
                                .send(Event::Disconnected {
                                    reason,
                                    retry_in: None,
                                })
                                .await;
                            return;
                        }
                        Served::Lost(reason) => {
                            backoff.ended_after(up.elapsed(), HEALTHY);
                            reason
                        }
                    },
                }
            }
        };
        // Jitter: up to a quarter of the delay, from the clock's low bits.
        let (_, wait) = backoff.next_wait();
        let _ = events
            .send(Event::Disconnected {
                reason,
                retry_in: Some(wait),
            })
            .await;
        // Decisions taken while disconnected are journaled; B gets them on its re-send.
        let deadline = tokio::time::sleep(wait);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                _ = &mut deadline => break,
                d = decisions.recv() => match d {
                    None => return,
                    Some((gate, d)) => {
                        let outs = engine.lock().unwrap_or_else(|p| p.into_inner()).decide(gate, d);
                        for o in outs {
                            if !matches!(o, Out::Send(_)) {
                                let _ = events.send(Event::Engine(o)).await;
                            }
                        }
                    }
                },
            }
        }
    }
}

enum Served {
    Quit,
    Close(String),
    Lost(String),
}

async fn serve(
    engine: &Arc<Mutex<Engine>>,
    ws: &mut Ws,
    events: &mpsc::Sender<Event>,
    decisions: &mut mpsc::UnboundedReceiver<(u64, Decision)>,
    record: &impl Fn(Dir, &str),
) -> Served {
    loop {
        let outs = tokio::select! {
            m = ws.next() => match m {
                None => return Served::Lost("the host closed the channel".into()),
                Some(Err(e)) => {
                    // An oversize frame ends here: it was never parsed, so nothing ran.
                    let reason = format!("channel error: {e}");
                    tracing::warn!(target: "gateway", "{reason}");
                    return Served::Lost(reason);
                }
                Some(Ok(Message::Text(t))) => {
                    record(Dir::In, t.as_str());
                    let e = engine.clone();
                    let text = t.as_str().to_string();
                    // File and journal work (fsync) off the runtime's workers.
                    match tokio::task::spawn_blocking(move || e.lock().unwrap_or_else(|p| p.into_inner()).on_frame(&text)).await {
                        Ok(o) => o,
                        Err(_) => return Served::Lost("the engine failed".into()),
                    }
                }
                Some(Ok(Message::Binary(_))) => vec![Out::Dropped("binary frame ignored".into())],
                Some(Ok(Message::Close(_))) => return Served::Lost("the host closed the channel".into()),
                Some(Ok(_)) => continue,
            },
            d = decisions.recv() => match d {
                None => return Served::Quit,
                Some((gate, d)) => {
                    let e = engine.clone();
                    match tokio::task::spawn_blocking(move || e.lock().unwrap_or_else(|p| p.into_inner()).decide(gate, d)).await {
                        Ok(o) => o,
                        Err(_) => return Served::Lost("the engine failed".into()),
                    }
                }
            },
        };
        for o in outs {
            match o {
                Out::Send(frame) => {
                    record(Dir::Out, &frame);
                    if let Err(e) = ws.send(Message::text(frame.clone())).await {
                        // Journaled already: B's re-send is answered from the journal.
                        return Served::Lost(format!("could not send a result: {e}"));
                    }
                    // Handed to the socket: the receipt is `sent` (the peer may have it).
                    let e = engine.clone();
                    let marked = tokio::task::spawn_blocking(move || {
                        e.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .mark_sent(&frame)
                    })
                    .await;
                    if let Ok(Err(e)) = marked {
                        tracing::warn!(target: "gateway", "receipt not marked sent: {e}");
                    }
                }
                Out::Close(reason) => return Served::Close(reason),
                other => {
                    if events.send(Event::Engine(other)).await.is_err() {
                        return Served::Quit;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_carry_no_credentials_and_ws_only_to_loopback() {
        assert_eq!(
            channel_url("ws://127.0.0.1:9/", "a b/c").unwrap(),
            "ws://127.0.0.1:9/api/ai-gateway/v1/workspaces/a%20b%2Fc/channel"
        );
        assert!(channel_url("ws://[::1]:9", "w").is_ok());
        assert!(channel_url("ws://localhost", "w").is_ok());
        assert!(channel_url("ws://example.com", "w").is_err());
        assert!(channel_url("ws://127.0.0.1:9/?token=x", "w").is_err());
        assert!(channel_url("ws://u:p@127.0.0.1:9", "w").is_err());
        assert!(channel_url("http://127.0.0.1", "w").is_err());
        assert_eq!(
            channel_url("wss://host.example:8443/base/", "w").unwrap(),
            "wss://host.example:8443/base/api/ai-gateway/v1/workspaces/w/channel"
        );
    }

    #[test]
    fn the_token_never_prints() {
        let t = Token::new("s3cr3t-token".into()).unwrap();
        assert_eq!(
            format!("{t} {t:?} {:?}", Some(&t)),
            "[redacted] [redacted] Some([redacted])"
        );
        assert!(t.header().unwrap().is_sensitive());
    }

    #[test]
    fn caps_per_token() {
        let t = Token::new("cap-test-token".into()).unwrap();
        let held: Vec<_> = (0..CHANNELS_PER_TOKEN)
            .map(|_| ChannelSlot::take(&t).unwrap())
            .collect();
        assert!(ChannelSlot::take(&t).is_err());
        drop(held);
        assert!(ChannelSlot::take(&t).is_ok());
    }
}
