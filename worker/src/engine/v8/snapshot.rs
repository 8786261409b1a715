//! The startup snapshot every isolate of this worker is made from: a context in which the
//! prelude ran and nothing else (`runx-v8-snapshot`). The build script made it and the
//! executable carries it (`build.rs`); it is used when its key is this worker's recipe's, so a
//! blob made from another prelude, other globals or natives, or another V8 is never used. A
//! worker built without one (under `DOCS_RS`, or cross-compiled), or whose blob is stale, makes
//! the snapshot when its first isolate starts, from the same recipe, as every worker did before
//! the blob was embedded.
//!
//! Nothing a package sends reaches either path: the recipe is compiled into the executable,
//! and the snapshot is chosen or made before the first call's module is looked at.

use super::call::console_sink;
use super::math;
use super::url;
use crate::engine::globals::ALLOWED_GLOBALS;
use crate::engine::math::FUNCTIONS;
use crate::wire::failure::{Failure, FailureCode};
use runx_v8_snapshot::{Natives, Recipe};
use rusty_v8 as v8;
use std::borrow::Cow;
use std::sync::OnceLock;

const PRELUDE: &str = include_str!("../prelude.js");

/// A snapshot the build script made, carried in the executable.
struct Embedded {
    blob: &'static [u8],
    helpers: usize,
    /// The key of the recipe it was made from.
    key: &'static str,
}

/// The build script's snapshot, if it made one.
static EMBEDDED: Option<Embedded> = include!(concat!(env!("OUT_DIR"), "/v8_snapshot.rs"));

/// Where a process's snapshot came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Origin {
    /// Made by the build script, carried in the executable.
    Embedded,
    /// Made by this process when its first isolate started.
    Made,
}

/// The snapshot isolates start from.
#[derive(Clone, Copy, Debug)]
pub(super) struct Startup {
    pub(super) blob: &'static [u8],
    /// The index of the prelude's helpers among the snapshot data of each context.
    pub(super) helpers: usize,
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "the tests check which snapshot a worker uses")
    )]
    pub(super) origin: Origin,
}

/// The worker's natives, in the places the snapshot refers to them by.
fn natives() -> Natives {
    use v8::MapFnTo;
    Natives {
        console: console_sink.map_fn_to(),
        math: math::callback(),
        url: url::callback(),
    }
}

/// The external references of an isolate made from the snapshot.
pub(super) fn external_references() -> Cow<'static, [v8::ExternalReference]> {
    runx_v8_snapshot::external_references(&natives())
}

/// What this worker's snapshot is made from: the prelude, the allowed globals and the native
/// `Math` functions compiled into it.
fn with_recipe<T>(f: impl FnOnce(&Recipe<'_>) -> T) -> T {
    let math: Vec<(&str, i32)> = FUNCTIONS
        .iter()
        .map(|(name, arity)| (*name, arity.length()))
        .collect();
    f(&Recipe {
        prelude: PRELUDE,
        globals: ALLOWED_GLOBALS,
        math: &math,
    })
}

/// The snapshot every isolate of this process starts from, chosen (or made) once. V8 must be
/// started (`super::platform`), and no isolate alive yet when it is made.
pub(super) fn startup() -> Result<Startup, Failure> {
    static STARTUP: OnceLock<Result<Startup, Failure>> = OnceLock::new();
    STARTUP
        .get_or_init(|| with_recipe(|recipe| choose(EMBEDDED.as_ref(), recipe)))
        .clone()
}

/// `embedded` when it was made from `recipe` by this V8; else a snapshot made now, kept for the
/// life of the process.
fn choose(embedded: Option<&Embedded>, recipe: &Recipe<'_>) -> Result<Startup, Failure> {
    if let Some(e) = embedded
        && e.key == recipe.key_for(runx_v8_snapshot::v8_version())
    {
        return Ok(Startup {
            blob: e.blob,
            helpers: e.helpers,
            origin: Origin::Embedded,
        });
    }
    let made = runx_v8_snapshot::make(recipe, &natives()).map_err(|e| {
        Failure::new(
            FailureCode::Internal,
            format!("cannot make the V8 snapshot: {e}"),
        )
    })?;
    Ok(Startup {
        blob: Box::leak(made.blob.into_boxed_slice()),
        helpers: made.helpers,
        origin: Origin::Made,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Instance;
    use super::super::state::CallState;
    use super::*;
    use crate::engine::EngineCall;
    use crate::engine::bundle::ModuleBundle;
    use runx_rules::Limits;
    use std::collections::BTreeMap;
    use std::rc::Rc;
    use std::sync::Arc;

    /// What the default export of `source` returns, run on an isolate made from `startup`.
    fn call_on(startup: Startup, source: &str) -> String {
        let bundle = Arc::new(ModuleBundle::from_sources(
            "main.mjs",
            [("main.mjs", source)],
        ));
        let call = EngineCall {
            bundle: &bundle,
            export: None,
            input: b"{}",
            page: None,
            environment: &BTreeMap::new(),
            limits: Limits::default(),
            continues: false,
            probe: false,
            keep_module: false,
        };
        let mut instance = Instance::from_snapshot(&call.limits, startup).expect("an isolate");
        let state = Rc::new(CallState::new(&call, instance.buffers.clone()));
        let (result, _) = instance.run(&call, &state);
        String::from_utf8(result.expect("the call answers")).expect("UTF-8")
    }

    /// The build script made the snapshot and this worker uses it: the embedded blob's key is
    /// this worker's recipe's, so no worker makes one at start.
    #[test]
    fn the_embedded_snapshot_is_the_one_used() {
        super::super::platform();
        let embedded = EMBEDDED
            .as_ref()
            .expect("the build script embeds the snapshot (not under DOCS_RS, not cross-compiled)");
        let startup = startup().expect("the snapshot");
        assert_eq!(startup.origin, Origin::Embedded);
        assert!(std::ptr::eq(startup.blob, embedded.blob));
        assert_eq!(startup.helpers, embedded.helpers);
    }

    /// A blob whose key is not this worker's recipe's (another prelude, V8, globals or
    /// natives) is refused, and the snapshot made from the recipe instead.
    #[test]
    fn a_stale_snapshot_is_refused_and_made_again() {
        super::super::platform();
        let stale = Embedded {
            blob: b"not a snapshot",
            helpers: 0,
            key: "0000",
        };
        let made = with_recipe(|recipe| choose(Some(&stale), recipe)).expect("made");
        assert_eq!(made.origin, Origin::Made);
        assert_ne!(made.blob.as_ptr(), stale.blob.as_ptr());
        // What an isolate made from it shows a module is what one from the embedded snapshot
        // shows (the conformance suite runs every case on the embedded one).
        let embedded = startup().expect("the embedded snapshot");
        assert_eq!(made.helpers, embedded.helpers);
        let probe = "export default () => ({
            globals: Object.getOwnPropertyNames(globalThis).sort().join(),
            math: [Math.sin.name, Math.sin.length, Math.cos(1), Math.atan2(1, 2)],
            random: (() => { try { Math.random(); return 'ran'; } catch (e) { return e.name; } })(),
            now: Date.now(),
            console: typeof console.log,
        })";
        let on_made = call_on(made, probe);
        assert_eq!(on_made, call_on(embedded, probe));
        assert!(on_made.contains(r#""random":"TypeError""#), "{on_made}");
    }
}
