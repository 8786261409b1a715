//! The native behind `Runx.parseUrl` on V8 (`engine/url.rs`); the prelude holds it, converts
//! the argument and builds the object.

use crate::engine::url::parse;
use rusty_v8 as v8;

/// The callback, for the snapshot's external references.
pub(super) fn callback() -> v8::FunctionCallback {
    use v8::MapFnTo;
    url.map_fn_to()
}

/// `url(text)`: the four strings as an array, or the message of the `TypeError` the prelude
/// throws. The prelude passes a well-formed string; anything else is converted lossily.
fn url(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let text = args.get(0).to_rust_string_lossy(scope);
    let answer: Option<v8::Local<v8::Value>> = match parse(&text) {
        Ok(parts) => parts
            .iter()
            .map(|part| v8::String::new(scope, part).map(Into::into))
            .collect::<Option<Vec<v8::Local<v8::Value>>>>()
            .map(|parts| v8::Array::new_with_elements(scope, &parts).into()),
        Err(message) => v8::String::new(scope, &message).map(Into::into),
    };
    // `None`: V8 could not make a string; the call answers `undefined`, and the prelude's read
    // of it throws a TypeError.
    if let Some(answer) = answer {
        rv.set(answer);
    }
}
