//! MCP over Streamable HTTP (`--listen ADDR`): rmcp's HTTP transport behind a bearer token.
//!
//! rmcp answers the transport itself: `POST /mcp` bodies bounded (413 past the limit),
//! `Origin` checked (403 for any origin not allowed; with none allowed, every browser origin
//! is refused), `Host` checked on loopback, `Mcp-Session-Id` for clients that negotiated an
//! `initialize` revision and none for `2026-07-28`. In front of it, this module listens, gives
//! each connection a header deadline and each body a deadline (408), holds at most
//! `max_connections` connections (one more is answered 503 and closed) and `max_sessions`
//! sessions (an `initialize` past it is answered 503), and refuses a request without the
//! bearer token (401) when the server has one. A non-loopback address needs a token.

use crate::duplicates::screen_body;
use crate::error::McpError;
use crate::server::McpServer;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::io::Read;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";
/// The most bytes of a token file read.
const TOKEN_FILE_BYTES: u64 = 4096;
/// How long a connection may take to send a request's headers.
const HEADER_DEADLINE: Duration = Duration::from_secs(10);

/// Where and how to listen.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// The address; a loopback one unless a token is given.
    pub addr: SocketAddr,
    /// The bearer token every request must carry (`Authorization: Bearer TOKEN`).
    pub token: Option<String>,
    /// Browser origins allowed (`http://localhost:5173`); every other `Origin` is refused.
    pub allowed_origins: Vec<String>,
    /// Connections served at once (`mcp_http_connections`).
    pub max_connections: usize,
    /// Sessions held at once (`mcp_http_sessions`).
    pub max_sessions: usize,
    /// How long a request's body may take to arrive (`mcp_http_body_milliseconds`).
    pub body_wait: Duration,
}

impl HttpOptions {
    /// Options for `addr` with no token, no browser origin, and the catalogue's defaults.
    pub fn new(addr: SocketAddr) -> HttpOptions {
        let count =
            |def: &runx_profile::LimitDef| usize::try_from(def.default).unwrap_or(usize::MAX);
        HttpOptions {
            addr,
            token: None,
            allowed_origins: Vec::new(),
            max_connections: count(&runx_profile::MCP_HTTP_CONNECTIONS),
            max_sessions: count(&runx_profile::MCP_HTTP_SESSIONS),
            body_wait: Duration::from_millis(runx_profile::MCP_HTTP_BODY_WAIT.default),
        }
    }
}

/// Reads a bearer token from `path`: one line, the file readable by its owner alone.
pub fn read_token(path: &Path) -> Result<String, McpError> {
    let bad = |why: String| McpError::Token(format!("--token-file {}: {why}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let meta = file.metadata().map_err(|e| bad(e.to_string()))?;
    if !meta.is_file() {
        return Err(bad("not a regular file".into()));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(bad(format!(
            "mode {:o} lets others read the token; chmod 600 it",
            meta.permissions().mode() & 0o777
        )));
    }
    let mut text = String::new();
    file.take(TOKEN_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| bad(e.to_string()))?;
    if text.len() as u64 > TOKEN_FILE_BYTES {
        return Err(bad(format!("more than {TOKEN_FILE_BYTES} bytes")));
    }
    let token = text.trim();
    if token.is_empty() || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(
            "the token must be one non-empty line without spaces".into()
        ));
    }
    Ok(token.to_string())
}

/// Serves `server` over Streamable HTTP on `options.addr` until `stop` is cancelled. Writes
/// `runx mcp: listening on http://ADDR/mcp` to stderr once it listens (with the port chosen,
/// for port 0).
pub async fn serve_http(
    server: McpServer,
    options: HttpOptions,
    max_body_bytes: usize,
    stop: CancellationToken,
) -> Result<(), McpError> {
    let loopback = options.addr.ip().is_loopback();
    if !loopback && options.token.is_none() {
        return Err(McpError::Token(format!(
            "--listen {} is not a loopback address: anyone who reaches it could run the tools; give a bearer token with --token-file FILE",
            options.addr
        )));
    }
    let listener = TcpListener::bind(options.addr)
        .await
        .map_err(|source| McpError::Listen {
            addr: options.addr.to_string(),
            source,
        })?;
    let bound = listener.local_addr().unwrap_or(options.addr);
    eprintln!("runx mcp: listening on http://{bound}{MCP_PATH}");
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(max_body_bytes)
        .with_cancellation_token(stop.child_token())
        .enforce_origin_validation()
        .with_allowed_origins(options.allowed_origins);
    if !loopback {
        // DNS rebinding reaches loopback servers; a server on another address is reached by
        // its own names, and the token guards it.
        config = config.disable_allowed_hosts();
    }
    let sessions = Arc::new(LocalSessionManager::default());
    let service = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
    let token: Arc<Option<String>> = Arc::new(options.token);
    let connections = Arc::new(Semaphore::new(options.max_connections));
    let (max_connections, max_sessions, body_wait) = (
        options.max_connections,
        options.max_sessions,
        options.body_wait,
    );
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop.cancelled() => return Ok(()),
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            tokio::spawn(refuse_connection(stream, max_connections));
            continue;
        };
        let service = service.clone();
        let token = token.clone();
        let stop = stop.clone();
        let sessions = sessions.clone();
        tokio::spawn(async move {
            // Held for as long as the connection lives.
            let _permit = permit;
            let handler = service_fn(move |request: Request<Incoming>| {
                let service = service.clone();
                let token = token.clone();
                let sessions = sessions.clone();
                async move {
                    if let Some(refused) = refuse(&request, token.as_deref()) {
                        return Ok::<_, Infallible>(refused);
                    }
                    if request.method() == http::Method::DELETE {
                        // rmcp answers a session's end 202; the SDKs count 200 and 204 as
                        // ended (the Python SDK logs "Session termination failed: 202").
                        let mut response = service.handle(request).await;
                        if response.status() == StatusCode::ACCEPTED {
                            *response.status_mut() = StatusCode::OK;
                        }
                        return Ok(response);
                    }
                    if request.method() != http::Method::POST {
                        return Ok(service.handle(request).await);
                    }
                    // The body is read here, within the same bound rmcp keeps, so that a
                    // message naming a key twice is refused before rmcp parses it.
                    let (parts, body) = request.into_parts();
                    let collecting = http_body_util::Limited::new(body, max_body_bytes).collect();
                    let bytes = match tokio::time::timeout(body_wait, collecting).await {
                        Ok(Ok(collected)) => collected.to_bytes(),
                        Ok(Err(_)) => {
                            return Ok(plain(
                                StatusCode::PAYLOAD_TOO_LARGE,
                                "payload too large: the body is over the server's message limit, or was cut off",
                            ));
                        }
                        Err(_) => {
                            return Ok(plain(
                                StatusCode::REQUEST_TIMEOUT,
                                "request timeout: the body did not arrive in time (--body-timeout)",
                            ));
                        }
                    };
                    if !parts.headers.contains_key("mcp-session-id")
                        && opens_a_session(&bytes)
                        && sessions.sessions.read().await.len() >= max_sessions
                    {
                        return Ok(json(
                            StatusCode::SERVICE_UNAVAILABLE,
                            &json_error(&format!(
                                "too many sessions: this server holds at most {max_sessions} (--max-sessions); end one with DELETE, or try again when one has expired"
                            )),
                        ));
                    }
                    if let Some(refusal) = screen_body(&bytes) {
                        return Ok(json(StatusCode::BAD_REQUEST, &refusal));
                    }
                    Ok(service
                        .handle(Request::from_parts(parts, Full::new(bytes)))
                        .await)
                }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_DEADLINE)
                .serve_connection(TokioIo::new(stream), handler);
            tokio::pin!(connection);
            tokio::select! {
                done = &mut connection => if let Err(e) = done {
                    tracing::debug!(%peer, "connection ended: {e}");
                },
                () = stop.cancelled() => connection.as_mut().graceful_shutdown(),
            }
        });
    }
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// Answers a connection past `max` with 503 and closes it. What the client sent first is read
/// (briefly) so that the answer is not lost to a reset; the whole exchange is bounded in time.
async fn refuse_connection(mut stream: TcpStream, max: usize) {
    let body = format!(
        "service unavailable: this server holds at most {max} connections at once (--max-connections); try again\n"
    );
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut first = [0u8; 8192];
    let _ = tokio::time::timeout(Duration::from_millis(100), stream.read(&mut first)).await;
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(answer.as_bytes())).await;
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.shutdown()).await;
}

/// Whether a request body is an `initialize`, the one request that opens a session (a batch
/// is refused by rmcp anyway).
fn opens_a_session(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Method<'_>>(body)
        .ok()
        .and_then(|m| m.method)
        .is_some_and(|m| m == "initialize")
}

/// A JSON-RPC error with no id.
fn json_error(message: &str) -> serde_json::Value {
    serde_json::json!({
        "jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": message},
    })
}

/// `body` as an HTTP answer of `status`.
fn json(status: StatusCode, body: &serde_json::Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// The answer to a request that does not reach MCP: another path (404), or no or a wrong
/// bearer token (401).
fn refuse(request: &Request<Incoming>, token: Option<&str>) -> Option<Response<Body>> {
    if request.uri().path() != MCP_PATH {
        return Some(plain(
            StatusCode::NOT_FOUND,
            "not found: the MCP endpoint is /mcp",
        ));
    }
    let token = token?;
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if given.is_some_and(|g| same(g.as_bytes(), token.as_bytes())) {
        return None;
    }
    let mut response = plain(
        StatusCode::UNAUTHORIZED,
        "unauthorized: send Authorization: Bearer TOKEN",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static("Bearer"),
    );
    Some(response)
}

/// Whether `a` and `b` are equal, taking the same time wherever they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
        assert!(!same(b"", b"a"));
    }

    #[test]
    fn token_files_must_be_private_and_one_word() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("token");
        std::fs::write(&path, "s3cret\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(read_token(&path).is_err());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_eq!(read_token(&path).expect("token"), "s3cret");
        std::fs::write(&path, "two words\n").expect("write");
        assert!(read_token(&path).is_err());
        std::fs::write(&path, "\n").expect("write");
        assert!(read_token(&path).is_err());
    }
}
