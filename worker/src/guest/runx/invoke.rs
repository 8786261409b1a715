//! One runx `invoke`, from its request to its answer: checked as runx's own worker checks it,
//! translated into an [`EngineCall`], run, and the engine's answer put in runx's words.
//!
//! What runx's worker checks before it runs anything, in its order: the limits (each at least 1
//! and at most runx's maximum, the heap exactly runx's), the entry module's path, the export's
//! name, the entry's presence in the module map, the map's size as compact JSON against
//! `source_bytes`, every module's path, then the size of `inputs` against `input_bytes` (the
//! text's length as sent: runx sends it compact, as it measures it). A module's imports are
//! not checked up front: the engine resolves each one when it links the module, inside the
//! map or not at all (`module_rejected` either way).

use super::wire::{Disposition, FailureReply, Invocation, InvocationLimits};
use crate::engine::bundle::ModuleBundle;
use crate::engine::{Engine, EngineCall};
use crate::guest::output::accept;
use crate::wire::failure::{Failure, FailureCode};
use runx_rules::{Limit, Limits};
use std::sync::Arc;

/// How much later than runx's wall the engine stops a call itself. runx keeps the wall with its
/// own timer and ends the worker when it passes (its failure, `resource_limit` on
/// `wall_milliseconds`); the engine's own wall, this much later, is the backstop that ends a
/// runaway call should runx's kill not come.
pub const WALL_MARGIN_MILLISECONDS: u64 = 500;

/// What an invoke is answered with.
pub enum Answer {
    /// The export's return value as JSON text.
    Output(Vec<u8>),
    /// Why there is none.
    Failure(FailureReply),
}

/// Checks, runs and answers one invoke on `engine`.
pub fn invoke(engine: &mut dyn Engine, request: &Invocation) -> Answer {
    let id = Some(request.invocation_id.clone());
    let refused = |code: &'static str, limit: Option<&'static str>, message: String| {
        Answer::Failure(FailureReply {
            invocation_id: id.clone(),
            code,
            limit,
            message,
            disposition: Disposition::Reuse,
        })
    };
    if let Err((code, limit, message)) = check(request) {
        return refused(code, limit, message);
    }
    let bundle = Arc::new(ModuleBundle {
        entry: request.entry_module.clone(),
        modules: request.modules.clone(),
    });
    let limits = engine_limits(&request.limits);
    let call = EngineCall {
        bundle: &bundle,
        export: (request.export_name != "default").then_some(request.export_name.as_str()),
        input: request.inputs.get().as_bytes(),
        page: None,
        environment: &request.environment,
        limits,
        continues: false,
        probe: false,
        keep_module: false,
    };
    let started = std::time::Instant::now();
    let answer = engine
        .call(&call)
        .map_err(|(failure, _log)| failure)
        .and_then(|out| accept(&out.output, &limits, started.elapsed()).map(|()| out.output));
    match answer {
        Ok(output) => Answer::Output(output),
        Err(failure) => Answer::Failure(reply(id, failure)),
    }
}

/// A failure of this runtime in runx's words: its code, its limit where runx has a name for it
/// (runx names only `source_bytes`, `input_bytes`, `output_bytes`, `wall_milliseconds` and
/// `queued_jobs`; a heap, stack or nesting limit stays `resource_limit` with the limit named in
/// the message), and whether the worker may be reused.
pub fn reply(invocation_id: Option<String>, failure: Failure) -> FailureReply {
    let code = match failure.code {
        FailureCode::InvalidRequest => "invalid_request",
        FailureCode::ModuleRejected => "module_rejected",
        FailureCode::ExecutionFailed => "execution_failed",
        FailureCode::OutputRejected => "output_rejected",
        FailureCode::ResourceLimit => "resource_limit",
        _ => "internal_failure",
    };
    let limit = failure.limit.and_then(|limit| match limit {
        Limit::SourceBytes => Some("source_bytes"),
        Limit::InputBytes => Some("input_bytes"),
        Limit::OutputBytes => Some("output_bytes"),
        Limit::WallMilliseconds => Some("wall_milliseconds"),
        _ => None,
    });
    FailureReply {
        invocation_id,
        code,
        limit,
        message: failure.message,
        disposition: if failure.worker_reusable {
            Disposition::Reuse
        } else {
            Disposition::Discard
        },
    }
}

/// The limits the engine runs the call under: runx's input, output and stack as runx sent
/// them; the heap is runx's one heap, which is this runtime's ceiling too; the wall
/// [`WALL_MARGIN_MILLISECONDS`] after runx's (at most 30 s); no console log (runx has no place
/// for it); the source was measured by runx's rule already, and the output's nesting keeps this
/// runtime's ceiling.
pub fn engine_limits(limits: &InvocationLimits) -> Limits {
    let ceiling = Limits::CEILING;
    Limits {
        input_bytes: limits.input_bytes,
        output_bytes: limits.output_bytes,
        source_bytes: ceiling.source_bytes,
        heap_bytes: ceiling.heap_bytes,
        stack_bytes: limits.stack_bytes.min(ceiling.stack_bytes),
        wall_milliseconds: (limits.wall_milliseconds + WALL_MARGIN_MILLISECONDS)
            .min(Limits::MAX_WALL.as_millis() as u64),
        log_bytes: 0,
        output_depth: ceiling.output_depth,
    }
}

type Refusal = (&'static str, Option<&'static str>, String);

/// runx's checks of a request, in runx's order.
fn check(request: &Invocation) -> Result<(), Refusal> {
    let limits = &request.limits;
    if !limits.check() {
        return Err((
            "invalid_request",
            None,
            "worker invocation limits are invalid or wider than runtime maxima".to_string(),
        ));
    }
    module_path(&request.entry_module)?;
    if !is_identifier(&request.export_name) {
        return Err((
            "invalid_request",
            None,
            format!(
                "JavaScript export name {:?} is not an identifier",
                request.export_name
            ),
        ));
    }
    if !request.modules.contains_key(&request.entry_module) {
        return Err((
            "module_rejected",
            None,
            "entry module is not present in the supplied bundle".to_string(),
        ));
    }
    let source = serde_json::to_vec(&request.modules).map_or(usize::MAX, |v| v.len());
    if source > limits.source_bytes {
        return Err((
            "resource_limit",
            Some("source_bytes"),
            format!(
                "JavaScript module bundle is {source} bytes; limit is {} bytes",
                limits.source_bytes
            ),
        ));
    }
    request.modules.keys().try_for_each(|p| module_path(p))?;
    // runx measures its inputs printed compactly, and sends them so: the text's own length.
    let input = request.inputs.get().len();
    if input > limits.input_bytes {
        return Err((
            "resource_limit",
            Some("input_bytes"),
            format!(
                "JavaScript input is {input} bytes; limit is {} bytes",
                limits.input_bytes
            ),
        ));
    }
    Ok(())
}

/// A module path runx accepts: relative, `/`-separated, no empty, `.` or `..` segment, no
/// backslash, ending in `.js` or `.mjs`.
fn module_path(path: &str) -> Result<(), Refusal> {
    let normal = !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..");
    if normal && (path.ends_with(".js") || path.ends_with(".mjs")) {
        return Ok(());
    }
    Err((
        "module_rejected",
        None,
        format!("JavaScript module path {path:?} is not a normalized relative .js/.mjs path"),
    ))
}

/// An ASCII identifier: a letter, `_` or `$`, then letters, digits, `_` or `$`.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::quickjs::QuickJs;

    fn request(source: &str, inputs: &str) -> Invocation {
        let frame = serde_json::json!({
            "type": "invoke",
            "protocol_version": 3,
            "invocation_id": "i-1",
            "entry_module": "main.js",
            "export_name": "run",
            "modules": { "main.js": source },
            "inputs": serde_json::from_str::<serde_json::Value>(inputs).unwrap(),
            "environment": { "REGION": "eu" },
            "limits": {
                "source_bytes": 4194304, "input_bytes": 4194304, "output_bytes": 4194304,
                "heap_bytes": 67108864, "stack_bytes": 4194304, "wall_milliseconds": 2000,
                "queued_jobs": 4096
            }
        });
        match super::super::wire::Request::parse(frame.to_string().as_bytes()).unwrap() {
            super::super::wire::Request::Invoke(i) => *i,
            super::super::wire::Request::Hello { .. } => unreachable!(),
        }
    }

    fn failure(answer: Answer) -> FailureReply {
        match answer {
            Answer::Failure(f) => f,
            Answer::Output(o) => panic!("a result: {}", String::from_utf8_lossy(&o)),
        }
    }

    #[test]
    fn an_export_gets_inputs_and_the_frozen_environment() {
        let r = request(
            "export function run(i, c) { return { n: i.n + 1, region: c.environment.REGION, \
             frozen: Object.isFrozen(c.environment), now: Date.now() }; }",
            r#"{"n": 41}"#,
        );
        match invoke(&mut QuickJs::new(), &r) {
            Answer::Output(o) => assert_eq!(o, br#"{"n":42,"region":"eu","frozen":true,"now":0}"#),
            Answer::Failure(f) => panic!("{f:?}"),
        }
    }

    #[test]
    fn requests_runx_refuses_are_refused_with_its_codes() {
        let mut r = request("export const run = () => 1;", "{}");
        r.limits.heap_bytes = 1;
        let f = failure(invoke(&mut QuickJs::new(), &r));
        assert_eq!(
            (f.code, f.disposition),
            ("invalid_request", Disposition::Reuse)
        );
        let mut r = request("export const run = () => 1;", "{}");
        r.export_name = "no-name".into();
        assert_eq!(
            failure(invoke(&mut QuickJs::new(), &r)).code,
            "invalid_request"
        );
        let mut r = request("export const run = () => 1;", "{}");
        r.entry_module = "../main.js".into();
        assert_eq!(
            failure(invoke(&mut QuickJs::new(), &r)).code,
            "module_rejected"
        );
        let mut r = request("export const run = () => 1;", r#"{"s":"0123456789"}"#);
        r.limits.input_bytes = 8;
        let f = failure(invoke(&mut QuickJs::new(), &r));
        assert_eq!((f.code, f.limit), ("resource_limit", Some("input_bytes")));
    }

    #[test]
    fn a_throw_and_randomness_are_execution_failures() {
        let r = request("export function run() { throw new Error('no'); }", "{}");
        let f = failure(invoke(&mut QuickJs::new(), &r));
        assert_eq!(
            (f.code, f.disposition),
            ("execution_failed", Disposition::Reuse)
        );
        assert!(f.message.contains("no"), "{}", f.message);
        let r = request("export function run() { return Math.random(); }", "{}");
        assert_eq!(
            failure(invoke(&mut QuickJs::new(), &r)).code,
            "execution_failed"
        );
    }

    #[test]
    fn a_runaway_call_stops_after_runx_wall() {
        let mut r = request("export function run() { for (;;) {} }", "{}");
        r.limits.wall_milliseconds = 100;
        let started = std::time::Instant::now();
        let f = failure(invoke(&mut QuickJs::new(), &r));
        assert_eq!(
            (f.code, f.limit),
            ("resource_limit", Some("wall_milliseconds"))
        );
        assert!(started.elapsed().as_millis() >= u128::from(100 + WALL_MARGIN_MILLISECONDS));
    }
}
