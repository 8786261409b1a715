//! The `runx_page` continuation loop over an admitted `json_array` artifact.

use crate::artifact::{self, Artifact};
use crate::digest::{digest, sha256_hex};
use crate::error::RunError;
use crate::framing::{Framer, Page, PageBudget};
use crate::profile::{JsRunner, PagesDecl, PathScope};
use crate::receipt::{ArtifactProvenance, Receipt};
use crate::runtime::{Produced, Runtime, Step};
use runx_worker::bundle::ModuleBundle;
use runx_worker::engine::ConsoleLog;
use runx_worker::limits::Limits;
use runx_worker::process::{Call, PagePayload};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Progress of a paged run, reported after each page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageProgress {
    /// Pages finished.
    pub pages: u32,
    /// Source bytes covered by the finished pages.
    pub bytes: u64,
    /// Size of the artifact.
    pub total_bytes: u64,
}

/// Receives [`PageProgress`] after each page (a progress bar, a log line).
#[derive(Clone)]
pub struct ProgressSink(pub Arc<dyn Fn(&PageProgress) + Send + Sync>);

impl ProgressSink {
    fn report(&self, p: &PageProgress) {
        (self.0)(p)
    }
}

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The largest continuation state: 2 MiB of JSON.
pub const MAX_STATE_BYTES: usize = 2 * 1024 * 1024;
/// The most pages one run may deliver.
pub const MAX_PAGES: u32 = 4096;
/// Room kept in each call's input for the page metadata (everything but state and records).
const META_RESERVE: usize = 16 * 1024;
/// Bytes of offset table per record in the transport.
const PER_RECORD_OVERHEAD: usize = 4;

/// Everything a paged run needs.
pub(crate) struct PagedRun<'a> {
    pub step: Step<'a>,
    pub js: &'a JsRunner,
    pub pages: &'a PagesDecl,
    pub bundle: Arc<ModuleBundle>,
    /// The bundle's digest, computed once by the caller.
    pub bundle_digest: String,
    pub limits: Limits,
}

/// A page framed and hashed, waiting for the state of the page before it.
struct Prepared {
    page: Page,
    meta_prefix: String,
    ends: Vec<u32>,
    blob: Vec<u8>,
}

pub(crate) fn run(
    rt: &Runtime,
    run: PagedRun<'_>,
    receipt: &mut Receipt,
) -> Result<Produced, RunError> {
    let PagedRun {
        step,
        js,
        pages,
        bundle,
        bundle_digest,
        limits,
    } = run;
    let Step {
        profile,
        runner,
        mut inputs,
        environment,
        req,
    } = step;
    let (workspace, progress) = (&req.workspace, req.progress.as_ref());
    let source = crate::inputs::page_source(runner, &inputs)?.ok_or_else(|| {
        RunError::new(
            "input",
            "missing_input",
            format!(
                "input `{}` (the artifact path) is required",
                pages.path_from
            ),
        )
    })?;
    inputs.remove(&pages.path_from);
    inputs.remove(&pages.path_scope_from);
    let root = match source.scope {
        PathScope::Workspace => workspace.to_path_buf(),
        PathScope::Skill => profile.dir.clone(),
    };
    let base_value = Value::Object(inputs);
    receipt.input_digest = Some(digest(&base_value));
    let base = serde_json::to_vec(&base_value)
        .map_err(|e| RunError::new("internal", "encode", e.to_string()))?;
    let started = Instant::now();
    let artifact = artifact::admit(&source.path, &root, rt.instance())?;
    let admission = started.elapsed();
    let mut provenance = ArtifactProvenance {
        artifact_ref: artifact.artifact_ref.clone(),
        whole_digest: artifact.whole_digest.clone(),
        artifact_bytes: artifact.bytes,
        media_type: pages.media_type.clone(),
        ..ArtifactProvenance::default()
    };
    provenance.timings.admission_ms = ms(admission);
    let result = page_loop(
        rt,
        &artifact,
        pages,
        js,
        bundle,
        bundle_digest,
        &base,
        environment,
        limits,
        &mut provenance,
        progress,
    );
    provenance.timings.wall_ms = ms(started.elapsed());
    receipt.artifact = Some(provenance);
    result
}

#[allow(clippy::too_many_arguments)]
fn page_loop(
    rt: &Runtime,
    artifact: &Artifact,
    pages: &PagesDecl,
    js: &JsRunner,
    bundle: Arc<ModuleBundle>,
    bundle_digest: String,
    base: &[u8],
    environment: BTreeMap<String, String>,
    limits: Limits,
    provenance: &mut ArtifactProvenance,
    progress: Option<&ProgressSink>,
) -> Result<Produced, RunError> {
    let data = artifact.data();
    let payload_bytes = limits
        .input_bytes
        .saturating_sub(base.len() + META_RESERVE + MAX_STATE_BYTES);
    let budget = PageBudget {
        page_bytes: pages.page_bytes,
        payload_bytes,
        per_record_overhead: PER_RECORD_OVERHEAD,
    };
    let framing_error = |e: crate::framing::FramingError, prov: &mut ArtifactProvenance| {
        prov.failed_page_index = e.page_index();
        prov.failed_offset = Some(e.offset());
        RunError::new("page", "framing", e.to_string())
    };
    let mut framer = match Framer::new(data) {
        Ok(f) => f,
        Err(e) => return Err(framing_error(e, provenance)),
    };
    let pool = rt.pool()?;
    // A framing thread runs one page ahead: while the worker runs page N, page N+1 is scanned,
    // validated, copied into its transport layout and hashed.
    std::thread::scope(|s| {
        let (tx, pages_ahead) = std::sync::mpsc::sync_channel(1);
        // Record buffers come back after their call, so pages reuse memory instead of
        // faulting in a fresh megabyte each.
        let (give_back, spare_blobs) = std::sync::mpsc::channel::<Vec<u8>>();
        s.spawn(move || {
            loop {
                let started = Instant::now();
                let next = framer.next_page(&budget).map(|page| {
                    page.map(|page| {
                        let blob = spare_blobs.try_recv().unwrap_or_default();
                        let prepared = prepare_page(artifact, pages, page, data, blob);
                        // Copied and hashed: this range of the map is not read again.
                        artifact.release(
                            prepared.page.offset as usize,
                            prepared.page.next_offset as usize,
                        );
                        prepared
                    })
                });
                let last = !matches!(&next, Ok(Some(p)) if !p.page.eof);
                if tx.send((next, started.elapsed())).is_err() || last {
                    return;
                }
            }
        });
        let mut state = Value::Null;
        let mut log = ConsoleLog::default();
        loop {
            let Ok((next, took)) = pages_ahead.recv() else {
                return Err(RunError::new(
                    "internal",
                    "framing_thread",
                    "the framing thread stopped without a final page",
                ));
            };
            provenance.timings.framing_ms += ms(took);
            let prepared = match next {
                Ok(Some(p)) => p,
                Ok(None) => {
                    return Err(RunError::new(
                        "page",
                        "no_final_page",
                        "the artifact ended without a final page",
                    ));
                }
                Err(e) => return Err(framing_error(e, provenance)),
            };
            let index = prepared.page.index;
            let offset = prepared.page.offset;
            if index >= MAX_PAGES {
                provenance.failed_page_index = Some(index);
                provenance.failed_offset = Some(offset);
                return Err(RunError::new(
                    "resource_limit",
                    "page_count",
                    format!(
                        "page {index} (byte offset {offset}): a run may deliver at most {MAX_PAGES} pages; use larger page_bytes"
                    ),
                ));
            }
            let state_json = serde_json::to_string(&state)
                .map_err(|e| RunError::new("internal", "encode", e.to_string()))?;
            let mut meta = prepared.meta_prefix;
            meta.push_str(&state_json);
            meta.push('}');
            let eof = prepared.page.eof;
            let covered = prepared.page.next_offset;
            let mut call = Call {
                bundle: bundle.clone(),
                bundle_digest: bundle_digest.clone(),
                export: js.export.clone(),
                input: base.to_vec(),
                page: Some(PagePayload {
                    meta: meta.into_bytes(),
                    ends: prepared.ends,
                    blob: prepared.blob,
                }),
                environment: environment.clone(),
                limits,
                idempotent: true,
            };
            let started = Instant::now();
            let reply = pool.call(&call);
            let call_took = started.elapsed();
            if let Some(page) = call.page.take() {
                let _ = give_back.send(page.blob);
            }
            provenance.page_count = index + 1;
            let result_started = Instant::now();
            let fail_at = |prov: &mut ArtifactProvenance, e: RunError| {
                prov.failed_page_index = Some(index);
                prov.failed_offset = Some(offset);
                RunError {
                    message: format!("page {index} (byte offset {offset}): {}", e.message),
                    ..e
                }
            };
            let reply = match reply {
                Ok(r) => {
                    provenance.timings.call_ms += ms(call_took);
                    provenance.timings.engine_ms += ms(r.engine_time);
                    r
                }
                Err(e) => {
                    log.lines.extend(e.log.lines);
                    return Err(fail_at(provenance, RunError::from(e.failure)));
                }
            };
            log.lines.extend(reply.log.lines);
            log.dropped_bytes += reply.log.dropped_bytes;
            let output: Value = serde_json::from_slice(&reply.output).map_err(|e| {
                fail_at(
                    provenance,
                    RunError::new("output_rejected", "invalid_json", e.to_string()),
                )
            })?;
            let (new_state, done, rest) = match split_result(output, eof) {
                Ok(x) => x,
                Err(e) => return Err(fail_at(provenance, e)),
            };
            let state_len = serde_json::to_vec(&new_state).map(|v| v.len()).unwrap_or(0);
            if state_len > MAX_STATE_BYTES {
                return Err(fail_at(
                    provenance,
                    RunError::new(
                        "resource_limit",
                        "state_bytes",
                        format!(
                            "the continuation state is {state_len} bytes; at most {MAX_STATE_BYTES} bytes (2 MiB) are carried between pages"
                        ),
                    ),
                ));
            }
            provenance.timings.result_ms += ms(result_started.elapsed());
            if let Some(p) = progress {
                p.report(&PageProgress {
                    pages: index + 1,
                    bytes: covered,
                    total_bytes: artifact.bytes,
                });
            }
            if eof || done {
                provenance.finished = true;
                return Ok(Produced {
                    output: Value::Object(rest),
                    log,
                });
            }
            state = new_state;
        }
    })
}

/// Splits a page result into (state, done, the rest). An intermediate result must be exactly
/// `{runx_page: {state, done?}}`.
fn split_result(output: Value, eof: bool) -> Result<(Value, bool, Map<String, Value>), RunError> {
    let bad = |m: String| RunError::new("output_rejected", "page_result", m);
    let Value::Object(mut obj) = output else {
        return Err(bad("a page result must be an object".to_string()));
    };
    let page = obj.remove("runx_page");
    let (state, done) = match page {
        None if eof => (Value::Null, false),
        None => {
            return Err(bad(
                "an intermediate page result must be `{runx_page: {state, done?}}`; `runx_page` is missing".to_string(),
            ));
        }
        Some(Value::Object(mut p)) => {
            let state = p.remove("state").unwrap_or(Value::Null);
            let done = match p.remove("done") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => b,
                Some(other) => {
                    return Err(bad(format!(
                        "`runx_page.done` must be a boolean, not {other}"
                    )));
                }
            };
            if let Some(extra) = p.keys().next() {
                return Err(bad(format!(
                    "`runx_page` may hold only `state` and `done`; it also holds `{extra}`"
                )));
            }
            (state, done)
        }
        Some(other) => return Err(bad(format!("`runx_page` must be an object, not {other}"))),
    };
    if !eof
        && !done
        && let Some(extra) = obj.keys().next()
    {
        {
            return Err(bad(format!(
                "an intermediate page result must be exactly `{{runx_page: {{state, done?}}}}`; it also holds `{extra}` (return domain outputs only with `done: true` or on the eof page)"
            )));
        }
    }
    Ok((state, done, obj))
}

/// Copies a page's records into the transport layout and hashes its byte range.
fn prepare_page(
    artifact: &Artifact,
    pages: &PagesDecl,
    page: Page,
    data: &[u8],
    mut blob: Vec<u8>,
) -> Prepared {
    blob.clear();
    blob.reserve(page.record_bytes());
    let mut ends = Vec::with_capacity(page.records.len());
    for r in &page.records {
        blob.extend_from_slice(&data[r.clone()]);
        ends.push(blob.len() as u32);
    }
    let range = &data[page.offset as usize..page.next_offset as usize];
    let head = serde_json::json!({
        "artifact_ref": artifact.artifact_ref,
        "media_type": pages.media_type,
        "whole_digest": artifact.whole_digest,
        "artifact_bytes": artifact.bytes,
        "page_index": page.index,
        "offset": page.offset,
        "length": page.length(),
        "next_offset": page.next_offset,
        "eof": page.eof,
        "range_digest": sha256_hex(range),
    });
    let mut meta_prefix = head.to_string();
    meta_prefix.pop(); // the closing brace; `"state": …}` follows
    meta_prefix.push_str(",\"state\":");
    Prepared {
        page,
        meta_prefix,
        ends,
        blob,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn intermediate_results_are_exact() {
        assert!(split_result(json!({"runx_page": {"state": 1}}), false).is_ok());
        assert!(split_result(json!({"runx_page": {"state": 1}, "x": 1}), false).is_err());
        assert!(split_result(json!({"runx_page": {"state": 1, "y": 2}}), false).is_err());
        assert!(split_result(json!({"x": 1}), false).is_err());
        let (_, done, rest) = split_result(
            json!({"runx_page": {"state": 1, "done": true}, "x": 1}),
            false,
        )
        .unwrap();
        assert!(done);
        assert_eq!(rest["x"], 1);
        let (_, _, rest) = split_result(json!({"x": 2}), true).unwrap();
        assert_eq!(rest["x"], 2);
    }
}
