//! The `runx_page` continuation loop of a paged javascript runner over an admitted
//! `json_array` artifact.
//!
//! The artifact is admitted once ([`crate::artifact`]), framed into pages of whole records
//! ([`crate::framing`]), and the export is called once per page with the state the previous
//! page returned. A framing thread runs ahead of the calls: while the worker runs page N, the
//! pages after it are scanned, validated, laid out for transport and hashed, up to
//! [`LOOKAHEAD_BYTES`] of them (`queue`).
//!
//! Every run is split into partitions (`partition`): page `i` runs in partition `i mod N` on a
//! worker of its own, in page order. Where a page goes, one hop each:
//!
//! - **framed** on the framing thread: `snapshot_framer` (framing while the snapshot is
//!   copied), `producer` (the thread's loop: each page laid out for transport and hashed, its
//!   `runx_page` metadata made), `queue` (the bounded queue between it and the calls);
//! - **sent** on the calling side: `page_loop` (what every call of the run shares, [`PageLoop`]:
//!   a page leaving the queue with the whole digest, a call's limits, a reply settled),
//!   `runx_page` (the one encoder of what a call sees), `partition` (a partition's worker),
//!   `send_ahead` (the sequential runner: its one partition, pages sent ahead of the reply
//!   before them), `parallel` (map/fold: one map thread per partition, the fold in page order);
//! - **settled**: `result` (a reply split and checked), `page` (a page on its way, and what the
//!   run gathers, [`Walk`], where every call of a page is recorded);
//! - this module: admission, then the framing thread and the loop of the runner, start to end.

mod page;
mod page_loop;
mod parallel;
mod partition;
mod producer;
mod queue;
mod result;
mod runx_page;
mod send_ahead;
mod snapshot_framer;

use crate::artifact;
use crate::failure::{FailureKind, RunError};
use crate::framing::PageBudget;
use crate::runner::module::Module;
use crate::runner::step::{Produced, Provenance, Ran, RunContext, Step};
pub(crate) use page::At;
pub(crate) use page::too_many_pages;
use page::{Walk, ms};
use page_loop::{PageLoop, page_budget};
use producer::LOOKAHEAD_BYTES;
use queue::PageQueue;
use runx_profile::{JsRunner, PageSource, PagesDecl, PathScope};
use runx_receipts::{ArtifactProvenance, digest};
use runx_worker::CancelToken;
use send_ahead::SendAhead;
use serde_json::Value;
use snapshot_framer::SnapshotFramer;
use std::path::PathBuf;
use std::time::Instant;

/// Runs a paged runner: its module, admission, then the page loop.
pub(crate) fn run(ctx: &RunContext<'_>, step: Step<'_>, js: &JsRunner, pages: &PagesDecl) -> Ran {
    let mut provenance = Provenance::of(step.runner);
    let result = Module::load(ctx, &step, js, &mut provenance)
        .and_then(|module| admit_and_loop(ctx, step, js, pages, module, &mut provenance));
    Ran { result, provenance }
}

/// What every call of a paged run starts from: the input object the module sees, encoded once
/// (neither path input: the runtime owns the file), its digest, and where the artifact is.
pub(crate) struct PagedStart {
    pub base: Vec<u8>,
    /// The same inputs as a map, for a fold's input.
    pub inputs: serde_json::Map<String, Value>,
    pub input_digest: String,
    /// The artifact path as given.
    pub path: String,
    /// The directory it is relative to: the workspace or the package.
    pub root: PathBuf,
}

impl PagedStart {
    /// The start of a paged run of `step`'s runner over `pages`.
    pub(crate) fn of(step: &Step<'_>, pages: &PagesDecl) -> Result<PagedStart, RunError> {
        // Input resolution checked the page inputs; their absence here would be a runtime bug.
        let Some(PageSource { path, scope }) = &step.page_source else {
            return Err(RunError::internal(
                "page_source",
                "a paged run reached the page loop without its artifact path",
            ));
        };
        let mut inputs = step.inputs.clone();
        inputs.remove(&pages.path_from);
        inputs.remove(&pages.path_scope_from);
        let root = match scope {
            PathScope::Workspace => step.workspace.to_path_buf(),
            PathScope::Skill => step.profile.dir.clone(),
        };
        let base =
            serde_json::to_vec(&inputs).map_err(|e| RunError::internal("encode", e.to_string()))?;
        Ok(PagedStart {
            base,
            input_digest: digest(&Value::Object(inputs.clone())),
            inputs,
            path: path.clone(),
            root,
        })
    }

    /// The framing budget of its pages, for calls under `module`'s limits.
    pub(crate) fn budget(&self, pages: &PagesDecl, module: &Module) -> PageBudget {
        page_budget(pages, &module.limits, self.base.len())
    }
}

fn admit_and_loop(
    ctx: &RunContext<'_>,
    step: Step<'_>,
    js: &JsRunner,
    pages: &PagesDecl,
    module: Module,
    provenance: &mut Provenance,
) -> Result<Produced, RunError> {
    let start = PagedStart::of(&step, pages)?;
    provenance.input_digest = Some(start.input_digest.clone());
    let started = Instant::now();
    let artifact = artifact::admit(&start.path, &start.root, ctx.instance, pages.page_bytes)?;
    let mut walk = Walk {
        record: ArtifactProvenance {
            artifact_ref: artifact.artifact_ref.clone(),
            artifact_bytes: artifact.bytes,
            media_type: pages.media_type.clone(),
            ..ArtifactProvenance::default()
        },
        log: &mut provenance.log,
        log_bound: module.limits.log_bytes,
        state: Value::Null,
    };
    let pool = ctx.workers.pool(&module.engine)?;
    // A map/fold runner calls its map with each page, in as many partitions as it declares,
    // whatever the pool's size.
    let partitions = pages.partitions();
    walk.record.partitions = Some(u32::try_from(partitions).unwrap_or(u32::MAX));
    walk.record.module_lifetime = Some(pages.module.name().to_string());
    let export = match &pages.parallel {
        Some(parallel) => {
            walk.record.workers = walk.record.partitions;
            Some(parallel.map.clone())
        }
        None => js.export.clone(),
    };
    let page_loop = PageLoop {
        pool,
        cancel: ctx.cancel,
        artifact: &artifact,
        pages,
        export,
        module,
        base: start.base,
        inputs: start.inputs,
        environment: step.environment,
        progress: step.progress,
    };
    let result = fits(&artifact, ctx.cancel).and_then(|()| match &pages.parallel {
        Some(parallel) => parallel::walk_pages(&page_loop, parallel, partitions, &mut walk),
        None => walk_pages(&page_loop, &mut walk),
    });
    let mut record = walk.record;
    // No result leaves the run before admission is over: the snapshot whole, written from the
    // bytes that hashed to the digest every page carried. (Every page waited for the digest,
    // which admission publishes last, so this does not wait.) A failed run produces nothing
    // and keeps its own error.
    let result = result.and_then(|output| match artifact.finish() {
        Ok(()) => Ok(Produced { output }),
        Err(e) => {
            record.finished = false;
            Err(e.into())
        }
    });
    // A run that failed on a page still names the bytes it failed on; one that was
    // interrupted does not wait for them.
    if matches!(&result, Err(e) if e.kind != FailureKind::Interrupted) {
        let _ = artifact.finish();
    }
    if let Some(took) = artifact.admitted_in() {
        record.timings.admission_ms = ms(took);
        record.whole_digest = artifact.whole_digest().unwrap_or_default().to_string();
    }
    record.timings.wall_ms = ms(started.elapsed());
    provenance.artifact = Some(record);
    result
}

/// Waits for the end of admission when the artifact may not fit in a run's pages, which only
/// the whole pass tells ([`artifact::Artifact::may_not_fit`]): a file that cannot fit is
/// refused before any page is framed, any worker taken or any module called, and a run on
/// one that can loses only the overlap of its admission with framing. Every other run frames
/// while admission goes on.
fn fits(artifact: &artifact::Artifact, cancel: &CancelToken) -> Result<(), RunError> {
    if !artifact.may_not_fit() {
        return Ok(());
    }
    match artifact.digest_unless(cancel)? {
        Some(_) => Ok(()),
        None => Err(RunError::interrupted()),
    }
}

/// Frames pages on a second thread and calls the export once per page until `eof` or
/// `done`; the output is what the last page returned beside `runx_page`.
fn walk_pages(page_loop: &PageLoop<'_>, walk: &mut Walk<'_>) -> Result<Value, RunError> {
    let framer = SnapshotFramer::new(page_loop.artifact, page_loop.cancel);
    let queue = PageQueue::new(LOOKAHEAD_BYTES);
    std::thread::scope(|s| {
        let (give_back, spare_blobs) = std::sync::mpsc::channel::<Vec<u8>>();
        let queue = &queue;
        s.spawn(move || producer::frame_pages(page_loop, framer, queue, &spare_blobs));
        // The consumer first: however the loop ends, its leaving lets the framing thread go.
        let framed = queue.consumer();
        SendAhead::take(page_loop, give_back)?.run(&framed, walk)
    })
}
