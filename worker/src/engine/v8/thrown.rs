//! What a call threw: its text, as the QuickJS engine writes it, and the failure it means.

use super::state::{CallState, Scope};
use crate::wire::failure::{Failure, FailureCode};
use runx_rules::Limit;
use rusty_v8 as v8;

/// What a call's thrown text means: a heap or stack limit reached, a refused import, else the
/// failure `code` with the text. Both the call's phases and the module loader use it.
pub(super) fn classify(state: &CallState, code: FailureCode, text: &str) -> Failure {
    let limits = &state.limits;
    let lower = text.to_ascii_lowercase();
    // The same texts as the QuickJS engine's, for the same limits: running out of memory, a
    // string past the engine's longest, a buffer past the budget. An invalid array or typed
    // array length is an argument error, as on QuickJS.
    if lower.contains("out of memory")
        || lower.contains("invalid string length")
        || lower.contains("array buffer allocation failed")
    {
        return Failure::exceeded(Limit::HeapBytes, limits);
    }
    if text.contains("Maximum call stack size exceeded") {
        return Failure::exceeded(Limit::StackBytes, limits);
    }
    if let Some(spec) = state.rejected.borrow().clone() {
        return Failure::new(FailureCode::ModuleRejected, spec);
    }
    Failure::thrown(code, text)
}

/// The text of the exception caught by `tc`, or empty when execution was terminated.
pub(super) fn caught(tc: &mut Scope<'_, '_, '_, '_>) -> String {
    if tc.has_terminated() {
        return String::new();
    }
    match tc.exception() {
        Some(exception) => thrown_text(tc, exception),
        None => String::new(),
    }
}

/// A thrown value as text, as the QuickJS engine writes it: an error's stack (which starts
/// with `Name: message`), a string itself, else what was thrown.
fn thrown_text(tc: &mut Scope<'_, '_, '_, '_>, value: v8::Local<'_, v8::Value>) -> String {
    if value.is_native_error() {
        return error_text(tc, value);
    }
    if value.is_null() {
        return "null".to_string();
    }
    if value.is_string() {
        return value.to_rust_string_lossy(tc);
    }
    format!("a thrown {}", value.type_of(tc).to_rust_string_lossy(tc))
}

/// A rejection reason as text: like [`thrown_text`], but other values as JSON when they have
/// a JSON form (as the QuickJS engine writes them).
pub(super) fn rejection_text(
    tc: &mut Scope<'_, '_, '_, '_>,
    value: v8::Local<'_, v8::Value>,
) -> String {
    if value.is_native_error() || value.is_string() || value.is_null_or_undefined() {
        return thrown_text(tc, value);
    }
    let inner = std::pin::pin!(v8::TryCatch::new(tc));
    let inner = &mut inner.init();
    match v8::json::stringify(inner, value) {
        Some(s) => s.to_rust_string_lossy(inner),
        None => format!(
            "a thrown {}",
            value.type_of(inner).to_rust_string_lossy(inner)
        ),
    }
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
