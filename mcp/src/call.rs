//! One `tools/call`: admitted, run on a step thread with the server's environment, its pages
//! reported as progress, cancelled when the client cancels it or goes away.

use crate::admission::Admission;
use crate::catalog::Entry;
use crate::result::call_result;
use rmcp::model::{CallToolResult, ErrorCode, ErrorData, JsonObject, ProgressNotificationParam};
use rmcp::service::{RequestContext, RoleServer};
use runx_runtime::{CancelToken, EnvSource, PageProgress, ProgressSink, RunRequest, Runtime};
use runx_serve::RpcError;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::mpsc;

/// What every call of a server shares: the runtime, the bounds, the environment, and where
/// runs work and leave their receipts.
pub struct Calls {
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) admission: Arc<Admission>,
    pub(crate) env: EnvSource,
    pub(crate) workspace: PathBuf,
    pub(crate) receipt_dir: Option<PathBuf>,
}

/// Cancels a run when the call's future is dropped before the run ended (a server shutting
/// down, an HTTP client gone): the run's worker or process group is killed, never orphaned.
struct CancelOnDrop(CancelToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl Calls {
    /// Runs `entry` with `arguments`. A run that ends, sealed or failed, is a result; a call
    /// refused for lack of room is the JSON-RPC error `busy` (-32001) of `runx serve`.
    pub async fn call(
        &self,
        entry: &Entry,
        arguments: Option<JsonObject>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let ticket = self.admission.admit().map_err(rpc_error)?;
        let cancel = CancelToken::new();
        let guard = CancelOnDrop(cancel.clone());
        let slot = tokio::select! {
            slot = ticket.slot() => slot,
            () = context.ct.cancelled() => None,
        };
        let Some(slot) = slot else {
            // Cancelled while waiting: nothing ran, and the client reads no answer.
            return Err(ErrorData::new(
                ErrorCode::INVALID_REQUEST,
                "cancelled",
                None,
            ));
        };
        let (progress, forwarder) = match context.meta.get_progress_token() {
            Some(token) => {
                let (tx, mut rx) = mpsc::unbounded_channel::<PageProgress>();
                let peer = context.peer.clone();
                // Notifications go out in page order and before the result: this task ends
                // when the run drops its sink, and the result waits for it.
                let forwarder = tokio::spawn(async move {
                    while let Some(p) = rx.recv().await {
                        let mut note =
                            ProgressNotificationParam::new(token.clone(), p.bytes as f64);
                        note.total = Some(p.total_bytes as f64);
                        note.message = Some(format!("page {}", p.pages));
                        if let Err(e) = peer.notify_progress(note).await {
                            tracing::debug!("a progress notification was not sent: {e}");
                        }
                    }
                });
                // The channel holds at most one entry a page, and a run has at most
                // `page_count` pages.
                let sink = ProgressSink::new(move |p: &PageProgress| {
                    let _ = tx.send(*p);
                });
                (Some(sink), Some(forwarder))
            }
            None => (None, None),
        };
        let request = RunRequest {
            dir: entry.dir.clone(),
            runner: Some(entry.runner.clone()),
            inputs: arguments.unwrap_or_default(),
            env: self.env.clone(),
            workspace: self.workspace.clone(),
            receipt_dir: self.receipt_dir.clone(),
            progress,
            cancel: cancel.clone(),
            case: None,
        };
        let runtime = self.runtime.clone();
        let run = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            runtime.run(request)
        });
        tokio::pin!(run);
        let ran = tokio::select! {
            ran = &mut run => ran,
            () = context.ct.cancelled() => {
                // `notifications/cancelled`: the worker or process group is killed now; the run
                // ends `interrupted` and writes its receipt, and no answer is sent.
                tracing::info!(tool = %entry.tool.name, "call cancelled by the client");
                cancel.cancel();
                run.await
            }
        };
        if let Some(f) = forwarder {
            let _ = f.await;
        }
        drop(guard);
        drop(ticket);
        match ran {
            Ok(outcome) => {
                tracing::info!(
                    tool = %entry.tool.name,
                    status = %outcome.status(),
                    "call answered"
                );
                Ok(call_result(&outcome))
            }
            Err(e) => Err(ErrorData::internal_error(
                format!("internal error: the step thread failed: {e}"),
                None,
            )),
        }
    }
}

/// A `runx serve` error as an MCP error: the same code, message and data.
fn rpc_error(e: RpcError) -> ErrorData {
    let code = i32::try_from(e.code.code()).unwrap_or(ErrorCode::INTERNAL_ERROR.0);
    ErrorData::new(ErrorCode(code), e.message, e.data)
}
