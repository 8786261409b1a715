//! Module loading for QuickJS: every import resolves inside the call's bundle, through the one
//! import rule the host used to collect it.

use crate::engine::bundle::ModuleBundle;
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::Declared;
use rquickjs::{Ctx, Module};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

/// What the module loader and the interrupt handler share with the call.
pub(super) struct Shared {
    /// The call's modules; `None` while the runtime waits, made ahead, for its call.
    pub(super) bundle: RefCell<Option<Arc<ModuleBundle>>>,
    /// Set once the static import graph is loaded: any later resolution is a dynamic `import()`.
    pub(super) dynamic: Cell<bool>,
    /// The first refused specifier, reported as `module_rejected` even if the module caught it.
    pub(super) rejected: RefCell<Option<String>>,
}

impl Shared {
    /// Whether the call's bundle holds `path`.
    fn has_module(&self, path: &str) -> bool {
        self.bundle
            .borrow()
            .as_ref()
            .is_some_and(|b| b.modules.contains_key(path))
    }
}

/// Resolves imports inside the call's bundle only (the rule of `runx_rules::resolve_import`);
/// a dynamic `import()` is refused.
pub(super) struct BundleResolver(pub(super) Rc<Shared>);
/// Loads modules from the call's bundle only.
pub(super) struct BundleLoader(pub(super) Rc<Shared>);

impl Resolver for BundleResolver {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        let refuse = |reason: String| {
            let mut slot = self.0.rejected.borrow_mut();
            slot.get_or_insert_with(|| reason.clone());
            Err(rquickjs::Error::new_resolving_message(base, name, reason))
        };
        if self.0.dynamic.get() {
            return refuse(format!(
                "dynamic import(\"{name}\") from `{base}` rejected: modules are loaded statically; use a static import"
            ));
        }
        match runx_rules::resolve_import(base, name) {
            Ok(path) if self.0.has_module(&path) => Ok(path),
            Ok(path) => refuse(format!(
                "import of `{name}` from `{base}` rejected: `{path}` is not in the module bundle"
            )),
            Err(e) => refuse(e.to_string()),
        }
    }
}

impl Loader for BundleLoader {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, Declared>> {
        let bundle = self.0.bundle.borrow().clone();
        let Some(source) = bundle.as_ref().and_then(|b| b.modules.get(name)) else {
            return Err(rquickjs::Error::new_loading_message(
                name,
                "not in the module bundle",
            ));
        };
        Module::declare(ctx.clone(), name, source.as_str())
    }
}
