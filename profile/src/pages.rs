//! The `pages:` block of a paged javascript runner: where its artifact comes from, how it is
//! framed, and (a runx extension) the map/fold exports that page it in parallel.

use crate::decl::{InputDecl, ValueType};
use crate::limits::{PAGE_BYTES, PAGE_WORKERS};
use crate::model::{Framing, ModuleLifetime, PagesDecl, ParallelDecl, RESERVED_PAGE_INPUT};
use crate::runner_map::RawPages;
use std::collections::BTreeMap;

/// Whether `name` can name a JavaScript export.
pub(crate) fn is_export_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$');
    first_ok && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

/// `pages.map`, `pages.fold` and `pages.workers` (a runx extension): both exports or neither,
/// each a JavaScript export name, and a worker count within [`PAGE_WORKERS`].
fn build_parallel(
    map: Option<String>,
    fold: Option<String>,
    workers: Option<u64>,
) -> Result<Option<ParallelDecl>, String> {
    let (map, fold) = match (map, fold) {
        (Some(map), Some(fold)) => (map, fold),
        (None, None) => {
            return match workers {
                None => Ok(None),
                Some(_) => Err(
                    "`pages.workers` applies to a map/fold runner; declare `pages.map` and `pages.fold` too, or remove it"
                        .to_string(),
                ),
            };
        }
        (Some(_), None) => {
            return Err("`pages.map` is declared without `pages.fold`; a map/fold runner names both exports (`fold` merges the page results in page order)".to_string());
        }
        (None, Some(_)) => {
            return Err("`pages.fold` is declared without `pages.map`; a map/fold runner names both exports (`map` runs once per page)".to_string());
        }
    };
    for (key, name) in [("map", &map), ("fold", &fold)] {
        if !is_export_name(name) {
            return Err(format!(
                "`pages.{key}` `{name}` is not a JavaScript export name; name a function the module exports"
            ));
        }
    }
    let workers = workers.unwrap_or(PAGE_WORKERS.default);
    if !(PAGE_WORKERS.min..=PAGE_WORKERS.max).contains(&workers) {
        return Err(format!(
            "`pages.workers` is {workers}; allowed {} to {} (default {}): the partitions its pages are mapped in",
            PAGE_WORKERS.min, PAGE_WORKERS.max, PAGE_WORKERS.default
        ));
    }
    // At most 16.
    let workers = usize::try_from(workers).unwrap_or(usize::MAX);
    Ok(Some(ParallelDecl { map, fold, workers }))
}

fn is_page_input_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

pub(crate) fn build_pages(
    raw: RawPages,
    inputs: &BTreeMap<String, InputDecl>,
) -> Result<PagesDecl, String> {
    for (key, value) in [
        ("path_from", &raw.path_from),
        ("path_scope_from", &raw.path_scope_from),
    ] {
        if !is_page_input_name(value) {
            return Err(format!(
                "`pages.{key}` is `{value}`; it names an input and must match [A-Za-z0-9_-]+"
            ));
        }
        if value == RESERVED_PAGE_INPUT {
            return Err(format!(
                "`pages.{key}` may not be `{RESERVED_PAGE_INPUT}`, which the runtime reserves for page metadata"
            ));
        }
        if let Some(decl) = inputs.get(value.as_str())
            && !matches!(
                decl.ty,
                ValueType::String | ValueType::Json | ValueType::Any
            )
        {
            return Err(format!(
                "`pages.{key}` names input `{value}`, which is declared `{}`; it must be a string",
                decl.ty
            ));
        }
    }
    if raw.path_from == raw.path_scope_from {
        return Err(format!(
            "`pages.path_from` and `pages.path_scope_from` both name `{}`; they must be different inputs",
            raw.path_from
        ));
    }
    let framing = match raw.framing.as_deref() {
        None | Some("json_array") => Framing::JsonArray,
        Some(other) => {
            return Err(format!(
                "`pages.framing` is `{other}`; the only framing is `json_array`"
            ));
        }
    };
    let media_type = raw
        .media_type
        .unwrap_or_else(|| "application/json".to_string());
    if media_type.trim().is_empty() || !media_type.contains('/') {
        return Err(format!(
            "`pages.media_type` is `{media_type}`; give a media type such as application/json"
        ));
    }
    let page_bytes = raw.page_bytes.unwrap_or(PAGE_BYTES.default);
    if !(PAGE_BYTES.min..=PAGE_BYTES.max).contains(&page_bytes) {
        return Err(format!(
            "`pages.page_bytes` is {page_bytes}; allowed {} to {} (default {})",
            PAGE_BYTES.min, PAGE_BYTES.max, PAGE_BYTES.default
        ));
    }
    // At most 4 MiB, so it fits a usize everywhere.
    let page_bytes = usize::try_from(page_bytes).unwrap_or(usize::MAX);
    let parallel = build_parallel(raw.map, raw.fold, raw.workers)?;
    let module = match raw.module.as_deref() {
        None | Some("page") => ModuleLifetime::Page,
        Some("partition") => ModuleLifetime::Partition,
        Some(other) => {
            return Err(format!(
                "`pages.module` is `{other}`; it is `page` (a fresh module instance for every page, the default) or `partition` (one instance for every page of a partition)"
            ));
        }
    };
    Ok(PagesDecl {
        path_from: raw.path_from,
        path_scope_from: raw.path_scope_from,
        media_type,
        framing,
        page_bytes,
        parallel,
        module,
    })
}
