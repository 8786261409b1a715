//! `runx mcp serve`: the skill runners of `runx-mcp` as MCP tools, on stdio or Streamable HTTP.

use runx_mcp::{Catalog, HttpOptions, Listen, McpConfig, McpServer, read_token};
use runx_receipts::RECEIPT_DIR_ENV;
use runx_serve::{DEFAULT_MAX_REQUEST_BYTES, DEFAULT_QUEUE, MAX_POOL_SIZE, ServeConfig};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a signal waits for the interrupted calls to write their receipts.
const INTERRUPT_WAIT: Duration = Duration::from_secs(5);

/// `runx mcp ...`.
#[derive(clap::Args)]
pub struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(clap::Subcommand)]
enum McpCommand {
    // About and help text are on `McpServeArgs`, beside the flags they describe.
    Serve(McpServeArgs),
}

#[derive(clap::Args)]
#[command(
    about = "Serve skill runners as MCP tools to an agent: stdio (one JSON message per line) or Streamable HTTP",
    long_about = "Serve skill runners as Model Context Protocol tools to an agent.

As in runx, each package DIR is a tool named after its skill (helpdesk), which runs its \
chosen runner: --runner NAME, else its default runner, else its only one. Every other runner \
is a further tool, SKILL.RUNNER. Tools have an inputSchema and outputSchema made from X.yaml \
and a description from X.yaml and SKILL.md. A tools/call runs the runner on one warm runtime, \
as `runx serve` does, and answers in runx's shape: structuredContent {output, runx: {status, \
skillName, runId, receiptId, events}} and a text block (the output's JSON, or \
\"SKILL failed. Inspect receipt ID. MESSAGE\" with isError). _meta adds the receipt \
(runx/receipt: id, path, digest, signer) and a failure's {kind, code, message} (runx/error). A paged call with a progressToken gets \
notifications/progress per page; notifications/cancelled kills the call's worker or process.

Protocol versions 2025-06-18 and 2025-11-25 (initialize) and 2026-07-28 (_meta on every \
request, server/discover), through the official Rust SDK (rmcp). Over stdio, stdout carries \
only protocol messages and logs go to stderr; the server ends when the client closes stdin.

A runner's declared environment names come from this server's environment, as for `runx \
skill`, and --env NAME=VALUE sets them; nothing else reaches a step. Relative paths (page \
files, receipts) are relative to the working directory. Up to --pool-size calls run at once \
and --queue more wait; past that a call gets the error -32001 (busy).

--listen ADDR (or runx's --http-listen [ADDR]) serves Streamable HTTP at http://ADDR/mcp \
instead (loopback; another address needs --token-file, and every request then needs \
Authorization: Bearer TOKEN). Browser origins are refused unless --allow-origin names them."
)]
#[command(group(clap::ArgGroup::new("http").args(["listen", "http_listen"])))]
pub struct McpServeArgs {
    /// Skill package directories (or bare names found as skills/NAME).
    #[arg(value_name = "DIR", required = true)]
    dirs: Vec<PathBuf>,
    /// Serve only this runner of each package (each must have it).
    #[arg(long, value_name = "NAME")]
    runner: Option<String>,
    /// Calls run at once, and workers in the pool (1–16) [default: CPUs, at most 16].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_POOL_SIZE as u64))]
    pool_size: Option<u64>,
    /// Calls accepted beyond those running; past it a call is refused `busy`.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_QUEUE)]
    queue: usize,
    /// The longest message in bytes (a stdio line, an HTTP body); a longer one is dropped.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_REQUEST_BYTES as u64, value_parser = clap::value_parser!(u64).range(1..))]
    max_message_bytes: u64,
    /// Sets an environment value for the runners that declare NAME (repeatable).
    #[arg(long = "env", value_name = "NAME=VALUE", value_parser = env_pair)]
    env: Vec<(String, String)>,
    /// Where receipts go [default: RUNX_RECEIPT_DIR, else .runx/receipts].
    #[arg(long, value_name = "DIR")]
    receipt_dir: Option<PathBuf>,
    /// Serve Streamable HTTP on this address (127.0.0.1:8765; port 0 picks one) instead of
    /// stdio.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// runx's name for --listen: serve Streamable HTTP on ADDR [default: 127.0.0.1:8080].
    #[arg(
        long,
        value_name = "ADDR",
        num_args = 0..=1,
        default_missing_value = "127.0.0.1:8080",
        conflicts_with = "listen"
    )]
    http_listen: Option<SocketAddr>,
    /// runx's opt-in to a non-loopback --http-listen. Accepted; here such an address needs
    /// --token-file either way.
    #[arg(long, requires = "http")]
    http_allow_non_loopback: bool,
    /// The bearer token HTTP requests must carry, from FILE (one line, mode 600).
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// A browser origin allowed to call over HTTP (repeatable); others get 403.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// HTTP connections served at once; one more is answered 503 [default: 64].
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(runx_profile::MCP_HTTP_CONNECTIONS.min..=runx_profile::MCP_HTTP_CONNECTIONS.max))]
    max_connections: Option<u64>,
    /// MCP sessions held at once; an initialize past it is answered 503 [default: 256].
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(runx_profile::MCP_HTTP_SESSIONS.min..=runx_profile::MCP_HTTP_SESSIONS.max))]
    max_sessions: Option<u64>,
    /// Seconds a request's body may take to arrive after its headers; past them, 408
    /// [default: 30].
    #[arg(long, value_name = "SECONDS", requires = "http", value_parser = clap::value_parser!(u64).range(1..=600))]
    body_timeout: Option<u64>,
    #[command(flatten)]
    sign: crate::keys::SignArgs,
}

fn env_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value))
            if !name.is_empty() && !name.contains('\0') && !value.contains('\0') =>
        {
            Ok((name.to_string(), value.to_string()))
        }
        _ => Err(format!("`{text}` is not NAME=VALUE")),
    }
}

/// Runs `runx mcp ...`.
pub fn run(engine: Option<&str>, args: McpArgs) -> ExitCode {
    match args.command {
        McpCommand::Serve(a) => serve(engine, a),
    }
}

fn serve(engine: Option<&str>, args: McpServeArgs) -> ExitCode {
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => return crate::exit::usage(&format!("cannot read the working directory: {e}")),
    };
    let mut dirs = Vec::new();
    for dir in &args.dirs {
        match crate::package::find_package(dir) {
            Ok(d) => dirs.push(d),
            Err(e) => return crate::exit::usage(&e),
        }
    }
    let catalog = match Catalog::load(&dirs, args.runner.as_deref()) {
        Ok(c) => c,
        Err(e) => return crate::exit::usage(&e.to_string()),
    };
    let mut serve_config = ServeConfig::new(cwd)
        .queue(args.queue)
        .max_request_bytes(usize::try_from(args.max_message_bytes).unwrap_or(usize::MAX));
    if let Some(n) = args.pool_size {
        // In 1–16: clap checked the range.
        serve_config = serve_config.pool_size(usize::try_from(n).unwrap_or(MAX_POOL_SIZE));
    }
    let listen = match args.listen.as_ref().or(args.http_listen.as_ref()) {
        None => Listen::Stdio,
        Some(addr) => {
            let token = match args.token_file.as_deref().map(read_token).transpose() {
                Ok(t) => t,
                Err(e) => return crate::exit::usage(&e.to_string()),
            };
            let mut options = HttpOptions::new(*addr);
            options.token = token;
            options.allowed_origins = args.allow_origin.clone();
            // In range: clap checked each against the catalogue.
            if let Some(n) = args.max_connections {
                options.max_connections = usize::try_from(n).unwrap_or(usize::MAX);
            }
            if let Some(n) = args.max_sessions {
                options.max_sessions = usize::try_from(n).unwrap_or(usize::MAX);
            }
            if let Some(s) = args.body_timeout {
                options.body_wait = Duration::from_secs(s);
            }
            Listen::Http(options)
        }
    };
    let keys = match crate::keys::keys(&args.sign) {
        Ok(k) => k,
        Err(e) => return crate::exit::usage(&e.message),
    };
    let max_message_bytes = serve_config.max_request_bytes;
    let mut config = McpConfig::new(serve_config);
    config.env = args.env.into_iter().collect::<BTreeMap<_, _>>();
    config.receipt_dir = crate::store::receipt_dir(
        args.receipt_dir.as_deref(),
        std::env::var_os(RECEIPT_DIR_ENV),
    );
    let runtime = Arc::new(
        crate::launch::configured_runtime(engine, keys).with_pool_size(config.serve.pool_size),
    );
    tracing::info!(
        tools = catalog.len(),
        pool_size = config.serve.pool_size,
        queue = config.serve.queue,
        "runx mcp serve"
    );
    let server = McpServer::new(runtime.clone(), catalog, config);
    let watched = server.clone();
    // A signal kills every worker and process group; the calls end `interrupted` and write
    // their receipts, for a moment; then the server ends with 128 + the signal's number.
    crate::signals::on_first(move |signal| {
        tracing::warn!("signal {signal}: cancelling every call");
        runtime.interrupt();
        let deadline = Instant::now() + INTERRUPT_WAIT;
        while watched.in_flight() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::process::exit(128 + signal);
    });
    match runx_mcp::serve(server, listen, max_message_bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            errln!("runx: {e}");
            ExitCode::from(1)
        }
    }
}
