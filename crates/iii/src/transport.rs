//! The engine socket (reference §1.1, §2.2, §7, §8): the URL rule (`ws://` only to loopback),
//! the `--header` values sent on the handshake and never shown, the reconnect backoff with
//! jitter, and which calls may be sent again after their result was lost.

use std::time::Duration;

use serde_json::Value;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::codec::FRAME_BYTES;

pub type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

/// The engine's default worker port (reference §1.1).
pub const DEFAULT_ENGINE: &str = "ws://127.0.0.1:49134";

/// Reconnect backoff (reference §8): doubling from the first delay to the cap, plus jitter.
pub const BACKOFF_FIRST: Duration = Duration::from_millis(250);
pub const BACKOFF_CAP: Duration = Duration::from_secs(30);

/// Calls that may be sent again after the socket dropped before their result came
/// (reference §7). Everything else fails with `disconnected` and the user decides again.
pub const RETRY_SAFE: [&str; 23] = [
    // Writes that are idempotent by contract.
    "harness::stop",
    "approval::resolve",
    "approval::approve-always",
    "harness::unqueue",
    "harness::edit_queued",
    // Reads: no effect.
    "session::list",
    "session::get",
    "session::messages",
    "session::get_message",
    "harness::status",
    "harness::session-tree",
    "harness::metrics",
    "harness::filesystem::info",
    "harness::filesystem::grants",
    "harness::triggers::list",
    "approval::list-pending",
    "approval::get-pending",
    "approval::get-settings",
    "engine::functions::list",
    "engine::functions::info",
    "engine::workers::list",
    "engine::workers::info",
    "engine::registered-triggers::list",
];

/// May `function_id` with `data` be sent again after a lost result? `harness::send` only
/// with an `idempotency_key` (a repeated key appends nothing).
pub fn retry_safe(function_id: &str, data: &Value) -> bool {
    if function_id == "harness::send" {
        return data
            .get("idempotency_key")
            .and_then(Value::as_str)
            .is_some_and(|k| !k.is_empty());
    }
    RETRY_SAFE.contains(&function_id)
}

/// How a connection error that no retry can heal begins (the handshake was refused).
pub const REFUSED: &str = "the engine refused our handshake";

/// One `--header 'Name: value'`. The value prints as `[redacted]` everywhere; only the
/// handshake sees its bytes.
#[derive(Clone)]
pub struct Header {
    name: HeaderName,
    value: HeaderValue,
}

impl Header {
    pub fn parse(arg: &str) -> Result<Header, String> {
        let (name, value) = arg
            .split_once(':')
            .ok_or_else(|| format!("--header {:?}: expected 'Name: value'", redact_arg(arg)))?;
        let name = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| format!("--header: {:?} is not a header name", name.trim()))?;
        let mut value = HeaderValue::from_str(value.trim())
            .map_err(|_| format!("--header {name}: the value is not a valid header value"))?;
        value.set_sensitive(true);
        Ok(Header { name, value })
    }

    pub fn name(&self) -> &str {
        self.name.as_str()
    }
}

impl std::fmt::Debug for Header {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: [redacted]", self.name)
    }
}

/// `Name: value` → `Name: [redacted]`, for recordings, logs and error messages.
pub fn redact_arg(arg: &str) -> String {
    match arg.split_once(':') {
        Some((name, _)) => format!("{}: [redacted]", name.trim()),
        None => "[redacted]".into(),
    }
}

/// A command line with every `--header` value redacted (for the recording header's argv).
pub fn redact_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut next_is_header = false;
    for a in argv {
        if next_is_header {
            out.push(redact_arg(a));
            next_is_header = false;
        } else if a == "--header" || a == "-H" {
            out.push(a.clone());
            next_is_header = true;
        } else if let Some(v) = a.strip_prefix("--header=") {
            out.push(format!("--header={}", redact_arg(v)));
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// Check an engine URL: `ws://` only to a loopback host (the engine's port is meant for
/// trusted local traffic), `wss://` anywhere; no credentials, query or fragment.
pub fn check_url(url: &str) -> Result<(), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("{url:?} is not a ws:// or wss:// URL"))?;
    if rest.contains(['?', '#', '@']) {
        return Err("the engine URL may not carry a query, a fragment or credentials: pass credentials with --header".into());
    }
    let authority = rest.split('/').next().unwrap_or_default();
    let host = if let Some(h) = authority.strip_prefix('[') {
        h.split(']').next().unwrap_or_default()
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    if host.is_empty() {
        return Err(format!("the engine URL {url:?} has no host"));
    }
    match scheme {
        "ws" if is_loopback(host) => Ok(()),
        "ws" => Err(format!(
            "ws:// is refused except to loopback ({host} is not): use wss://"
        )),
        "wss" => Ok(()),
        s => Err(format!("{s}:// is not a WebSocket scheme")),
    }
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

/// Open the socket with `headers` on the handshake. A redirect is never followed.
pub async fn connect(url: &str, headers: &[Header]) -> Result<Ws, String> {
    check_url(url)?;
    let mut req = url
        .into_client_request()
        .map_err(|e| format!("bad engine URL: {e}"))?;
    for h in headers {
        req.headers_mut().append(h.name.clone(), h.value.clone());
    }
    let connector = if req.uri().scheme_str() == Some("wss") {
        Some(tokio_tungstenite::Connector::Rustls(std::sync::Arc::new(
            tls_config()?,
        )))
    } else {
        None
    };
    match tokio_tungstenite::connect_async_tls_with_config(req, Some(ws_config()), true, connector)
        .await
    {
        Ok((ws, _)) => Ok(ws),
        // Our headers were refused: retrying with the same ones cannot help.
        Err(tokio_tungstenite::tungstenite::Error::Http(resp))
            if matches!(resp.status().as_u16(), 401 | 403) =>
        {
            let names: Vec<&str> = headers.iter().map(|h| h.name.as_str()).collect();
            Err(format!(
                "{REFUSED}: the engine answered HTTP {} to our handshake ({}); fix the --header values (or the profile's headers) and restart the session (X)",
                resp.status(),
                if names.is_empty() {
                    "no headers were sent".to_string()
                } else {
                    format!("headers sent: {}", names.join(", "))
                }
            ))
        }
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => Err(format!(
            "the engine answered HTTP {} instead of switching protocols",
            resp.status()
        )),
        Err(e) => Err(format!("cannot connect to {url}: {e}")),
    }
}

/// TLS for `wss://`: rustls on the ring provider with Mozilla's roots (no system OpenSSL).
fn tls_config() -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS setup: {e}"))
    .map(|b| b.with_root_certificates(roots).with_no_client_auth())
}

pub use switchboard_backend::backoff::Backoff;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert!(check_url("ws://127.0.0.1:49134").is_ok());
        assert!(check_url("ws://[::1]:1").is_ok());
        assert!(check_url("ws://localhost").is_ok());
        assert!(check_url("ws://engine.example:49134").is_err());
        assert!(check_url("wss://engine.example:49134").is_ok());
        assert!(check_url("ws://u:p@127.0.0.1").is_err());
        assert!(check_url("http://127.0.0.1").is_err());
    }

    #[test]
    fn headers_never_print() {
        let h = Header::parse("Authorization: Bearer s3cr3t").unwrap();
        assert_eq!(format!("{h:?}"), "authorization: [redacted]");
        assert!(h.value.is_sensitive());
        assert!(Header::parse("no colon").is_err());
        let err = Header::parse("Bad Name: s3cr3t").err().unwrap();
        assert!(!err.contains("s3cr3t"), "{err}");
        let argv: Vec<String> = [
            "switchboard",
            "iii",
            "--header",
            "Authorization: Bearer s3cr3t",
        ]
        .map(String::from)
        .into();
        let r = redact_argv(&argv).join(" ");
        assert!(
            !r.contains("s3cr3t") && r.contains("Authorization: [redacted]"),
            "{r}"
        );
        assert!(!redact_argv(&["--header=X-Key: s3cr3t".into()])[0].contains("s3cr3t"));
    }

    #[test]
    fn backoff_doubles_to_the_cap_with_bounded_jitter() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(400));
        let waits: Vec<_> = (0..5).map(|_| b.next_wait()).collect();
        for ((n, w), base) in waits.iter().zip([100u64, 200, 400, 400, 400]) {
            assert!(
                *w >= Duration::from_millis(base) && *w <= Duration::from_millis(base * 5 / 4 + 1),
                "{n}: {w:?}"
            );
        }
        assert_eq!(waits[4].0, 5);
        b.reset();
        assert_eq!(b.next_wait().0, 1);
    }

    #[test]
    fn retry_safety_follows_section_7() {
        assert!(retry_safe("approval::resolve", &Value::Null));
        assert!(retry_safe("session::messages", &Value::Null));
        assert!(retry_safe(
            "harness::send",
            &serde_json::json!({"idempotency_key":"k"})
        ));
        assert!(!retry_safe(
            "harness::send",
            &serde_json::json!({"message":"hi"})
        ));
        assert!(!retry_safe("harness::spawn", &Value::Null));
        assert!(!retry_safe("shell::exec", &Value::Null));
    }
}
