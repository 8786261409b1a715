//! `runx mcp serve`: every runner of a skill package as a Model Context Protocol tool, on one
//! warm [`Runtime`](runx_runtime::Runtime), for any agent that speaks MCP.
//!
//! The protocol is the official Rust SDK's, `rmcp`: the `initialize` handshake of `2025-06-18`
//! and `2025-11-25` clients, and the `2026-07-28` revision's requests that carry their protocol
//! version and capabilities in `_meta` (no handshake; `server/discover`), over stdio (one JSON
//! message per line) and Streamable HTTP. This crate gives it the tools and runs them:
//!
//! | module | what it holds |
//! |---|---|
//! | `catalog` | the tools: one per (package, runner), read once at start; `tools/list` pages |
//! | `naming` | tool names: `SKILL.RUNNER`, valid and the same on every start |
//! | `schema` | `inputSchema` and `outputSchema` from the runner's declarations |
//! | `describe` | title, description (from the profile and `SKILL.md`) and annotations |
//! | `server` | the [`McpServer`] handler: `tools/list`, `tools/call`, the versions served |
//! | `call` | one call: admitted, run on a step thread, progress per page, cancellation |
//! | `admission` | `runx serve`'s bounds: `pool_size` running, `queue` waiting, then `busy` |
//! | `result`, `receipt` | a run's outcome as a tool result, and its receipt in `_meta` |
//! | `stdio`, `http` | the two transports; the bearer token, origins and body bound of HTTP |
//!
//! A sealed run is a result whose `structuredContent` is the output; a run that failed is a
//! result with `isError: true` and runx's `{kind, code, message}`; both name their receipt in
//! `_meta` (`runx/receipt`: id, path, digest, signer). A call for an unknown tool is the
//! JSON-RPC error -32602, and a call beyond the bounds is `runx serve`'s `busy` (-32001).
//!
//! ```no_run
//! use runx_mcp::{Catalog, Listen, McpConfig, McpServer, serve};
//! use runx_runtime::Runtime;
//! use runx_serve::ServeConfig;
//! use std::sync::Arc;
//!
//! let config = McpConfig::new(ServeConfig::new(std::env::current_dir()?).pool_size(2));
//! let runtime = Arc::new(Runtime::discover().with_pool_size(config.serve.pool_size));
//! let catalog = Catalog::load(&["skill-fixtures/hello".into()], None)?;
//! let max = config.serve.max_request_bytes;
//! serve(McpServer::new(runtime, catalog, config), Listen::Stdio, max)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod admission;
mod call;
mod catalog;
mod config;
mod describe;
mod duplicates;
mod error;
mod http;
mod naming;
mod receipt;
mod result;
mod schema;
mod server;
mod stdio;

pub use catalog::{Catalog, Entry, TOOLS_PAGE};
pub use config::McpConfig;
pub use describe::skill_summary;
pub use error::McpError;
pub use http::{HttpOptions, MCP_PATH, read_token, serve_http};
pub use naming::{MAX_TOOL_NAME, is_valid_tool_name, skill_tool_name, tool_name};
pub use receipt::{RECEIPT_META_KEY, receipt_meta};
pub use result::{ERROR_META_KEY, call_result};
pub use schema::{input_schema, output_schema};
pub use server::{McpServer, PROTOCOL_VERSIONS};
pub use stdio::serve_stdio;

/// Where a server listens.
#[derive(Clone, Debug)]
pub enum Listen {
    /// This process's stdin and stdout.
    Stdio,
    /// Streamable HTTP.
    Http(HttpOptions),
}

/// Serves `server` until its stdio client closes stdin (or, over HTTP, until the process
/// ends), on an async runtime of its own. Messages (lines, HTTP bodies) are bounded by
/// `max_message_bytes`.
pub fn serve(server: McpServer, listen: Listen, max_message_bytes: usize) -> Result<(), McpError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("runx-mcp")
        .enable_all()
        .build()
        .map_err(McpError::Start)?;
    runtime.block_on(async move {
        match listen {
            Listen::Stdio => serve_stdio(server, max_message_bytes).await,
            Listen::Http(options) => {
                let stop = tokio_util::sync::CancellationToken::new();
                serve_http(server, options, max_message_bytes, stop).await
            }
        }
    })
}
