//! MCP over stdio: one JSON-RPC message per line each way, through rmcp's line transport.
//!
//! A line longer than the server's message limit is dropped (its bytes are never held) and the
//! server goes on; so is a line that is not JSON, as the official SDKs do, since nothing in it
//! can be answered; JSON that is not a message is answered `-32600`. stdout carries protocol
//! messages only; logs go to stderr.
//!
//! One thin layer sits between the transport and rmcp ([`Opening`]): rmcp ends a session whose
//! first message is not a request, so a client's early `notifications/initialized` (or any
//! stray notification or response) would end the server; until a session opens, those are
//! dropped instead, since nothing may be said to them. Below the transport, each line is
//! checked for a key named twice (`duplicates`), and such a line is answered `-32700` in its
//! place.
//!
//! Backpressure: rmcp writes each answer from a task of its own, so a client that sends and
//! never reads would have answers pile up in memory without end (300,000 pings took 1.5 GB).
//! [`Opening`] counts the answers not yet written, and reads no further message while
//! [`MAX_UNSENT`] are waiting: the client's own writes then block, as they do against `runx
//! serve`.

use crate::duplicates::{REFUSED_METHOD, Screened};
use crate::error::McpError;
use crate::server::McpServer;
use rmcp::model::{
    ClientNotification, ClientRequest, ErrorData, JsonRpcMessage, JsonRpcNotification,
    JsonRpcRequest,
};
use rmcp::service::{QuitReason, RoleServer, RxJsonRpcMessage, TxJsonRpcMessage, serve_server};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use tokio::sync::Notify;

/// Answers waiting to be written before the server reads another message.
pub const MAX_UNSENT: usize = 64;

/// The answers handed to the transport and not yet written.
#[derive(Default)]
struct Backlog {
    unsent: AtomicUsize,
    written: Notify,
}

/// One answer counted in a [`Backlog`] while it lives.
struct Unsent(Arc<Backlog>);

impl Unsent {
    fn new(backlog: &Arc<Backlog>) -> Unsent {
        backlog.unsent.fetch_add(1, Ordering::SeqCst);
        Unsent(backlog.clone())
    }
}

impl Drop for Unsent {
    fn drop(&mut self) {
        self.0.unsent.fetch_sub(1, Ordering::SeqCst);
        self.0.written.notify_waiters();
    }
}

/// Serves `server` on this process's stdin and stdout until the client closes stdin. Calls
/// still running then are given five seconds to answer (rmcp's drain), then cancelled.
pub async fn serve_stdio(server: McpServer, max_message_bytes: usize) -> Result<(), McpError> {
    let (read, write) = rmcp::transport::stdio_pipes();
    let read = Screened::new(read, max_message_bytes);
    let owed = read.owed.clone();
    let transport = AsyncRwTransport::<RoleServer, _, _>::new(read, write)
        .with_max_line_length(max_message_bytes);
    let transport = Opening {
        inner: transport,
        open: false,
        owed,
        backlog: Arc::new(Backlog::default()),
    };
    let running = match serve_server(server, transport).await {
        Ok(r) => r,
        Err(e) => {
            // A client that leaves (or breaks the protocol) before its first request ends
            // its own session; the server has nothing left to do.
            tracing::info!("the client left before a session began: {e}");
            return Ok(());
        }
    };
    match running.waiting().await {
        Ok(QuitReason::JoinError(e)) | Err(e) => {
            tracing::error!("the session ended abnormally: {e}");
        }
        Ok(reason) => tracing::info!(?reason, "the session ended"),
    }
    Ok(())
}

/// A transport that drops what is not a request until a session opens (an `initialize`, or a
/// first request other than `ping` and `server/discover`, which rmcp answers before one), and
/// answers the lines [`Screened`] refused for naming a key twice, in their place in the stream.
struct Opening<T> {
    inner: T,
    open: bool,
    /// Refusals put in the stream and not answered yet (see [`Screened`]).
    owed: Arc<AtomicU64>,
    /// Answers not yet written (see the module documentation).
    backlog: Arc<Backlog>,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Opening<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let unsent = Unsent::new(&self.backlog);
        let sending = self.inner.send(item);
        async move {
            // Counted until written, or until the send is dropped unfinished.
            let _unsent = unsent;
            sending.await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        // Nothing more is read while the client leaves answers unread. A `Notified` made before
        // the count is read is woken by any write that ends after it (tokio's guarantee for
        // `notify_waiters`), so no wake-up is lost; this wait holds no message, so rmcp may
        // drop it and call again.
        loop {
            let written = self.backlog.written.notified();
            if self.backlog.unsent.load(Ordering::SeqCst) < MAX_UNSENT {
                break;
            }
            written.await;
        }
        loop {
            let message = self.inner.receive().await?;
            if let JsonRpcMessage::Notification(JsonRpcNotification {
                notification: ClientNotification::CustomNotification(n),
                ..
            }) = &message
                && n.method == REFUSED_METHOD
                && self
                    .owed
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok()
            {
                let text = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("message"))
                    .and_then(|m| m.as_str())
                    .unwrap_or("a key is named twice")
                    .to_string();
                tracing::info!("refused a message: {text}");
                let refusal =
                    TxJsonRpcMessage::<RoleServer>::error(ErrorData::parse_error(text, None), None);
                if self.inner.send(refusal).await.is_err() {
                    return None;
                }
                continue;
            }
            if self.open {
                return Some(message);
            }
            match &message {
                JsonRpcMessage::Request(JsonRpcRequest { request, .. }) => {
                    if !matches!(
                        request,
                        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_)
                    ) {
                        self.open = true;
                    }
                    return Some(message);
                }
                _ => tracing::debug!(
                    "dropped a message that is not a request before the session opened"
                ),
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
