//! MCP over stdio: one JSON-RPC message per line each way, through rmcp's line transport.
//!
//! A line longer than the server's message limit is dropped (its bytes are never held) and the
//! server goes on; so is a line that is not JSON, as the official SDKs do, since nothing in it
//! can be answered; JSON that is not a message is answered `-32600`. stdout carries protocol
//! messages only; logs go to stderr.

use crate::error::McpError;
use crate::server::McpServer;
use rmcp::service::{QuitReason, RoleServer, serve_server};
use rmcp::transport::async_rw::AsyncRwTransport;

/// Serves `server` on this process's stdin and stdout until the client closes stdin. Calls
/// still running then are given five seconds to answer (rmcp's drain), then cancelled.
pub async fn serve_stdio(server: McpServer, max_message_bytes: usize) -> Result<(), McpError> {
    let (read, write) = rmcp::transport::stdio_pipes();
    let transport = AsyncRwTransport::<RoleServer, _, _>::new(read, write)
        .with_max_line_length(max_message_bytes);
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
