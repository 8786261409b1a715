//! Module bundles: the entry module and its static import closure, held in memory.
//!
//! The host collects a bundle from a skill directory once ([`crate::host::collect`]) and sends
//! it to each worker once; the worker caches it by [`ModuleBundle::digest`].

use rquickjs::{Ctx, Exception};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// An entry module and every module it imports, by bundle path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleBundle {
    /// The bundle path of the entry module.
    pub entry: String,
    /// Source text by bundle path.
    pub modules: BTreeMap<String, String>,
}

impl ModuleBundle {
    /// A bundle from sources already in memory (tests, benchmarks, embedders).
    pub fn from_sources<I, K, V>(entry: &str, modules: I) -> ModuleBundle
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        ModuleBundle {
            entry: entry.to_string(),
            modules: modules
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// `sha256:<hex>` over the entry name and every (path, source) pair, length-prefixed so no
    /// two different bundles share a digest.
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        let mut field = |b: &[u8]| {
            h.update((b.len() as u64).to_be_bytes());
            h.update(b);
        };
        field(self.entry.as_bytes());
        for (path, source) in &self.modules {
            field(path.as_bytes());
            field(source.as_bytes());
        }
        format!("sha256:{}", hex::encode(h.finalize()))
    }

    /// Bytes the bundle counts against the source limit: every module's source and its path.
    /// Paths count, so a bundle of many empty modules with long names is as large as it looks.
    pub fn source_bytes(&self) -> usize {
        self.modules
            .iter()
            .map(|(path, source)| module_cost(path, source))
            .sum()
    }
}

/// What one module counts against the source limit.
pub(crate) fn module_cost(path: &str, source: &str) -> usize {
    path.len() + source.len()
}

/// An exception as text: `Name: message` plus the stack when there is one.
pub(crate) fn exception_summary(ex: &Exception<'_>) -> String {
    let name: String = ex.get("name").unwrap_or_else(|_| "Error".to_string());
    let mut s = match ex.message() {
        Some(m) if !m.is_empty() => format!("{name}: {m}"),
        _ => name,
    };
    if let Some(stack) = ex.stack().filter(|s| !s.trim().is_empty()) {
        s.push('\n');
        s.push_str(stack.trim_end());
    }
    s
}

/// The text of the pending exception ([`exception_summary`] when it is an `Error`).
pub(crate) fn exception_text(ctx: &Ctx<'_>) -> String {
    let v = ctx.catch();
    if let Some(ex) = v.as_exception() {
        return exception_summary(ex);
    }
    if v.is_null() {
        return "null".to_string();
    }
    match v.as_string().and_then(|s| s.to_string().ok()) {
        Some(s) => s,
        None => format!("a thrown {}", v.type_name()),
    }
}
