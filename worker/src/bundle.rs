//! Module bundles: the entry module and its static import closure, held in memory.
//!
//! The host collects a bundle from a skill directory once ([`collect`]), opens every file on
//! the way through [`crate::scope`] (contained, no symlinks, a regular file, `.mjs`/`.js`, UTF-8,
//! within the source limit), and sends it
//! to each worker once; the worker caches it by [`ModuleBundle::digest`].

use crate::scope::{Scope, ScopeError};
use crate::specifier::{self, Rejected};
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::Declared;
use rquickjs::{Context, Ctx, Module, Runtime};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

/// An entry module and every module it imports, by bundle path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleBundle {
    /// The bundle path of the entry module.
    pub entry: String,
    /// Source text by bundle path.
    pub modules: BTreeMap<String, String>,
}

/// Why a bundle could not be collected.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// A specifier broke the import rules.
    #[error(transparent)]
    Rejected(#[from] Rejected),
    /// A module file is missing, a symlink, outside the skill, or unreadable.
    #[error("module `{path}`: {reason}")]
    File {
        /// The bundle path concerned.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The bundle's source is larger than the limit.
    #[error(
        "the module closure holds {bytes} bytes of source and module paths; the limit is {limit} bytes"
    )]
    TooLarge {
        /// Bytes of source collected so far.
        bytes: usize,
        /// The source limit.
        limit: usize,
    },
    /// A module does not parse.
    #[error("module `{path}` does not compile: {message}")]
    Syntax {
        /// The module that failed (or the entry, when unknown).
        path: String,
        /// The engine's message.
        message: String,
    },
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
fn module_cost(path: &str, source: &str) -> usize {
    path.len() + source.len()
}

/// Collects the static import closure of `entry` (a path relative to `root`).
///
/// The modules are compiled, never run: QuickJS resolves and loads static imports while it
/// compiles, through the same [`specifier::resolve`] rule the worker uses. Every file is opened
/// inside `root` through [`Scope`]: a regular file reached without any symlink, read up to what
/// is left of `source_limit`.
pub fn collect(root: &Path, entry: &str, source_limit: usize) -> Result<ModuleBundle, BundleError> {
    let entry = specifier::check_entry(entry)?;
    let scope = Scope::open(root).map_err(|e| BundleError::File {
        path: root.display().to_string(),
        reason: format!("the skill directory cannot be opened: {e}"),
    })?;
    let state = Rc::new(RefCell::new(CollectState {
        scope,
        modules: BTreeMap::new(),
        error: None,
        limit: source_limit,
    }));
    let entry_source = state.borrow_mut().read(&entry)?;

    let engine_error = |e: rquickjs::Error| BundleError::Syntax {
        path: entry.clone(),
        message: e.to_string(),
    };
    let rt = Runtime::new().map_err(engine_error)?;
    rt.set_memory_limit(256 * crate::limits::MIB);
    rt.set_loader(CollectResolver(state.clone()), CollectLoader(state.clone()));
    let ctx = Context::full(&rt).map_err(engine_error)?;
    let compiled: Result<(), String> =
        ctx.with(
            |ctx| match Module::declare(ctx.clone(), entry.as_str(), entry_source) {
                Ok(_) => Ok(()),
                Err(rquickjs::Error::Exception) => Err(exception_text(&ctx)),
                Err(e) => Err(e.to_string()),
            },
        );
    let mut st = state.borrow_mut();
    if let Some(err) = st.error.take() {
        return Err(err);
    }
    if let Err(message) = compiled {
        return Err(BundleError::Syntax {
            path: entry,
            message,
        });
    }
    Ok(ModuleBundle {
        entry,
        modules: std::mem::take(&mut st.modules),
    })
}

/// The text of the pending exception: `Name: message` plus the stack when there is one.
pub(crate) fn exception_text(ctx: &Ctx<'_>) -> String {
    let v = ctx.catch();
    if let Some(ex) = v.as_exception() {
        let name: String = ex.get("name").unwrap_or_else(|_| "Error".to_string());
        let mut s = match ex.message() {
            Some(m) if !m.is_empty() => format!("{name}: {m}"),
            _ => name,
        };
        if let Some(stack) = ex.stack().filter(|s| !s.trim().is_empty()) {
            s.push('\n');
            s.push_str(stack.trim_end());
        }
        return s;
    }
    if v.is_null() {
        return "null".to_string();
    }
    match v.as_string().and_then(|s| s.to_string().ok()) {
        Some(s) => s,
        None => format!("a thrown {}", v.type_name()),
    }
}

struct CollectState {
    scope: Scope,
    modules: BTreeMap<String, String>,
    error: Option<BundleError>,
    limit: usize,
}

impl CollectState {
    /// Reads one module through the scope: no symlink at any component, nothing outside the
    /// skill directory, a regular file, at most the source bytes still allowed.
    fn read(&mut self, path: &str) -> Result<String, BundleError> {
        let file_err = |reason: String| BundleError::File {
            path: path.to_string(),
            reason,
        };
        // Paths count too (they travel with the source); see [`module_cost`].
        let so_far = self
            .modules
            .iter()
            .map(|(p, s)| module_cost(p, s))
            .sum::<usize>()
            + path.len();
        let left = self.limit.saturating_sub(so_far) as u64;
        let bytes = self.scope.read(path, left).map_err(|e| match e {
            ScopeError::TooLarge { bytes, .. } => BundleError::TooLarge {
                bytes: so_far.saturating_add(usize::try_from(bytes).unwrap_or(usize::MAX)),
                limit: self.limit,
            },
            ScopeError::Symlink { .. } => file_err(format!(
                "{e}; modules must be regular files inside the skill directory"
            )),
            other => file_err(other.to_string()),
        })?;
        let text =
            String::from_utf8(bytes).map_err(|_| file_err("is not valid UTF-8".to_string()))?;
        let total = so_far + text.len();
        if total > self.limit {
            return Err(BundleError::TooLarge {
                bytes: total,
                limit: self.limit,
            });
        }
        self.modules.insert(path.to_string(), text.clone());
        Ok(text)
    }
}

struct CollectResolver(Rc<RefCell<CollectState>>);
struct CollectLoader(Rc<RefCell<CollectState>>);

impl Resolver for CollectResolver {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        specifier::resolve(base, name).map_err(|e| {
            let err = rquickjs::Error::new_resolving_message(base, name, e.reason);
            self.0
                .borrow_mut()
                .error
                .get_or_insert(BundleError::Rejected(e));
            err
        })
    }
}

impl Loader for CollectLoader {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, Declared>> {
        let read = self.0.borrow_mut().read(name);
        match read {
            Ok(source) => Module::declare(ctx.clone(), name, source),
            Err(e) => {
                let err = rquickjs::Error::new_loading_message(name, e.to_string());
                self.0.borrow_mut().error.get_or_insert(e);
                Err(err)
            }
        }
    }
}
