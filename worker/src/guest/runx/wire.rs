//! runx's worker protocol, version 3, as this worker reads and writes it: a frame is a `u32`
//! big-endian length then that many bytes of one JSON object, at most [`MAX_FRAME_BYTES`]
//! either way. The host (runx) sends `hello` once, then `invoke`s; the worker answers `ready`,
//! then one `result` or `failure` per invoke.
//!
//! The shapes follow runx's contract (`runx-contracts`, `javascript_worker.rs`): every field is
//! required and no other field is allowed, so a request runx would not send is refused the way
//! runx's own worker refuses it. A request's `inputs` is kept as the JSON text runx sent: it
//! goes to the engine as text, never through a second parse and print.

use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::io::{self, Read, Write};

/// The protocol version runx 0.8.2 speaks.
pub const PROTOCOL_VERSION: u16 = 3;

/// The largest frame either side reads or writes: 10 MiB.
pub const MAX_FRAME_BYTES: usize = 10 * 1024 * 1024;

/// Why a frame could not be read or written. Any of these ends the worker: the stream is no
/// longer in step with the host.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// Reading or writing the pipe failed, or it ended inside a frame.
    #[error("worker frame I/O failed: {0}")]
    Io(#[from] io::Error),
    /// The length prefix is over the 10 MiB ceiling; nothing of the frame was read.
    #[error("worker frame length {0} exceeds limit {MAX_FRAME_BYTES}")]
    TooLarge(usize),
    /// The frame is not one of the messages of this protocol.
    #[error("worker frame JSON is invalid: {0}")]
    Json(#[from] serde_json::Error),
}

/// What the host asked for.
#[derive(Debug)]
pub enum Request {
    /// The handshake, with the version the host speaks.
    Hello {
        /// The host's protocol version.
        protocol_version: u16,
    },
    /// One call.
    Invoke(Box<Invocation>),
}

/// The limits runx puts on one call. runx's worker takes each one only at or under its own
/// maximum ([`InvocationLimits::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InvocationLimits {
    /// Bytes of the module map as compact JSON.
    pub source_bytes: usize,
    /// Bytes of `inputs` as compact JSON.
    pub input_bytes: usize,
    /// Bytes of the output as compact JSON.
    pub output_bytes: usize,
    /// The heap; runx allows exactly [`InvocationLimits::HEAP_BYTES`].
    pub heap_bytes: u64,
    /// Bytes of stack for JavaScript.
    pub stack_bytes: usize,
    /// The wall runx keeps with its own timer.
    pub wall_milliseconds: u64,
    /// Promise jobs one call may queue.
    pub queued_jobs: u32,
}

impl InvocationLimits {
    /// runx's maximum source, input and output: 4 MiB each.
    pub const IO_BYTES: usize = 4 * 1024 * 1024;
    /// The one heap runx allows: 64 MiB.
    pub const HEAP_BYTES: u64 = 64 * 1024 * 1024;
    /// runx's maximum stack: 4 MiB.
    pub const STACK_BYTES: usize = 4 * 1024 * 1024;
    /// runx's maximum wall: 30 s.
    pub const WALL_MILLISECONDS: u64 = 30_000;
    /// runx's maximum of queued jobs.
    pub const QUEUED_JOBS: u32 = 4_096;

    /// `true` when every limit is at least 1 and at most runx's maximum, and the heap is
    /// exactly runx's: the rule runx's worker applies before it runs anything.
    pub fn check(&self) -> bool {
        let within = |value: u64, max: u64| (1..=max).contains(&value);
        within(self.source_bytes as u64, Self::IO_BYTES as u64)
            && within(self.input_bytes as u64, Self::IO_BYTES as u64)
            && within(self.output_bytes as u64, Self::IO_BYTES as u64)
            && self.heap_bytes == Self::HEAP_BYTES
            && within(self.stack_bytes as u64, Self::STACK_BYTES as u64)
            && within(self.wall_milliseconds, Self::WALL_MILLISECONDS)
            && within(u64::from(self.queued_jobs), u64::from(Self::QUEUED_JOBS))
    }
}

/// An `invoke`: one export of one module map, with its inputs, environment and limits.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invocation {
    #[serde(rename = "type")]
    _type: String,
    /// The version this request is written in.
    pub protocol_version: u16,
    /// runx's name for the call, echoed in the answer.
    pub invocation_id: String,
    /// The module whose export is called, a key of `modules`.
    pub entry_module: String,
    /// The export's name (`default` for the default export).
    pub export_name: String,
    /// Source text by module path.
    pub modules: BTreeMap<String, String>,
    /// The first argument, as the JSON text runx sent.
    pub inputs: Box<RawValue>,
    /// The declared environment values, frozen into the second argument.
    pub environment: BTreeMap<String, String>,
    /// The call's limits.
    pub limits: InvocationLimits,
}

#[derive(Deserialize)]
struct Kind<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Hello {
    #[serde(rename = "type")]
    _type: String,
    protocol_version: u16,
}

impl Request {
    /// Reads a request from one frame's bytes. The `type` is read first, then the message of
    /// that type with nothing missing and nothing extra (an internally tagged enum could not
    /// keep `inputs` as text).
    pub fn parse(bytes: &[u8]) -> Result<Request, serde_json::Error> {
        let Kind { kind } = serde_json::from_slice(bytes)?;
        match &*kind {
            "hello" => {
                let Hello {
                    protocol_version, ..
                } = serde_json::from_slice(bytes)?;
                Ok(Request::Hello { protocol_version })
            }
            "invoke" => Ok(Request::Invoke(Box::new(serde_json::from_slice(bytes)?))),
            other => Err(serde::de::Error::unknown_variant(
                other,
                &["hello", "invoke"],
            )),
        }
    }
}

/// Whether the worker that answered may take another call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// The worker is fine; the host may send it the next call.
    Reuse,
    /// The host should end this worker and start another.
    Discard,
}

/// A `failure` answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailureReply {
    /// The call it answers; `None` for a failure of the protocol itself.
    pub invocation_id: Option<String>,
    /// One of runx's codes: `invalid_protocol`, `invalid_request`, `resource_limit`,
    /// `module_rejected`, `execution_failed`, `output_rejected`, `internal_failure`.
    pub code: &'static str,
    /// For `resource_limit`, one of runx's limit names when the limit is one runx knows.
    pub limit: Option<&'static str>,
    /// What went wrong.
    pub message: String,
    /// Whether the worker stays in service.
    pub disposition: Disposition,
}

/// The `ready` answer to a `hello`.
pub fn ready() -> Vec<u8> {
    serde_json::json!({ "type": "ready", "protocol_version": PROTOCOL_VERSION })
        .to_string()
        .into_bytes()
}

/// The `result` answer: `output` is the export's return value as JSON text, put in as it is.
pub fn result(invocation_id: &str, output: &[u8]) -> Vec<u8> {
    let id = serde_json::Value::from(invocation_id).to_string();
    let head = format!(
        r#"{{"type":"result","protocol_version":{PROTOCOL_VERSION},"invocation_id":{id},"output":"#
    );
    let mut frame = Vec::with_capacity(head.len() + output.len() + 1);
    frame.extend_from_slice(head.as_bytes());
    frame.extend_from_slice(output);
    frame.push(b'}');
    frame
}

impl FailureReply {
    /// The answer's JSON text.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut reply = serde_json::json!({
            "type": "failure",
            "protocol_version": PROTOCOL_VERSION,
            "invocation_id": self.invocation_id,
            "code": self.code,
            "message": self.message,
            "disposition": match self.disposition {
                Disposition::Reuse => "reuse",
                Disposition::Discard => "discard",
            },
        });
        if let Some(limit) = self.limit {
            reply["limit"] = limit.into();
        }
        reply.to_string().into_bytes()
    }
}

/// Reads one frame; `None` when the input ends cleanly before a frame starts.
pub fn read_frame(r: &mut impl Read) -> Result<Option<Vec<u8>>, FrameError> {
    let mut len = [0u8; 4];
    match crate::wire::frame::read_full(r, &mut len)? {
        0 => return Ok(None),
        4 => {}
        _ => {
            return Err(FrameError::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the input ended inside a frame's length",
            )));
        }
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge(len));
    }
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload)?;
    Ok(Some(payload))
}

/// Writes one frame and flushes it.
pub fn write_frame(w: &mut impl Write, payload: &[u8]) -> Result<(), FrameError> {
    if payload.len() > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge(payload.len()));
    }
    w.write_all(&(payload.len() as u32).to_be_bytes())?;
    w.write_all(payload)?;
    w.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_whole_or_refused() {
        let hello = Request::parse(br#"{"type":"hello","protocol_version":3}"#).unwrap();
        assert!(matches!(
            hello,
            Request::Hello {
                protocol_version: 3
            }
        ));
        for bad in [
            &br#"{"type":"hello","protocol_version":3,"extra":1}"#[..],
            br#"{"type":"goodbye"}"#,
            br#"{"protocol_version":3}"#,
            br#"not json"#,
        ] {
            assert!(
                Request::parse(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn a_result_carries_the_output_text_as_it_is() {
        let frame = result("call \"1\"", br#"{"n":1e21,"s":"\u00e9"}"#);
        let v: serde_json::Value = serde_json::from_slice(&frame).unwrap();
        assert_eq!(v["invocation_id"], "call \"1\"");
        assert_eq!(v["output"]["n"], 1e21);
        assert!(
            String::from_utf8(frame)
                .unwrap()
                .contains(r#""output":{"n":1e21,"s":"\u00e9"}}"#)
        );
    }

    #[test]
    fn an_oversize_length_is_refused_before_reading() {
        let mut bytes = &(MAX_FRAME_BYTES as u32 + 1).to_be_bytes()[..];
        assert!(matches!(
            read_frame(&mut bytes),
            Err(FrameError::TooLarge(_))
        ));
        let mut empty: &[u8] = &[];
        assert!(read_frame(&mut empty).unwrap().is_none());
    }
}
