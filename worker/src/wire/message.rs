//! The messages host and worker exchange, and how their binary tails are laid out.
//!
//! Every header carries the protocol version `v` and a `call_id`; replies echo the `call_id` of
//! the request they answer.

use crate::engine::ConsoleLog;
use crate::engine::bundle::ModuleBundle;
use crate::wire::failure::Failure;
use runx_rules::Limits;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The protocol version this build speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// A frame header: version, correlation id and the message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Protocol version.
    pub v: u32,
    /// Correlates a reply with its request; 0 for messages outside any call.
    #[serde(default)]
    pub call_id: u64,
    /// The message itself.
    #[serde(flatten)]
    pub message: Message,
}

/// Sizes of the page parts in an invoke tail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageLayout {
    /// Bytes of the `runx_page` metadata JSON.
    pub meta_len: u32,
    /// Number of records.
    pub record_count: u32,
    /// Bytes of the records, back to back.
    pub blob_len: u32,
    /// Where the records are. Absent: in the tail, after an end-offset table (4 bytes little
    /// endian per record). Present: in this byte range of the artifact whose descriptor the
    /// host sent on the descriptor channel just before the frame; the tail then holds a span
    /// table (start and end, 4 bytes little endian each, relative to the range) instead of the
    /// records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<ByteRange>,
    /// The worker keeps the state this page's result carries forward, for the next call to
    /// ask for with `state_from` (pages sent ahead: `guest/ahead.rs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_state: bool,
    /// The metadata in the tail stops just before its state: the worker appends the state it
    /// kept from the call with this id, and the closing brace. The host sent this page before
    /// that call's reply reached it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_from: Option<u64>,
    /// The paged run of the page, unique within the host process. A page of the run the
    /// worker's previous call belonged to continues on what that call built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<u64>,
}

impl PageLayout {
    /// Bytes of the record table in the tail.
    pub fn table_len(&self) -> usize {
        let per_record = if self.range.is_some() { 8 } else { 4 };
        self.record_count as usize * per_record
    }

    /// What the page weighs against the input limit, however it travels: the metadata, four
    /// bytes per record and the records themselves.
    pub fn input_bytes(&self) -> usize {
        self.meta_len as usize + 4 * self.record_count as usize + self.blob_len as usize
    }
}

/// A byte range of an artifact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByteRange {
    /// First byte.
    pub offset: u64,
    /// Number of bytes.
    pub len: u64,
}

/// The messages of the protocol.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Message {
    /// Host → worker, first message: the host's protocol version.
    Hello,
    /// Worker → host: ready to serve, with the engine it runs.
    Ready {
        /// Engine name.
        engine: String,
        /// The worker's process id.
        pid: u32,
        /// Whether the worker can read page records from a descriptor sent on its descriptor
        /// channel (fd 3), instead of receiving them in the frame.
        #[serde(default)]
        pages_by_descriptor: bool,
    },
    /// Host → worker: run an export. Tail: input JSON, then (for pages) metadata JSON, the
    /// record end-offset table and the record bytes.
    Invoke {
        /// Digest of the module bundle to use.
        bundle_digest: String,
        /// The bundle itself, sent the first time a worker needs it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bundle: Option<ModuleBundle>,
        /// The export; default export when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        export: Option<String>,
        /// Declared environment values.
        #[serde(default)]
        environment: BTreeMap<String, String>,
        /// The limits for this call.
        limits: Limits,
        /// Bytes of input JSON at the start of the tail.
        input_len: u32,
        /// Layout of the page parts following the input, for paged calls.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        page: Option<PageLayout>,
        /// Load the module without calling anything: the result is an object of each export's
        /// name and what `typeof` says of it, or the failure the module's loading met
        /// (`runx skill check`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        probe: bool,
        /// The paged run a call that is not a page belongs to (a map/fold run's fold): like a
        /// page's `run`, it continues on what the worker's previous call of that run built.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run: Option<u64>,
        /// The module instance lives for the calls of the run on this worker, not for this
        /// call alone (a paged runner's `pages.module: partition`): a call that continues the
        /// run calls the instance the previous one left.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        keep_module: bool,
    },
    /// Worker → host: the call succeeded; tail is the output JSON.
    Result {
        /// Console output of the call.
        log: ConsoleLog,
        /// Microseconds the engine spent on the call (the rest of the round trip is transport).
        #[serde(default)]
        engine_us: u64,
        /// For a page sent with `state_from`: `sha256:<hex>` of the state the worker gave it, for
        /// the host to compare with the state it holds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state_digest: Option<String>,
    },
    /// Worker → host: the call (or the request) failed.
    Failure {
        /// What failed.
        failure: Failure,
        /// Console output up to the failure.
        #[serde(default)]
        log: ConsoleLog,
        /// As in `result`, for a page sent with `state_from`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state_digest: Option<String>,
    },
    /// Worker → host: the invoke named a bundle this worker does not hold (it was never sent,
    /// or the worker's cache let it go); the call did not start. The host resends with the
    /// bundle.
    NeedBundle {
        /// The digest the invoke named.
        bundle_digest: String,
    },
    /// Host → worker: are you alive?
    Health {
        /// Echoed back.
        nonce: u64,
    },
    /// Worker → host: the echo of a health check.
    Healthy {
        /// The nonce received.
        nonce: u64,
    },
    /// Host → worker: exit now.
    Shutdown,
}

impl Header {
    /// A header of the current version.
    pub fn new(call_id: u64, message: Message) -> Header {
        Header {
            v: PROTOCOL_VERSION,
            call_id,
            message,
        }
    }

    /// The header as JSON bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serializing these plain data types cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// Encodes a record end-offset table.
pub fn encode_ends(ends: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ends.len() * 4);
    for e in ends {
        out.extend_from_slice(&e.to_le_bytes());
    }
    out
}

/// Decodes a record end-offset table, checking it is non-decreasing and within `blob_len`.
pub fn decode_ends(bytes: &[u8], blob_len: usize) -> Option<Vec<u32>> {
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut prev = 0u32;
    let mut out = Vec::with_capacity(bytes.len() / 4);
    for c in bytes.chunks_exact(4) {
        let e = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if e < prev || e as usize > blob_len {
            return None;
        }
        prev = e;
        out.push(e);
    }
    Some(out)
}

/// Encodes a record span table: each record's start and end relative to a byte range.
pub fn encode_spans(spans: &[(u32, u32)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(spans.len() * 8);
    for (start, end) in spans {
        out.extend_from_slice(&start.to_le_bytes());
        out.extend_from_slice(&end.to_le_bytes());
    }
    out
}

/// Decodes a record span table, checking every span is ordered, does not overlap the one
/// before, lies within `range_len`, and that the records add up to `blob_len` bytes.
pub fn decode_spans(bytes: &[u8], range_len: u64, blob_len: usize) -> Option<Vec<(u32, u32)>> {
    if !bytes.len().is_multiple_of(8) {
        return None;
    }
    let mut prev_end = 0u32;
    let mut total = 0usize;
    let mut out = Vec::with_capacity(bytes.len() / 8);
    for c in bytes.chunks_exact(8) {
        let start = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let end = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
        if start < prev_end || end < start || u64::from(end) > range_len {
            return None;
        }
        total += (end - start) as usize;
        prev_end = end;
        out.push((start, end));
    }
    (total == blob_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_tables_round_trip_and_are_checked() {
        let spans = [(0, 3), (4, 9), (9, 9)];
        assert_eq!(
            decode_spans(&encode_spans(&spans), 9, 8),
            Some(spans.to_vec())
        );
        assert_eq!(
            decode_spans(&encode_spans(&spans), 8, 8),
            None,
            "past the range"
        );
        assert_eq!(
            decode_spans(&encode_spans(&spans), 9, 7),
            None,
            "wrong total"
        );
        assert_eq!(
            decode_spans(&encode_spans(&[(4, 9), (0, 3)]), 9, 8),
            None,
            "out of order"
        );
        assert_eq!(
            decode_spans(&encode_spans(&[(3, 1)]), 9, 0),
            None,
            "reversed"
        );
        assert_eq!(decode_spans(&[0; 7], 9, 0), None, "ragged");
    }

    #[test]
    fn headers_carry_version_and_call_id() {
        let h = Header::new(7, Message::Health { nonce: 9 });
        let v: serde_json::Value = serde_json::from_slice(&h.to_bytes()).unwrap();
        assert_eq!(v["v"], 1);
        assert_eq!(v["call_id"], 7);
        assert_eq!(v["type"], "health");
        let back: Header = serde_json::from_slice(&h.to_bytes()).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn end_tables_are_validated() {
        assert_eq!(
            decode_ends(&encode_ends(&[1, 5, 5, 9]), 9),
            Some(vec![1, 5, 5, 9])
        );
        assert_eq!(decode_ends(&encode_ends(&[5, 1]), 9), None);
        assert_eq!(decode_ends(&encode_ends(&[10]), 9), None);
        assert_eq!(decode_ends(&[1, 2, 3], 9), None);
    }
}
