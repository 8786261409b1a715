//! V8's `Math` functions replaced by native ones calling [`crate::engine::math`], so that both
//! engines compute them alike on every machine. One native callback serves every function; the
//! function's index in [`FUNCTIONS`] is its data. The functions themselves are made in the
//! snapshot (`runx-v8-snapshot`), from [`FUNCTIONS`]' names and lengths.

use crate::engine::math::{Arity, FUNCTIONS, canonical};
use rusty_v8 as v8;

/// The native callback behind every replaced function, for the snapshot's external
/// references.
pub(super) fn callback() -> v8::FunctionCallback {
    use v8::MapFnTo;
    math.map_fn_to()
}

/// `Math[name](...args)`: every argument the function reads converted with `ToNumber`, in order
/// (a throwing `valueOf` stops the call with its exception), then the one implementation. Like
/// QuickJS, a unary function reads only its first argument and a binary one its first two;
/// `hypot` reads all.
fn math(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(&(_, arity)) = v8::Local::<v8::Integer>::try_from(args.data())
        .ok()
        .and_then(|i| usize::try_from(i.value()).ok())
        .and_then(|i| FUNCTIONS.get(i))
    else {
        return;
    };
    // `None`: ToNumber threw, and its exception is pending for the call to return.
    let mut number = |i: i32| -> Option<f64> {
        if i < args.length() {
            args.get(i).number_value(scope)
        } else {
            Some(f64::NAN)
        }
    };
    let result = match arity {
        Arity::One(f) => number(0).map(f),
        Arity::Two(f) => number(0).and_then(|x| number(1).map(|y| f(x, y))),
        Arity::Any(f) => (0..args.length())
            .map(&mut number)
            .collect::<Option<Vec<f64>>>()
            .map(|all| f(&all)),
    };
    if let Some(result) = result {
        rv.set_double(canonical(result));
    }
}
