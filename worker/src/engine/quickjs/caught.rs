//! What a QuickJS call threw: the value named as every engine names it, and whether it is
//! what QuickJS itself throws when its allocator refuses memory.

use crate::engine::bundle::exception_summary;
use crate::engine::thrown::Thrown;
use rquickjs::{Ctx, Type, Value};

/// A thrown value, read.
pub(super) struct Caught {
    pub(super) thrown: Thrown,
    pub(super) sign: Sign,
}

/// What a thrown value could say of the heap: only the engine's memory can say whether it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sign {
    /// A value QuickJS never throws for memory.
    Module,
    /// `InternalError: out of memory`, what QuickJS throws when an allocation fails.
    OutOfMemory,
    /// `null`, what QuickJS throws when it cannot even make that error.
    Null,
    /// No exception was pending: an allocation inside the engine failed without one.
    Nothing,
}

impl Caught {
    /// The pending exception of `ctx`, taken.
    pub(super) fn pending(ctx: &Ctx<'_>) -> Caught {
        Caught::of(&ctx.catch())
    }

    /// `value`, thrown or a rejection's reason. Reading it may run the module's code (a
    /// `toJSON`, a getter); what that code throws is dropped.
    pub(super) fn of(value: &Value<'_>) -> Caught {
        if let Some(error) = value.as_exception() {
            let out_of_memory = error.message().as_deref() == Some("out of memory")
                && error.get::<_, String>("name").ok().as_deref() == Some("InternalError");
            return Caught {
                thrown: Thrown::Error(exception_summary(error)),
                sign: if out_of_memory {
                    Sign::OutOfMemory
                } else {
                    Sign::Module
                },
            };
        }
        let mut sign = Sign::Module;
        let thrown = match value.type_of() {
            Type::Uninitialized => {
                sign = Sign::Nothing;
                Thrown::Nothing
            }
            Type::Null => {
                sign = Sign::Null;
                Thrown::Null
            }
            Type::Undefined => Thrown::Undefined,
            Type::Bool => Thrown::Boolean(value.as_bool().unwrap_or_default()),
            Type::Int | Type::Float => Thrown::Number(value.as_number().unwrap_or(f64::NAN)),
            Type::BigInt => Thrown::BigInt(bigint_digits(value)),
            Type::String => Thrown::String(text(value)),
            Type::Symbol => Thrown::Symbol(description(value)),
            Type::Function | Type::Constructor => Thrown::Function,
            _ => Thrown::Object(json(value)),
        };
        Caught { thrown, sign }
    }
}

/// A string value's text (U+FFFD for what is not Unicode, as V8 reads it).
fn text(value: &Value<'_>) -> String {
    let Some(s) = value.as_string() else {
        return String::new();
    };
    s.to_string()
        .unwrap_or_else(|_| char::REPLACEMENT_CHARACTER.to_string())
}

/// A BigInt's decimal digits: `ToString` of a BigInt runs no code of the module.
fn bigint_digits(value: &Value<'_>) -> String {
    let ctx = value.ctx();
    match value.get::<rquickjs::Coerced<String>>() {
        Ok(rquickjs::Coerced(digits)) => digits,
        Err(_) => {
            ctx.catch();
            String::new()
        }
    }
}

/// A symbol's `description`, when it is a string.
fn description(value: &Value<'_>) -> Option<String> {
    let symbol = value.as_symbol()?;
    match symbol.description() {
        Ok(d) if d.is_string() => Some(text(&d)),
        Ok(_) => None,
        Err(_) => {
            value.ctx().catch();
            None
        }
    }
}

/// An object's JSON text, if it has one.
fn json(value: &Value<'_>) -> Option<String> {
    let ctx = value.ctx();
    match ctx.json_stringify(value.clone()) {
        Ok(Some(s)) => s.to_string().ok(),
        Ok(None) => None,
        Err(_) => {
            ctx.catch();
            None
        }
    }
}
