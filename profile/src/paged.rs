//! What a paged runner declares (`pages:`), as the runtime reads it: the artifact's framing,
//! the map/fold exports, the partitions and the module's lifetime.

/// A paged `json_array` artifact source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PagesDecl {
    /// Name of the input holding the artifact path.
    pub path_from: String,
    /// Name of the input holding the path scope (`workspace` when absent, or `skill`).
    pub path_scope_from: String,
    /// The media type recorded for the artifact (`application/json` by default).
    pub media_type: String,
    /// How records are split.
    pub framing: Framing,
    /// Source bytes one page may span ([`crate::limits::PAGE_BYTES`]).
    pub page_bytes: usize,
    /// A map/fold runner (a runx extension): pages mapped in parallel, folded in page order.
    pub parallel: Option<ParallelDecl>,
    /// How long a module instance lives (`pages.module`, a runx extension): one page's call,
    /// or every page of a partition.
    pub module: ModuleLifetime,
}

impl PagesDecl {
    /// The partitions of a run: page `i` belongs to partition `i mod partitions`, and every
    /// page of a partition runs on one worker, in page order. A sequential runner is one
    /// partition; a map/fold runner has `pages.workers`.
    pub fn partitions(&self) -> usize {
        self.parallel.as_ref().map_or(1, |p| p.workers.max(1))
    }
}

/// How long the module instance of a paged runner lives (`pages.module`, a runx extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ModuleLifetime {
    /// A fresh context and module instance for every page's call (runx's own semantics).
    #[default]
    Page,
    /// The module is evaluated once per partition, and every page of the partition calls that
    /// instance: module state carries from page to page of a partition.
    Partition,
}

impl ModuleLifetime {
    /// The name `pages.module` gives it.
    pub fn name(self) -> &'static str {
        match self {
            ModuleLifetime::Page => "page",
            ModuleLifetime::Partition => "partition",
        }
    }
}

/// The map/fold declaration of a paged runner (`pages.map`, `pages.fold`, `pages.workers`), a
/// runx extension: each page is mapped on its own by `map`, on up to `workers` workers at
/// once, and the map results are folded strictly in page order by `fold`, so the output does
/// not depend on how many workers mapped or in what order they finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParallelDecl {
    /// The export called once per page with `runx_page` (no `state`); it returns the page's
    /// result.
    pub map: String,
    /// The export called once per page, in page order, with `runx_page.state` (the previous
    /// fold's state) and `runx_page.result` (the page's map result); it returns what a
    /// sequential page function returns.
    pub fold: String,
    /// The partitions its pages are mapped in ([`crate::limits::PAGE_WORKERS`]): page `i` in
    /// partition `i mod workers`, each partition on a worker of its own. Not capped by the
    /// pool: the output never depends on the machine.
    pub workers: usize,
}

/// How a paged artifact is split into records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One JSON array (optionally behind a `name = ` assignment), split at top-level commas.
    JsonArray,
}
