//! What a javascript run would load, and what a paged run would admit and page: the module
//! closure collected and hashed as a run collects it, the artifact admitted as a run admits it,
//! and its pages framed by the framer a run frames them with. No JavaScript runs.

use crate::artifact::{self, Artifact};
use crate::failure::RunError;
use crate::framing::{Framer, Page, PageBudget};
use crate::runner::module::Module;
use crate::runner::paged::{At, PagedStart, too_many_pages};
use crate::runner::step::{Provenance, RunContext, Step};
use runx_profile::{JsRunner, PAGE_COUNT, PageSource, PagesDecl, PathScope};
use runx_receipts::sha256_hex;
use serde::Serialize;

/// The module side of a javascript run.
#[derive(Clone, Debug, Serialize)]
pub struct ModulePlan {
    /// The engine it would run on.
    pub engine: String,
    /// The entry module's path in the package.
    pub entry: String,
    /// The export called (`default` when the runner names none); for a map/fold runner, its
    /// map.
    pub export: String,
    /// For a map/fold runner: the fold export.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fold: Option<String>,
    /// The digest of the whole bundle, as the receipt records it (`bundle_digest`).
    pub bundle_digest: String,
    /// Every module of the closure (the entry and every module it imports), in path order.
    pub modules: Vec<ModuleFile>,
}

/// One module of a closure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ModuleFile {
    /// Its path in the package.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// `sha256:<hex>` of its bytes.
    pub digest: String,
}

/// The artifact a paged run would admit.
#[derive(Clone, Debug, Serialize)]
pub struct ArtifactPlan {
    /// The path as given.
    pub path: String,
    /// The scope it is relative to: `workspace` or `skill`.
    pub scope: &'static str,
    /// The scope's directory.
    pub root: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// `sha256:<hex>` of its bytes (the receipt's `whole_digest`).
    pub digest: String,
    /// The media type recorded for it.
    pub media_type: String,
}

/// The pages a paged run would call its export with.
#[derive(Clone, Debug, Serialize)]
pub struct PagePlan {
    /// Source bytes one page may span (the runner's `page_bytes`).
    pub page_bytes: usize,
    /// Bytes of records (with their per-record cost) one call may carry, once the other
    /// inputs, the page metadata and the largest state are counted.
    pub payload_bytes: usize,
    /// The number of pages framed (every page, unless the plan stops).
    pub count: usize,
    /// Each page's byte range, in order.
    pub pages: Vec<PlannedPage>,
    /// Where a run would fail once started, if it reaches that far: a page that does not
    /// frame, or more pages than a run may deliver.
    pub stop: Option<PageStop>,
}

/// One page: `offset..next_offset` of the artifact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlannedPage {
    /// Zero-based page number.
    pub index: u32,
    /// Its first byte.
    pub offset: u64,
    /// One past its last byte (the next page's `offset`).
    pub next_offset: u64,
    /// The number of records it holds.
    pub records: usize,
    /// The last page.
    pub eof: bool,
}

/// Where a paged run would fail after it started.
#[derive(Clone, Debug, Serialize)]
pub struct PageStop {
    /// The page that would fail.
    pub page_index: Option<u32>,
    /// Its byte offset, or where framing failed.
    pub offset: u64,
    /// The failure the run would end with.
    pub error: RunError,
}

/// The module of a javascript runner and, for a paged runner, its artifact and pages.
pub(super) struct Planned {
    pub module: ModulePlan,
    pub paged: Option<PagedPlan>,
}

/// The paged part of a plan.
pub(super) struct PagedPlan {
    /// The digest of the inputs the module sees (without the path inputs).
    pub input_digest: String,
    pub artifact: ArtifactPlan,
    pub pages: PagePlan,
}

/// Loads `js`'s module as a run does (engine, closure, digest) and, when it is paged, admits
/// and frames its artifact.
pub(super) fn plan(
    ctx: &RunContext<'_>,
    step: &Step<'_>,
    js: &JsRunner,
) -> Result<Planned, RunError> {
    let mut provenance = Provenance::of(step.runner);
    let module = Module::load(ctx, step, js, &mut provenance)?;
    let parallel = js.pages.as_ref().and_then(|p| p.parallel.as_ref());
    let module_plan = ModulePlan {
        engine: module.engine.clone(),
        entry: module.bundle.entry.clone(),
        export: parallel
            .map(|p| p.map.clone())
            .or_else(|| js.export.clone())
            .unwrap_or_else(|| "default".to_string()),
        fold: parallel.map(|p| p.fold.clone()),
        bundle_digest: module.digest.clone(),
        modules: module
            .bundle
            .modules
            .iter()
            .map(|(path, source)| ModuleFile {
                path: path.clone(),
                bytes: source.len() as u64,
                digest: sha256_hex(source.as_bytes()),
            })
            .collect(),
    };
    let paged = match &js.pages {
        Some(pages) => Some(plan_pages(ctx, step, pages, &module)?),
        None => None,
    };
    Ok(Planned {
        module: module_plan,
        paged,
    })
}

/// Admits the artifact as a run does and frames all of it.
fn plan_pages(
    ctx: &RunContext<'_>,
    step: &Step<'_>,
    pages: &PagesDecl,
    module: &Module,
) -> Result<PagedPlan, RunError> {
    let start = PagedStart::of(step, pages)?;
    let artifact = artifact::admit(&start.path, &start.root, ctx.instance, pages.page_bytes)?;
    // The whole snapshot and its digest; or, as for a run, the refusal of a file that cannot
    // fit in a run's pages.
    let whole_digest = artifact.whole_digest()?.to_string();
    let scope = match &step.page_source {
        Some(PageSource {
            scope: PathScope::Skill,
            ..
        }) => "skill",
        _ => "workspace",
    };
    let budget = start.budget(pages, module);
    Ok(PagedPlan {
        input_digest: start.input_digest.clone(),
        artifact: ArtifactPlan {
            path: start.path.clone(),
            scope,
            root: start.root.display().to_string(),
            bytes: artifact.bytes,
            digest: whole_digest,
            media_type: pages.media_type.clone(),
        },
        pages: frame(&artifact, &budget),
    })
}

/// Frames the whole artifact into pages under `budget`, up to the first page a run could not
/// deliver.
fn frame(artifact: &Artifact, budget: &PageBudget) -> PagePlan {
    let mut plan = PagePlan {
        page_bytes: budget.page_bytes,
        payload_bytes: budget.payload_bytes,
        count: 0,
        pages: Vec::new(),
        stop: None,
    };
    let framed = Framer::new(artifact.data()).and_then(|mut framer| {
        while let Some(page) = framer.next_page(budget)? {
            if !admit_page(&mut plan, &page) || page.eof {
                break;
            }
        }
        Ok(())
    });
    if let Err(e) = framed {
        plan.stop = Some(PageStop {
            page_index: e.page_index(),
            offset: e.offset(),
            error: e.into(),
        });
    }
    plan.count = plan.pages.len();
    plan
}

/// Adds `page` to the plan, or records why a run would stop at it; whether to go on.
fn admit_page(plan: &mut PagePlan, page: &Page) -> bool {
    if u64::from(page.index) >= PAGE_COUNT.max {
        let at = At {
            index: page.index,
            offset: page.offset,
        };
        plan.stop = Some(PageStop {
            page_index: Some(page.index),
            offset: page.offset,
            error: at.locate(too_many_pages()),
        });
        return false;
    }
    plan.pages.push(PlannedPage {
        index: page.index,
        offset: page.offset,
        next_offset: page.next_offset,
        records: page.record_count(),
        eof: page.eof,
    });
    true
}
