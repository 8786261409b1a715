//! The module graph of one V8 call: compiled from the in-memory bundle, linked by the one
//! import rule ([`runx_rules::resolve_import`]), and never extended at run time (`import()` is refused).
//!
//! The whole static graph is walked and compiled before V8 links it, so every refusal is found
//! here, with the words the QuickJS engine uses; V8's resolve callback then only looks up
//! modules this walk compiled. Modules are named by their bundle paths, so stack traces read
//! `main.mjs:1:7` as they do on QuickJS.

use super::state::{CallState, Scope};
use super::thrown::{Caught, caught, classify};
use crate::wire::failure::{Failure, FailureCode};
use rusty_v8 as v8;
use std::rc::Rc;

/// Compiles the entry module and its static imports, and links them. The caller evaluates.
pub(super) fn load<'s>(
    tc: &mut Scope<'_, '_, 's, '_>,
    state: &CallState,
) -> Result<v8::Local<'s, v8::Module>, Failure> {
    let entry = state.bundle.entry.clone();
    if !state.bundle.modules.contains_key(&entry) {
        return Err(Failure::new(
            FailureCode::InvalidRequest,
            format!("the bundle has no entry module `{entry}`"),
        ));
    }
    let root = compile(tc, state, &entry)?;
    let mut pending = vec![(root, entry)];
    while let Some((module, base)) = pending.pop() {
        let requests = module.get_module_requests();
        for i in 0..requests.length() {
            let Some(request) = requests
                .get(tc, i)
                .and_then(|r| v8::Local::<v8::ModuleRequest>::try_from(r).ok())
            else {
                continue;
            };
            let spec = request.get_specifier().to_rust_string_lossy(tc);
            let path = resolve(state, &base, &spec)
                .map_err(|reason| Failure::new(FailureCode::ModuleRejected, reason))?;
            if path_known(state, &path) {
                continue;
            }
            let imported = compile(tc, state, &path)?;
            pending.push((imported, path));
        }
    }
    match root.instantiate_module(tc, resolve_compiled) {
        Some(true) => Ok(root),
        _ => {
            let caught = caught(tc);
            Err(classify(state, FailureCode::ModuleRejected, caught))
        }
    }
}

/// The bundle path `spec` names from the module at `base`, or why it may not be imported.
fn resolve(state: &CallState, base: &str, spec: &str) -> Result<String, String> {
    match runx_rules::resolve_import(base, spec) {
        Ok(path) if state.bundle.modules.contains_key(&path) => Ok(path),
        Ok(path) => Err(state.refuse(format!(
            "import of `{spec}` from `{base}` rejected: `{path}` is not in the module bundle"
        ))),
        Err(e) => Err(state.refuse(e.to_string())),
    }
}

fn path_known(state: &CallState, path: &str) -> bool {
    state.modules.borrow().iter().any(|(_, p)| p == path)
}

/// Compiles the module at bundle path `path` and records it in the call's state.
fn compile<'s>(
    tc: &mut Scope<'_, '_, 's, '_>,
    state: &CallState,
    path: &str,
) -> Result<v8::Local<'s, v8::Module>, Failure> {
    let source = state
        .bundle
        .modules
        .get(path)
        .map(String::as_str)
        .unwrap_or_default();
    let too_large = || {
        Failure::new(
            FailureCode::ModuleRejected,
            format!("module `{path}` is too large"),
        )
    };
    let text = v8::String::new(tc, source).ok_or_else(too_large)?;
    let name = v8::String::new(tc, path).ok_or_else(too_large)?;
    let origin = v8::ScriptOrigin::new(
        tc,
        name.into(),
        0,
        0,
        false,
        0,
        None,
        false,
        false,
        true,
        None,
    );
    let mut source = v8::script_compiler::Source::new(text, Some(&origin));
    let Some(module) = v8::script_compiler::compile_module(tc, &mut source) else {
        let text = located(tc);
        return Err(classify(
            state,
            FailureCode::ModuleRejected,
            Caught::error(text),
        ));
    };
    state
        .modules
        .borrow_mut()
        .push((v8::Global::new(tc, module), path.to_string()));
    Ok(module)
}

/// The caught exception's text with the place it points to (a syntax error's stack has none).
fn located(tc: &mut Scope<'_, '_, '_, '_>) -> String {
    let text = caught(tc).thrown.text();
    let Some(message) = tc.message() else {
        return text;
    };
    let name = message
        .get_script_resource_name(tc)
        .map(|n| n.to_rust_string_lossy(tc))
        .unwrap_or_default();
    let line = message.get_line_number(tc).unwrap_or(0);
    let column = message.get_start_column() + 1;
    if name.is_empty() || text.contains(&format!("{name}:{line}")) {
        return text;
    }
    format!("{text}\n    at {name}:{line}:{column}")
}

/// V8's resolve callback during linking: the module the walk in [`load`] compiled for
/// `specifier` written in `referrer`. It never compiles or refuses anything itself.
#[allow(
    unsafe_code,
    reason = "a module-resolution callback V8 calls with its own scope"
)]
fn resolve_compiled<'s>(
    context: v8::Local<'s, v8::Context>,
    specifier: v8::Local<'s, v8::String>,
    _attributes: v8::Local<'s, v8::FixedArray>,
    referrer: v8::Local<'s, v8::Module>,
) -> Option<v8::Local<'s, v8::Module>> {
    // SAFETY: V8 calls this on the isolate's thread while `instantiate_module` runs inside the
    // call's context, which is the context passed here; a callback scope on it is what V8's
    // API expects a resolve callback to open.
    v8::callback_scope!(unsafe scope, context);
    let state = scope.get_slot::<Rc<CallState>>().cloned();
    let spec = specifier.to_rust_string_lossy(scope);
    let found = state.as_ref().and_then(|state| {
        let modules = state.modules.borrow();
        let base = modules.iter().find(|(m, _)| *m == referrer)?.1.clone();
        let path = runx_rules::resolve_import(&base, &spec).ok()?;
        let (module, _) = modules.iter().find(|(_, p)| *p == path)?;
        Some(v8::Local::new(scope, module))
    });
    if found.is_none() {
        // V8 requires an exception with an empty answer.
        let message = format!("`{spec}` was not compiled with its importer");
        if let Some(m) = v8::String::new(scope, &message) {
            let error = v8::Exception::error(scope, m);
            scope.throw_exception(error);
        }
    }
    found
}

/// Answers every `import()` with a rejected promise and records the refusal, so that the call
/// fails with `module_rejected` even if the module catches the rejection.
pub(super) fn refuse_dynamic_import<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _options: v8::Local<'s, v8::Data>,
    resource: v8::Local<'s, v8::Value>,
    specifier: v8::Local<'s, v8::String>,
    _attributes: v8::Local<'s, v8::FixedArray>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let spec = specifier.to_rust_string_lossy(scope);
    let base = resource.to_rust_string_lossy(scope);
    let reason = format!(
        "dynamic import(\"{spec}\") from `{base}` rejected: modules are loaded statically; use a static import"
    );
    let reason = match scope.get_slot::<Rc<CallState>>().cloned() {
        Some(state) => state.refuse(reason),
        None => reason,
    };
    let resolver = v8::PromiseResolver::new(scope)?;
    let message = v8::String::new(scope, &reason)?;
    let error = v8::Exception::type_error(scope, message);
    resolver.reject(scope, error);
    Some(resolver.get_promise(scope))
}
