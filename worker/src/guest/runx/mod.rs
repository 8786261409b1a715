//! A worker that runx itself runs: the `runx-js-worker` executable, which speaks runx's worker
//! protocol version 3 ([`wire`]) instead of this runtime's, and runs each call on this
//! runtime's engine ([`invoke`]).
//!
//! runx starts its worker with no arguments and an empty environment, so the engine is the
//! build's: V8 when this crate is built with the feature `v8`, QuickJS otherwise. The process
//! confines itself as `runx __worker` does (`guest/sandbox.rs`: an empty environment or it
//! refuses to run, inherited descriptors closed, rlimits, the uid drop under root,
//! no-new-privileges, the seccomp allow-list; there is no `--allow-no-seccomp` here), then
//! serves on a thread of [`ENGINE_STACK_BYTES`].
//!
//! Like runx's own worker, it ends with status 70 and a line on stderr when its input cannot
//! be read as frames of the protocol (a frame over 10 MiB, a message that is not one of
//! runx's), and answers `invalid_protocol` (disposition `discard`) to a handshake in another
//! version or a second `hello`.

pub(crate) mod invoke;
pub(crate) mod wire;

use self::invoke::{Answer, invoke};
use self::wire::{Disposition, FailureReply, FrameError, PROTOCOL_VERSION, Request};
use crate::engine::Engine;
use crate::guest::engines::engine_by_name;
use crate::guest::sandbox::{SandboxError, SandboxOptions};
use crate::guest::start::{ENGINE_STACK_BYTES, watch_host};
use crate::wire::failure::Failure;
use runx_rules::Limit;
use std::io::{self, BufReader, BufWriter, Read, Write};

/// The exit status of a worker that stops on an error, as runx's own worker's.
pub const EXIT_ERROR: i32 = 70;

/// The engine a `runx-js-worker` runs: V8 where built with it, else QuickJS.
pub const RUNX_WORKER_ENGINE: &str = if cfg!(feature = "v8") {
    "v8"
} else {
    "quickjs"
};

/// Entry point of `runx-js-worker`: confines the process and serves runx's protocol on stdin
/// and stdout until the input ends. Returns the exit status: 0 at the end of input, 70 (with a
/// line on stderr) when the worker cannot start or its input is not the protocol.
pub fn runx_worker_main() -> i32 {
    match confine_and_serve() {
        Ok(()) => 0,
        Err(message) => {
            let mut message = message;
            if message.len() > 4096 {
                let mut end = 4096;
                while !message.is_char_boundary(end) {
                    end -= 1;
                }
                message.truncate(end);
            }
            eprintln!("{message}");
            EXIT_ERROR
        }
    }
}

fn confine_and_serve() -> Result<(), String> {
    let memory = engine_by_name(RUNX_WORKER_ENGINE)
        .map_err(|e| e.to_string())?
        .memory_cap();
    crate::guest::sandbox::enter(memory, RUNX_WORKER_ENGINE, SandboxOptions::default()).map_err(
        |e| match e {
            SandboxError::Environment(_) => {
                "worker inherited an environment; the supervisor must spawn it with env_clear"
                    .to_string()
            }
            other => format!("worker limits could not be installed: {other}"),
        },
    )?;
    // V8 ends the process when its heap runs out inside a builtin: each invoke's answer for
    // that case is made ahead (`engine/fatal.rs`), as `runx __worker` makes its own.
    crate::engine::fatal::answer_on_stdout(RUNX_WORKER_ENGINE == "v8");
    watch_host();
    std::thread::Builder::new()
        .name("runx-engine".to_string())
        .stack_size(ENGINE_STACK_BYTES)
        .spawn(|| {
            let mut engine = engine_by_name(RUNX_WORKER_ENGINE).map_err(|e| e.to_string())?;
            serve(
                engine.as_mut(),
                BufReader::new(io::stdin().lock()),
                BufWriter::new(io::stdout().lock()),
            )
            .map_err(|e| e.to_string())
        })
        .map_err(|e| format!("worker request thread could not be created: {e}"))?
        .join()
        .map_err(|_| "worker invocation thread panicked".to_string())?
}

/// Serves runx's protocol on `input` and `output` with `engine` until the input ends (`Ok`),
/// or until it cannot be read as the protocol (`Err`, which ends the worker). In-process, with
/// no confinement: tests use it so.
pub fn serve_runx(
    engine: &mut dyn Engine,
    input: impl Read,
    output: impl Write,
) -> Result<(), FrameError> {
    serve(engine, input, output)
}

fn serve(engine: &mut dyn Engine, mut r: impl Read, mut w: impl Write) -> Result<(), FrameError> {
    engine.idle();
    let Some(frame) = wire::read_frame(&mut r)? else {
        return Ok(());
    };
    match Request::parse(&frame)? {
        Request::Hello { protocol_version } if protocol_version == PROTOCOL_VERSION => {
            wire::write_frame(&mut w, &wire::ready())?;
        }
        _ => return protocol_failure(&mut w, None, "worker protocol handshake mismatch"),
    }
    while let Some(frame) = wire::read_frame(&mut r)? {
        let Request::Invoke(request) = Request::parse(&frame)? else {
            return protocol_failure(&mut w, None, "worker handshake may occur only once");
        };
        if request.protocol_version != PROTOCOL_VERSION {
            let id = Some(request.invocation_id.clone());
            return protocol_failure(&mut w, id, "worker invocation protocol mismatch");
        }
        let reply = {
            let _running = crate::engine::fatal::running_frame(out_of_memory_frame(&request));
            match invoke(engine, &request) {
                Answer::Output(output) => wire::result(&request.invocation_id, &output),
                Answer::Failure(failure) => failure.to_bytes(),
            }
        };
        match wire::write_frame(&mut w, &reply) {
            Err(FrameError::TooLarge(bytes)) => {
                let failure = FailureReply {
                    invocation_id: Some(request.invocation_id.clone()),
                    code: "internal_failure",
                    limit: None,
                    message: format!(
                        "the worker's answer of {bytes} bytes does not fit in a frame"
                    ),
                    disposition: Disposition::Reuse,
                };
                wire::write_frame(&mut w, &failure.to_bytes())?;
            }
            other => other?,
        }
        engine.idle();
    }
    Ok(())
}

/// The frame that answers `request` if the engine ends the process while it runs: the heap
/// limit in runx's words (`resource_limit`, the limit named in the message, since runx has no
/// name for it), and a worker to discard.
fn out_of_memory_frame(request: &wire::Invocation) -> Vec<u8> {
    let limits = invoke::engine_limits(&request.limits);
    let failure = Failure::exceeded(Limit::HeapBytes, &limits).discard_worker();
    let reply = invoke::reply(Some(request.invocation_id.clone()), failure);
    let mut frame = Vec::new();
    // A failure's message is short: it always fits in a frame.
    let _ = wire::write_frame(&mut frame, &reply.to_bytes());
    frame
}

/// Answers a broken handshake or sequence with `invalid_protocol` and stops serving.
fn protocol_failure(
    w: &mut impl Write,
    invocation_id: Option<String>,
    message: &str,
) -> Result<(), FrameError> {
    let failure = FailureReply {
        invocation_id,
        code: "invalid_protocol",
        limit: None,
        message: message.to_string(),
        disposition: Disposition::Discard,
    };
    wire::write_frame(w, &failure.to_bytes())
}
