//! What a call threw: the value named as every engine names it, and the failure it means.

use super::state::{CallState, Scope};
use crate::engine::thrown::Thrown;
use crate::wire::failure::{Failure, FailureCode};
use runx_rules::Limit;
use rusty_v8 as v8;

/// The message of the `RangeError` V8 throws when the ArrayBuffer allocator refuses.
const BUFFER_REFUSED: &str = "Array buffer allocation failed";

/// A thrown value, read.
pub(super) struct Caught {
    pub(super) thrown: Thrown,
    /// The value is the `RangeError` V8 throws when the ArrayBuffer allocator refuses: the
    /// heap limit if the allocator did refuse in this call, else a module's own error.
    buffer_refusal: bool,
}

impl Caught {
    /// A failure's text made by the engine (a module that does not compile).
    pub(super) fn error(text: String) -> Caught {
        Caught {
            thrown: Thrown::Error(text),
            buffer_refusal: false,
        }
    }
}

/// What a call's thrown value means: a limit the engine reached, a refused import, else the
/// failure `code` with what was thrown. Both the call's phases and the module loader use it.
/// The heap limit comes from the engine's state only: the near-heap-limit callback (which
/// terminates the call, see `Instance::run`) or the ArrayBuffer allocator's refusal, never from
/// a message a module could write.
pub(super) fn classify(state: &CallState, code: FailureCode, caught: Caught) -> Failure {
    let limits = &state.limits;
    if caught.buffer_refusal && state.buffers.refused() {
        return Failure::exceeded(Limit::HeapBytes, limits);
    }
    let text = caught.thrown.text();
    if text.contains("Maximum call stack size exceeded") {
        return Failure::exceeded(Limit::StackBytes, limits);
    }
    if let Some(spec) = state.rejected.borrow().clone() {
        return Failure::new(FailureCode::ModuleRejected, spec);
    }
    Failure::thrown(code, &text)
}

/// The exception caught by `tc`; nothing when execution was terminated.
pub(super) fn caught(tc: &mut Scope<'_, '_, '_, '_>) -> Caught {
    if tc.has_terminated() {
        return nothing();
    }
    match tc.exception() {
        Some(exception) => read(tc, exception),
        None => nothing(),
    }
}

fn nothing() -> Caught {
    Caught {
        thrown: Thrown::Nothing,
        buffer_refusal: false,
    }
}

/// `value`, thrown or a rejection's reason, named as the QuickJS engine names it. Reading it
/// may run the module's code (a getter, a `toJSON`); what that code throws is dropped.
pub(super) fn read(tc: &mut Scope<'_, '_, '_, '_>, value: v8::Local<'_, v8::Value>) -> Caught {
    let mut buffer_refusal = false;
    let thrown = if value.is_native_error() {
        buffer_refusal = is_buffer_refusal(tc, value);
        Thrown::Error(error_text(tc, value))
    } else if value.is_string() {
        Thrown::String(value.to_rust_string_lossy(tc))
    } else if value.is_null() {
        Thrown::Null
    } else if value.is_undefined() {
        Thrown::Undefined
    } else if value.is_boolean() {
        Thrown::Boolean(value.boolean_value(tc))
    } else if value.is_number() {
        Thrown::Number(value.number_value(tc).unwrap_or(f64::NAN))
    } else if value.is_big_int() {
        // `ToString` of a BigInt runs no code of the module.
        let digits = value.to_string(tc).map(|s| s.to_rust_string_lossy(tc));
        Thrown::BigInt(digits.unwrap_or_default())
    } else if value.is_symbol() {
        Thrown::Symbol(description(tc, value))
    } else if value.is_function() {
        Thrown::Function
    } else {
        Thrown::Object(json(tc, value))
    };
    Caught {
        thrown,
        buffer_refusal,
    }
}

/// Whether an error is a `RangeError` with the message V8 gives a refused ArrayBuffer.
fn is_buffer_refusal(tc: &mut Scope<'_, '_, '_, '_>, value: v8::Local<'_, v8::Value>) -> bool {
    let inner = std::pin::pin!(v8::TryCatch::new(tc));
    let inner = &mut inner.init();
    let Ok(object) = v8::Local::<v8::Object>::try_from(value) else {
        return false;
    };
    let property = |name: &str| {
        v8::String::new(inner, name)
            .and_then(|k| object.get(inner, k.into()))
            .filter(|v| v.is_string())
            .map(|v| v.to_rust_string_lossy(inner))
    };
    property("message").as_deref() == Some(BUFFER_REFUSED)
        && property("name").as_deref() == Some("RangeError")
}

/// A symbol's `description` (read as the QuickJS engine reads it, through the property),
/// when it is a string.
fn description(tc: &mut Scope<'_, '_, '_, '_>, value: v8::Local<'_, v8::Value>) -> Option<String> {
    let inner = std::pin::pin!(v8::TryCatch::new(tc));
    let inner = &mut inner.init();
    let object = value.to_object(inner)?;
    let key = v8::String::new(inner, "description")?;
    let description = object.get(inner, key.into())?;
    description
        .is_string()
        .then(|| description.to_rust_string_lossy(inner))
}

/// An object's JSON text, if it has one.
fn json(tc: &mut Scope<'_, '_, '_, '_>, value: v8::Local<'_, v8::Value>) -> Option<String> {
    let inner = std::pin::pin!(v8::TryCatch::new(tc));
    let inner = &mut inner.init();
    let text = v8::json::stringify(inner, value)?.to_rust_string_lossy(inner);
    // V8 writes a value with no JSON form (a `toJSON` that returns `undefined`) as the text
    // `undefined`, which no JSON text is.
    (text != "undefined").then_some(text)
}

/// An error's `stack`, or `Name: message` when it has none. Reading either may run code of
/// the module (a getter); what that code throws is dropped.
fn error_text(tc: &mut Scope<'_, '_, '_, '_>, value: v8::Local<'_, v8::Value>) -> String {
    let inner = std::pin::pin!(v8::TryCatch::new(tc));
    let inner = &mut inner.init();
    let Ok(object) = v8::Local::<v8::Object>::try_from(value) else {
        return String::new();
    };
    let stack = v8::String::new(inner, "stack").and_then(|k| object.get(inner, k.into()));
    if let Some(stack) = stack.filter(|s| s.is_string()) {
        let text = stack.to_rust_string_lossy(inner);
        if !text.trim().is_empty() {
            return text.trim_end().to_string();
        }
    }
    match value.to_string(inner) {
        Some(s) => s.to_rust_string_lossy(inner),
        None => "an error".to_string(),
    }
}
