//! What the server answers beside the runtime's own objects: its `info`, the receipt
//! document a `run` that asked for `receipt_body` carries, and the refusal of a full server.

use crate::config::ServeConfig;
use crate::protocol::{ErrorCode, RpcError};
use runx_runtime::RunOutcome;
use serde_json::{Value, json};

/// `info`: `{"pool_size", "queue", "version"}`. A client that holds at most `pool_size +
/// queue` requests unanswered is never refused `busy`: a request stops counting before its
/// answer is written.
pub fn info_json(config: &ServeConfig) -> Value {
    json!({
        "pool_size": config.pool_size,
        "queue": config.queue,
        "version": env!("CARGO_PKG_VERSION"),
    })
}

/// The receipt document of a run, as written to its file (the same members and values); `null`
/// when no receipt was written (a package that did not load, a receipt directory that could
/// not be written), since a document that is in no file would vouch for nothing.
pub fn receipt_body(outcome: &RunOutcome) -> Value {
    match &outcome.receipt_path {
        Some(_) => outcome.receipt.clone(),
        None => Value::Null,
    }
}

/// The refusal of a request when `running` requests hold every step slot and `queued` more
/// fill the queue: `busy` (-32001), with those counts and the server's bounds as `data`.
/// `runx mcp serve` refuses a `tools/call` with the same error.
pub fn busy_error(running: usize, queued: usize, config: &ServeConfig) -> RpcError {
    RpcError::new(
        ErrorCode::Busy,
        format!(
            "busy: {running} requests running and {queued} queued (pool size {}, queue limit {}); retry later",
            config.pool_size, config.queue
        ),
    )
    .with_data(json!({
        "running": running,
        "queued": queued,
        "pool_size": config.pool_size,
        "queue_limit": config.queue,
    }))
}
