//! The native behind `Runx.parseUrl` on V8 (`engine/url.rs`); the prelude holds it, converts
//! the argument and builds the object.

use crate::engine::url::answer;
use rusty_v8 as v8;

/// The callback, for the snapshot's external references.
pub(super) fn callback() -> v8::FunctionCallback {
    use v8::MapFnTo;
    url.map_fn_to()
}

/// `url(text)`: one string, the four parts or the message of the `TypeError` the prelude
/// throws ([`crate::engine::url::answer`]). The prelude passes a well-formed string; anything
/// else is converted lossily.
fn url(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let text = args.get(0).to_rust_string_lossy(scope);
    // `None`: V8 could not make the string; the call answers `undefined`, which the prelude
    // refuses as it refuses a message.
    if let Some(answer) = v8::String::new(scope, &answer(&text)) {
        rv.set(answer.into());
    }
}
