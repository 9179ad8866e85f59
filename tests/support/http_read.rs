//! Reading one HTTP/1.1 request off a connection: the request line, headers (names
//! lower-cased), and a `Content-Length` or chunked body. Shared by the test servers
//! (`http_fake.rs`, `fake_model.rs`).
#![allow(dead_code)]

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// One request as it arrived.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// The target with its query (`/v1beta/models/m:streamGenerateContent?alt=sse`).
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The path without its query.
    pub fn route(&self) -> &str {
        route(&self.path)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// The body as JSON, if it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// A request target without its query.
pub fn route(path: &str) -> &str {
    path.split('?').next().unwrap_or("")
}

/// The value of header `name` among lower-cased `headers`, whatever the case of `name`.
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    let name = name.to_ascii_lowercase();
    headers
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.as_str())
}

/// The next request (`None`: the peer closed the connection).
pub async fn read_request(
    rd: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    loop {
        line.clear();
        if rd.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut headers = vec![];
    loop {
        let mut h = String::new();
        if rd.read_line(&mut h).await? == 0 {
            return Ok(None);
        }
        let h = h.trim_end_matches(['\r', '\n']);
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut req = Request {
        method,
        path,
        headers,
        body: vec![],
    };
    if req
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    {
        loop {
            let mut size = String::new();
            if rd.read_line(&mut size).await? == 0 {
                return Ok(None);
            }
            let size = size
                .trim()
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            let n = usize::from_str_radix(&size, 16)
                .map_err(|_| std::io::Error::other("bad chunk size"))?;
            if n == 0 {
                loop {
                    let mut t = String::new();
                    if rd.read_line(&mut t).await? == 0 || t.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let mut chunk = vec![0u8; n];
            rd.read_exact(&mut chunk).await?;
            req.body.extend_from_slice(&chunk);
            let mut crlf = [0u8; 2];
            rd.read_exact(&mut crlf).await?;
        }
    } else if let Some(n) = req.header("content-length").and_then(|v| v.parse().ok()) {
        req.body = vec![0u8; n];
        rd.read_exact(&mut req.body).await?;
    }
    Ok(Some(req))
}
