//! Collecting a bundle from a skill directory: the entry module and its static import closure,
//! every file opened through [`crate::host::scope`] (contained, no symlinks, a regular file,
//! `.mjs`/`.js`, UTF-8, within the source limit).

use crate::engine::bundle::{ModuleBundle, exception_text, module_cost};
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::Declared;
use rquickjs::{Context, Ctx, Module, Runtime};
use runx_rules::ImportRejected;
use runx_rules::{Scope, ScopeError};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

/// Why a bundle could not be collected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// A specifier broke the import rules.
    #[error(transparent)]
    Rejected(#[from] ImportRejected),
    /// A module file is missing, a symlink, outside the skill, or unreadable.
    #[error("{reason}{}", imported_by.as_ref().map(|by| format!(" (imported by `{by}`)")).unwrap_or_default())]
    File {
        /// The bundle path concerned.
        path: String,
        /// What is wrong with it, naming the path.
        reason: String,
        /// The module whose import named it; `None` for the entry module.
        imported_by: Option<String>,
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

/// Collects the static import closure of `entry` (a path relative to `root`).
///
/// The modules are compiled, never run: QuickJS resolves and loads static imports while it
/// compiles, through the same rule the worker uses (`runx_rules::resolve_import`). Every file is opened
/// inside `root` through [`Scope`]: a regular file reached without any symlink, read up to what
/// is left of `source_limit`.
pub fn collect_bundle(
    root: &Path,
    entry: &str,
    source_limit: usize,
) -> Result<ModuleBundle, BundleError> {
    let entry = runx_rules::check_module_entry(entry)?;
    let scope = Scope::open(root).map_err(|e| BundleError::File {
        path: root.display().to_string(),
        reason: format!("the skill directory cannot be opened: {e}"),
        imported_by: None,
    })?;
    let state = Rc::new(RefCell::new(CollectState {
        scope,
        modules: BTreeMap::new(),
        importers: BTreeMap::new(),
        error: None,
        limit: source_limit,
    }));
    let entry_source = state.borrow_mut().read(&entry)?;

    let engine_error = |e: rquickjs::Error| BundleError::Syntax {
        path: entry.clone(),
        message: e.to_string(),
    };
    let rt = Runtime::new().map_err(engine_error)?;
    rt.set_memory_limit(256 * runx_rules::MIB);
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

struct CollectState {
    scope: Scope,
    modules: BTreeMap<String, String>,
    /// The first module whose import resolved to each path, for messages about the path.
    importers: BTreeMap<String, String>,
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
            imported_by: self.importers.get(path).cloned(),
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
        let text = String::from_utf8(bytes)
            .map_err(|_| file_err(format!("`{path}` is not valid UTF-8")))?;
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
        let resolved = runx_rules::resolve_import(base, name);
        if let Ok(path) = &resolved {
            self.0
                .borrow_mut()
                .importers
                .entry(path.clone())
                .or_insert_with(|| base.to_string());
        }
        resolved.map_err(|e| {
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
