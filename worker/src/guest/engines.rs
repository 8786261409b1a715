//! The engines of this executable by name: which one a worker runs, and its version for
//! receipts.

use super::error::WorkerError;
use crate::engine::quickjs::QuickJs;
#[cfg(feature = "v8")]
use crate::engine::v8::V8;
use crate::engine::{Engine, engines_built};

/// The engine named `name`, if it is built into this executable.
pub fn engine_by_name(name: &str) -> Result<Box<dyn Engine>, WorkerError> {
    match name {
        "quickjs" => Ok(Box::new(QuickJs::new())),
        #[cfg(feature = "v8")]
        "v8" => Ok(Box::new(V8::new())),
        #[cfg(not(feature = "v8"))]
        "v8" => Err(WorkerError::Engine(
            "the v8 engine is not built into this executable; build with `--features v8`"
                .to_string(),
        )),
        other => Err(WorkerError::Engine(format!(
            "unknown engine `{other}`; the engines are: {}",
            engines_built().join(", ")
        ))),
    }
}

/// The version of the engine `name` as built into this executable, for receipts: QuickJS
/// reports the QuickJS-ng release it embeds, V8 its own version. `None` for an engine that is
/// not built in.
pub fn engine_version(name: &str) -> Option<String> {
    match name {
        "quickjs" => Some(quickjs_version()),
        #[cfg(feature = "v8")]
        "v8" => Some(rusty_v8::VERSION_STRING.to_string()),
        _ => None,
    }
}

fn quickjs_version() -> String {
    // SAFETY: `JS_GetVersion` takes no arguments, touches no runtime state and returns a
    // pointer to the static NUL-terminated string literal `QJS_VERSION_STRING`.
    #[allow(
        unsafe_code,
        reason = "QuickJS returns its version as a static C string"
    )]
    let ptr = unsafe { rquickjs::qjs::JS_GetVersion() };
    if ptr.is_null() {
        return "unknown".to_string();
    }
    // SAFETY: `ptr` is non-null and points to a static NUL-terminated string (see above),
    // valid for the whole life of the program.
    #[allow(
        unsafe_code,
        reason = "QuickJS returns its version as a static C string"
    )]
    let text = unsafe { std::ffi::CStr::from_ptr(ptr) };
    text.to_string_lossy().into_owned()
}
