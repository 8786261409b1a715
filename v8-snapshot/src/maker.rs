//! Making the snapshot with V8. Under `DOCS_RS` (cfg `runx_v8_unlinked`) nothing here calls
//! into V8: the worker's build script links this code, and there no V8 library is linked.

#[cfg(not(runx_v8_unlinked))]
use crate::recipe::FLAGS;
use crate::recipe::Recipe;
use rusty_v8 as v8;
use std::borrow::Cow;

/// The heap of the isolate that makes the snapshot: the prelude needs little, and with V8's
/// defaults (sized from the machine's memory) the creator reserves more than the worker's data
/// cap allows.
#[cfg(not(runx_v8_unlinked))]
const SNAPSHOT_HEAP_BYTES: usize = 16 * 1024 * 1024;

/// The native functions the prelude keeps: where a call of each goes. Each must be a function
/// of its own (V8 finds a native in the external references by its address).
#[derive(Clone, Copy, Debug)]
pub struct Natives {
    /// The console's sink, called with `(level, text)`.
    pub console: v8::FunctionCallback,
    /// The callback of every native `Math` function; a function's data is its index in
    /// [`Recipe::math`].
    pub math: v8::FunctionCallback,
    /// The parser behind `Runx.parseUrl`, called with one string.
    pub url: v8::FunctionCallback,
}

/// A snapshot made from a recipe.
#[derive(Clone, Debug)]
pub struct Made {
    /// The startup data every isolate is made from.
    pub blob: Vec<u8>,
    /// The index of the prelude's helpers among the snapshot data of the default context.
    pub helpers: usize,
    /// The recipe's key for this build's V8 ([`Recipe::key_for`] with [`v8_version`]).
    pub key: String,
}

/// The external references of an isolate made from (or making) the snapshot: the natives, in
/// the order the snapshot refers to them by.
pub fn external_references(natives: &Natives) -> Cow<'static, [v8::ExternalReference]> {
    Cow::Owned(vec![
        v8::ExternalReference {
            function: natives.console,
        },
        v8::ExternalReference {
            function: natives.math,
        },
        v8::ExternalReference {
            function: natives.url,
        },
    ])
}

/// The version of the V8 this build links.
#[cfg(not(runx_v8_unlinked))]
pub fn v8_version() -> &'static str {
    v8::V8::get_version()
}

/// The version of the V8 this build links: none under `DOCS_RS`.
#[cfg(runx_v8_unlinked)]
pub fn v8_version() -> &'static str {
    "none (built under DOCS_RS)"
}

/// Makes the snapshot of `recipe`, its natives going to `natives`. V8 must have been started
/// with [`FLAGS`]. Snapshots are made one at a time in a process (concurrent snapshot
/// creators crash V8), and while no other isolate of this thread is alive.
#[cfg(not(runx_v8_unlinked))]
pub fn make(recipe: &Recipe<'_>, natives: &Natives) -> Result<Made, String> {
    use std::sync::{Mutex, PoisonError};
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let addresses = [
        natives.console as usize,
        natives.math as usize,
        natives.url as usize,
    ];
    if (1..addresses.len()).any(|i| addresses[..i].contains(&addresses[i])) {
        return Err(
            "two natives share one address, so the snapshot could not tell them apart".to_string(),
        );
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let params = v8::CreateParams::default().heap_limits(0, SNAPSHOT_HEAP_BYTES);
    let mut creator =
        v8::Isolate::snapshot_creator(Some(external_references(natives)), Some(params));
    let helpers = {
        let scope = std::pin::pin!(v8::HandleScope::new(&mut creator));
        let scope = &mut scope.init();
        let context = v8::Context::new(scope, Default::default());
        let index = {
            let scope = &mut v8::ContextScope::new(scope, context);
            install_prelude(scope, recipe, natives)
                .map(|helpers| scope.add_context_data(context, helpers))
        };
        scope.set_default_context(context);
        index
    };
    // The creator is consumed either way: V8 refuses to drop one that made no blob.
    let blob = creator.create_blob(v8::FunctionCodeHandling::Keep);
    let helpers = helpers.ok_or("the prelude failed while the snapshot was made")?;
    let blob = blob.ok_or("V8 made no snapshot blob")?;
    Ok(Made {
        blob: blob.to_vec(),
        helpers,
        key: recipe.key_for(v8_version()),
    })
}

/// Under `DOCS_RS` no V8 is linked, so no snapshot can be made.
#[cfg(runx_v8_unlinked)]
pub fn make(_recipe: &Recipe<'_>, _natives: &Natives) -> Result<Made, String> {
    Err("this runx was built under DOCS_RS, without V8".to_string())
}

/// For a build script: starts V8 in this process with [`FLAGS`] and makes the snapshot
/// of `recipe` with placeholder natives, which only take their places among the external
/// references (a worker gives its own in theirs). Fails if the prelude called one while it was
/// installed, since a placeholder could not stand in for it then. `None` under `DOCS_RS`, where
/// no V8 is linked. Call it once per process.
#[cfg(not(runx_v8_unlinked))]
pub fn make_for_embedding(recipe: &Recipe<'_>) -> Option<Result<Made, String>> {
    v8::V8::set_flags_from_string(FLAGS);
    v8::V8::initialize_platform(v8::new_default_platform(1, false).make_shared());
    v8::V8::initialize();
    let natives = Natives {
        console: placeholder::console,
        math: placeholder::math,
        url: placeholder::url,
    };
    let made = make(recipe, &natives);
    Some(match placeholder::called() {
        "" => made,
        called => Err(format!(
            "the prelude called the {called} native while the snapshot was made; only the worker's own native can answer that"
        )),
    }
    .map_err(|e| format!("cannot make the V8 snapshot: {e}")))
}

/// Under `DOCS_RS` no V8 is linked: no snapshot.
#[cfg(runx_v8_unlinked)]
pub fn make_for_embedding(_recipe: &Recipe<'_>) -> Option<Result<Made, String>> {
    None
}

/// Runs the prelude in the current context and returns its helpers.
#[cfg(not(runx_v8_unlinked))]
fn install_prelude<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    recipe: &Recipe<'_>,
    natives: &Natives,
) -> Option<v8::Local<'s, v8::Object>> {
    let source = v8::String::new(scope, recipe.prelude)?;
    let name = v8::String::new(scope, "runx:prelude")?;
    let origin = v8::ScriptOrigin::new(
        scope,
        name.into(),
        0,
        0,
        false,
        0,
        None,
        false,
        false,
        false,
        None,
    );
    let script = v8::Script::compile(scope, source, Some(&origin))?;
    let install = v8::Local::<v8::Function>::try_from(script.run(scope)?).ok()?;
    let sink = v8::Function::new_raw(scope, natives.console)?;
    let mut names: Vec<v8::Local<v8::Value>> = Vec::with_capacity(recipe.globals.len());
    for name in recipe.globals {
        names.push(v8::String::new(scope, name)?.into());
    }
    let allowed = v8::Array::new_with_elements(scope, &names);
    let undefined: v8::Local<v8::Value> = v8::undefined(scope).into();
    // V8 keeps resizable ArrayBuffers outside the allocator's budget: the prelude charges them.
    let charge_buffers = v8::Boolean::new(scope, true);
    // V8's own Math functions differ from QuickJS's: the prelude puts the shared ones in place.
    let math = math_functions(scope, recipe.math, natives.math)?;
    let url = v8::Function::new_raw(scope, natives.url)?;
    let helpers = install.call(
        scope,
        undefined,
        &[
            sink.into(),
            allowed.into(),
            charge_buffers.into(),
            math.into(),
            url.into(),
        ],
    )?;
    v8::Local::<v8::Object>::try_from(helpers).ok()
}

/// An object holding a native function per name of `math`, with its `name` and `length`, not
/// constructible, as the intrinsics are; the prelude puts them on `Math`.
#[cfg(not(runx_v8_unlinked))]
fn math_functions<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    math: &[(&str, i32)],
    callback: v8::FunctionCallback,
) -> Option<v8::Local<'s, v8::Object>> {
    let object = v8::Object::new(scope);
    for (index, (name, length)) in math.iter().enumerate() {
        let data = v8::Integer::new(scope, i32::try_from(index).ok()?);
        let function = v8::Function::builder_raw(callback)
            .data(data.into())
            .length(*length)
            .constructor_behavior(v8::ConstructorBehavior::Throw)
            .build(scope)?;
        let key = v8::String::new(scope, name)?;
        function.set_name(key);
        object.set(scope, key.into(), function.into())?;
    }
    Some(object)
}

/// The build script's natives: functions with different bodies (so that no compiler pass
/// folds them into one address), each recording that it was called.
#[cfg(not(runx_v8_unlinked))]
mod placeholder {
    use rusty_v8 as v8;
    use std::sync::Mutex;

    /// The native called while the snapshot was made, if any: a placeholder cannot answer.
    static CALLED: Mutex<&str> = Mutex::new("");

    fn record(name: &'static str) {
        if let Ok(mut called) = CALLED.lock() {
            *called = name;
        }
    }

    /// The native called so far, or `""`.
    pub(super) fn called() -> &'static str {
        CALLED.lock().map_or("an unknown", |c| *c)
    }

    pub(super) extern "C" fn console(_: *const v8::FunctionCallbackInfo) {
        record("console");
    }

    pub(super) extern "C" fn math(_: *const v8::FunctionCallbackInfo) {
        record("Math");
    }

    pub(super) extern "C" fn url(_: *const v8::FunctionCallbackInfo) {
        record("Runx.parseUrl");
    }
}
