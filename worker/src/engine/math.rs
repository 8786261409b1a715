//! One implementation of JavaScript's transcendental `Math` functions for both engines and
//! every machine: the `libm` crate, a Rust port of FreeBSD's msun (fdlibm's descendant, the
//! code V8's own `ieee754` functions were ported from), plus CORE-MATH's correctly rounded
//! `cbrt`.
//!
//! The ECMAScript specification leaves these functions "implementation-approximated", and the
//! engines do differ: V8 carries its own fdlibm port (and glibc's `sin`/`cos`), while QuickJS
//! calls the C library, whose results change with the machine's glibc. Left alone, the same
//! module sealed different outputs on the two engines (178 of 6,900 results differed in the
//! last bit) and could on two machines. So:
//!
//! - **QuickJS** calls `sin`, `pow`, … by their C names; this module defines those symbols, and
//!   the linker resolves QuickJS's calls to them instead of the C library's (the program's own
//!   definitions come first). That covers `Math.*` and the `**` operator.
//! - **V8** gets its `Math.*` functions replaced by native functions calling [`call`] (see
//!   `v8/math.rs`); its `**` operator keeps V8's fdlibm `pow`, the same algorithm as
//!   `libm::pow` (the differential test checks that they agree).
//!
//! The functions that are exact by specification (`abs`, `floor`, `sqrt`, `fround`, …) are the
//! engines' own.

/// How a replaced `Math` function reads its arguments, with its implementation.
#[derive(Clone, Copy)]
#[cfg_attr(
    not(feature = "v8"),
    allow(dead_code, reason = "only the V8 engine calls the functions by name")
)]
pub(crate) enum Arity {
    /// The first argument (`NaN` when absent); `length` 1.
    One(fn(f64) -> f64),
    /// The first two arguments (`NaN` when absent); `length` 2.
    Two(fn(f64, f64) -> f64),
    /// Every argument; `length` 2 (`hypot`).
    Any(fn(&[f64]) -> f64),
}

impl Arity {
    /// The function's `length` property.
    #[cfg_attr(
        not(feature = "v8"),
        allow(dead_code, reason = "only the V8 engine makes the functions")
    )]
    pub(crate) fn length(self) -> i32 {
        match self {
            Arity::One(_) => 1,
            Arity::Two(_) | Arity::Any(_) => 2,
        }
    }
}

/// The `Math` functions replaced, by name.
#[cfg_attr(
    not(feature = "v8"),
    allow(
        dead_code,
        reason = "only the V8 engine replaces the functions by name"
    )
)]
pub(crate) const FUNCTIONS: [(&str, Arity); 22] = [
    ("acos", Arity::One(libm::acos)),
    ("acosh", Arity::One(libm::acosh)),
    ("asin", Arity::One(libm::asin)),
    ("asinh", Arity::One(libm::asinh)),
    ("atan", Arity::One(libm::atan)),
    ("atanh", Arity::One(libm::atanh)),
    ("atan2", Arity::Two(libm::atan2)),
    ("cbrt", Arity::One(libm::cbrt)),
    ("cos", Arity::One(libm::cos)),
    ("cosh", Arity::One(libm::cosh)),
    ("exp", Arity::One(libm::exp)),
    ("expm1", Arity::One(libm::expm1)),
    ("hypot", Arity::Any(hypot)),
    ("log", Arity::One(libm::log)),
    ("log1p", Arity::One(libm::log1p)),
    ("log10", Arity::One(libm::log10)),
    ("log2", Arity::One(libm::log2)),
    ("pow", Arity::Two(pow)),
    ("sin", Arity::One(libm::sin)),
    ("sinh", Arity::One(libm::sinh)),
    ("tan", Arity::One(libm::tan)),
    ("tanh", Arity::One(libm::tanh)),
];

/// `Math.hypot` as QuickJS computes it: the absolute value of one argument, `hypot` folded over
/// more, 0 for none.
fn hypot(args: &[f64]) -> f64 {
    match args {
        [] => 0.0,
        [one] => one.abs(),
        [first, rest @ ..] => rest.iter().fold(*first, |r, a| libm::hypot(r, *a)),
    }
}

/// One NaN for every NaN result: the quiet NaN without sign that V8 writes, not the negative
/// one an x86 invalid operation makes.
pub(crate) fn canonical(x: f64) -> f64 {
    if x.is_nan() { f64::NAN } else { x }
}

/// ECMAScript's `Number::exponentiate`: as C's `pow`, except that a NaN exponent gives NaN
/// (C: `pow(1, NaN)` is 1) and so does ±1 to an infinite power (C: 1).
pub(crate) fn pow(x: f64, y: f64) -> f64 {
    if y.is_nan() || (x.abs() == 1.0 && y.is_infinite()) {
        return f64::NAN;
    }
    libm::pow(x, y)
}

/// The C library's names, defined here so that QuickJS (compiled C) calls `libm` instead of
/// the machine's C library. Each is the `libm` function of the same name: C semantics, which
/// QuickJS adjusts to JavaScript's where they differ (it special-cases `pow` itself).
macro_rules! c_math {
    ($($name:ident($($arg:ident),+);)+) => {
        $(
            #[allow(unsafe_code, reason = "defines the C symbol QuickJS links against")]
            #[unsafe(no_mangle)]
            extern "C" fn $name($($arg: f64),+) -> f64 {
                super::canonical(libm::$name($($arg),+))
            }
        )+
    };
}

/// In a module of their own: the symbols are global whatever the module, the Rust names not.
mod c_names {
    c_math! {
        acos(x); acosh(x); asin(x); asinh(x); atan(x); atanh(x); atan2(y, x); cbrt(x);
        cos(x); cosh(x); exp(x); expm1(x); hypot(x, y); log(x); log1p(x); log10(x); log2(x);
        pow(x, y); sin(x); sinh(x); tan(x); tanh(x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Math[name]` of `args`, as the V8 engine reads them.
    fn call(name: &str, args: &[f64]) -> Option<f64> {
        let arg = |i: usize| args.get(i).copied().unwrap_or(f64::NAN);
        let (_, arity) = FUNCTIONS.iter().find(|(n, _)| *n == name)?;
        Some(canonical(match arity {
            Arity::One(f) => f(arg(0)),
            Arity::Two(f) => f(arg(0), arg(1)),
            Arity::Any(f) => f(args),
        }))
    }

    #[test]
    fn every_function_has_an_implementation() {
        for (name, _) in FUNCTIONS {
            assert!(call(name, &[0.5, 0.25]).is_some(), "{name}");
        }
        assert_eq!(call("nope", &[1.0]), None);
    }

    #[test]
    fn javascript_exponentiation_rules() {
        assert!(pow(1.0, f64::NAN).is_nan());
        assert!(pow(1.0, f64::INFINITY).is_nan());
        assert!(pow(-1.0, f64::NEG_INFINITY).is_nan());
        assert_eq!(pow(f64::NAN, 0.0), 1.0);
        assert_eq!(pow(2.0, 10.0), 1024.0);
    }

    #[test]
    fn hypot_takes_any_number_of_arguments() {
        assert_eq!(call("hypot", &[]), Some(0.0));
        assert_eq!(call("hypot", &[-3.0]), Some(3.0));
        assert_eq!(call("hypot", &[3.0, 4.0]), Some(5.0));
        assert_eq!(
            call("hypot", &[f64::NAN, f64::INFINITY]),
            Some(f64::INFINITY)
        );
    }

    /// The C symbols are this module's: a call through the C name gives libm's answer.
    #[test]
    #[allow(unsafe_code, reason = "declares and calls the C symbol defined above")]
    fn c_names_resolve_here() {
        unsafe extern "C" {
            #[link_name = "expm1"]
            fn c_expm1(x: f64) -> f64;
        }
        for x in [1e-10, 0.3, 2.5, -7.25, 700.0] {
            // SAFETY: `expm1` is the C function of one double, defined in this module.
            let through_c = unsafe { c_expm1(x) };
            assert_eq!(through_c.to_bits(), libm::expm1(x).to_bits(), "{x}");
        }
    }
}
