//! V8's `Math` functions replaced by native ones calling [`crate::engine::math`], so that both
//! engines compute them alike on every machine. One native callback serves every function; the
//! function's index in [`FUNCTIONS`] is its data.

use crate::engine::math::{FUNCTIONS, call};
use rusty_v8 as v8;

/// The native callback behind every replaced function, for the snapshot's external
/// references.
pub(super) fn callback() -> v8::FunctionCallback {
    use v8::MapFnTo;
    math.map_fn_to()
}

/// An object holding a native function per name of [`FUNCTIONS`], with its `name` and
/// `length`, not constructible, as the intrinsics are; the prelude puts them on `Math`.
pub(super) fn functions<'s>(scope: &mut v8::PinScope<'s, '_>) -> Option<v8::Local<'s, v8::Object>> {
    let object = v8::Object::new(scope);
    for (index, (name, length)) in FUNCTIONS.iter().enumerate() {
        let data = v8::Integer::new(scope, i32::try_from(index).ok()?);
        let function = v8::Function::builder(math)
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

/// `Math[name](...args)`: every argument converted with `ToNumber`, in order (a throwing
/// `valueOf` stops the call with its exception), then the one implementation. Like QuickJS,
/// a unary function reads only its first argument and a binary one its first two; `hypot`
/// reads all.
fn math(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(&(name, length)) = v8::Local::<v8::Integer>::try_from(args.data())
        .ok()
        .and_then(|i| usize::try_from(i.value()).ok())
        .and_then(|i| FUNCTIONS.get(i))
    else {
        return;
    };
    let read = if name == "hypot" {
        args.length()
    } else {
        length.min(args.length())
    };
    let mut numbers = [f64::NAN; 2];
    let mut many = Vec::new();
    for i in 0..read {
        let Some(n) = args.get(i).number_value(scope) else {
            // ToNumber threw: its exception is pending, and the call returns it.
            return;
        };
        match usize::try_from(i) {
            Ok(at) if at < numbers.len() && name != "hypot" => numbers[at] = n,
            _ => many.push(n),
        }
    }
    let values: &[f64] = if name == "hypot" {
        &many
    } else {
        &numbers[..usize::try_from(length).unwrap_or(1)]
    };
    if let Some(result) = call(name, values) {
        rv.set_double(result);
    }
}
