//! `runx serve`: the step server of `runx-serve` on stdin and stdout.

use runx_serve::{DEFAULT_MAX_REQUEST_BYTES, DEFAULT_QUEUE, MAX_POOL_SIZE, ServeConfig, Server};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// How long Ctrl-C waits for the interrupted steps to answer before the server exits.
const INTERRUPT_WAIT: Duration = Duration::from_secs(5);

#[derive(clap::Args)]
#[command(
    about = "Serve steps to a graph runner: JSON-RPC 2.0 over stdin/stdout, one object per line",
    long_about = "Serve steps to a graph runner: JSON-RPC 2.0 over stdin/stdout, one JSON object per line.

Methods: run {skill, runner?, inputs?, env?, cwd?, receipt_dir?, progress?, receipt_body?} -> \
the object `runx skill --json` prints (with receipt_body: true, also the receipt document as \
`receipt_body`); inspect {skill} -> the object `runx skill inspect --json` prints; info -> \
{pool_size, queue, version}; cancel {id} -> {cancelled}; shutdown {cancel?} -> null. Paged \
runs that ask for it send `progress` notifications {id, page_index, bytes, total_bytes}.

`env` is the only environment a step sees; the server's own is never passed. Relative paths \
are relative to the server's working directory. Up to --pool-size steps run at once and \
--queue more wait; past that a request gets the error -32001 (busy). Answers come as steps \
end, out of order, each with its request's id. A step that ran and failed is a result with \
status \"failure\"; JSON-RPC errors (-32700, -32600, -32601, -32602, -32603, -32001, -32002) \
are for requests that could not run.

shutdown, or the end of stdin, lets the accepted steps finish (shutdown {\"cancel\": true} \
cancels them: they answer \"interrupted\"), writes their receipts and exits 0. Ctrl-C cancels \
every step, waits for their answers and exits 130. Logs go to stderr."
)]
pub struct ServeArgs {
    /// Steps run at once, and workers in the pool (1–16) [default: CPUs, at most 16]. A value
    /// outside 1–16 is refused, never clamped.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_POOL_SIZE as u64))]
    pool_size: Option<u64>,
    /// Requests accepted beyond those running; past it a request is refused `busy`.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_QUEUE)]
    queue: usize,
    /// The longest request line in bytes (at least 1); a longer one gets -32600 and the server
    /// goes on.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_REQUEST_BYTES as u64, value_parser = clap::value_parser!(u64).range(1..))]
    max_request_bytes: u64,
    #[command(flatten)]
    sign: crate::keys::SignArgs,
}

/// Runs the server until `shutdown` or the end of stdin.
/// Every javascript step runs on `engine` when given, else on its runner's `engine:`, else on
/// QuickJS.
pub fn run(engine: Option<&str>, args: ServeArgs) -> ExitCode {
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => return crate::exit::usage(&format!("cannot read the working directory: {e}")),
    };
    let max_request_bytes = usize::try_from(args.max_request_bytes).unwrap_or(usize::MAX);
    let mut config = ServeConfig::new(cwd)
        .queue(args.queue)
        .max_request_bytes(max_request_bytes);
    if let Some(n) = args.pool_size {
        // In 1–16: clap checked the range.
        config = config.pool_size(usize::try_from(n).unwrap_or(MAX_POOL_SIZE));
    }
    // Every step's receipt is signed when the server has a key, as for `runx skill`.
    let keys = match crate::keys::keys(&args.sign) {
        Ok(k) => k,
        Err(e) => return crate::exit::usage(&e.message),
    };
    let runtime =
        Arc::new(crate::launch::configured_runtime(engine, keys).with_pool_size(config.pool_size));
    tracing::info!(
        pool_size = config.pool_size,
        queue = config.queue,
        "runx serve: reading requests on stdin"
    );
    let server = match Server::new(runtime.clone(), config, Box::new(std::io::stdout())) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            errln!("runx: cannot start the step threads: {e}");
            return ExitCode::from(1);
        }
    };
    let handler = server.clone();
    // A signal cancels every step, waits a moment for their receipts, and ends the server with
    // 128 + the signal's number (a second signal ends it at once).
    crate::signals::on_first(move |signal| {
        tracing::warn!("signal {signal}: cancelling every step");
        handler.cancel_all();
        runtime.interrupt();
        handler.wait_idle(INTERRUPT_WAIT);
        std::process::exit(128 + signal);
    });
    server.serve(&mut std::io::stdin().lock());
    ExitCode::SUCCESS
}
