//! The JSON objects runx answers with: a run's result (what `runx skill --json` prints and a
//! step server returns for `run`), a dry run's plan (`runx skill --dry-run --json`) and a
//! package's description (`runx skill inspect --json`,
//! a step server's `inspect`). Built here once, so every caller prints the same bytes.

use crate::failure::RunError;
use crate::plan::PlanOutcome;
use crate::pools::{DEFAULT_ENGINE, engines_built};
use crate::runtime::RunOutcome;
use crate::subprocess::Capture;
use runx_profile::{AppliedLimits, InputDecl, PRINTED_TEXT_BYTES, Profile, Runner, RunnerKind};
use runx_worker::ConsoleLog;
use serde_json::{Map, Value, json};

/// The schema name of a run's result, as runx names it.
pub const SKILL_RUN_SCHEMA: &str = "runx.skill_run.v1";

/// The result of a run: runx's `runx.skill_run.v1` envelope, with this runtime's additions.
///
/// runx's keys: `schema`; `status`, `sealed` whenever the run's receipt was written, whatever
/// the run's outcome (as runx says it: a failed run is sealed too, its failure in the
/// closure), else `failure`; `skill_name`, `runner`, `run_id`, `receipt_id`; `closure`
/// (`disposition`, `reason_code`, `summary`, `closed_at`, from the receipt's seal); `result`
/// (the output, `null` when the run failed); `outcome` (`completed`, `failed` or `blocked`);
/// `next` (`null`: a run here never waits); and, only when the run failed, `error`: runx's
/// `exit_code` (a cli-tool's exit status, else `null`) and `message`, with this runtime's
/// typed `kind` and `code`. Added: `receipt_path` (where the receipt was written), `console`
/// (the module's console lines, [`console_json`]) and `stderr` (a cli-tool's stderr,
/// [`stderr_json`]; `null` for a javascript runner).
pub fn run_json(o: &RunOutcome) -> Value {
    let written = o.receipt_path.is_some();
    let seal = &o.receipt["seal"];
    let closure = written.then(|| {
        json!({
            "disposition": seal["disposition"], "reason_code": seal["reason_code"],
            "summary": seal["summary"], "closed_at": seal["closed_at"],
        })
    });
    let outcome = match (&o.result, seal["disposition"].as_str()) {
        (Ok(_), _) => "completed",
        (Err(_), Some("blocked")) if written => "blocked",
        (Err(_), _) => "failed",
    };
    let named = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let mut v = json!({
        "schema": SKILL_RUN_SCHEMA,
        "status": if written { "sealed" } else { "failure" },
        "skill_name": named(&o.skill),
        "runner": named(&o.runner),
        "run_id": named(&o.evidence.run_id).filter(|_| !o.skill.is_empty()),
        "receipt_id": written.then(|| o.receipt["id"].clone()),
        "closure": closure,
        "result": o.output(),
        "outcome": outcome,
        "next": null,
        "receipt_path": o.receipt_path.as_ref().map(|p| p.display().to_string()),
        "console": console_json(&o.log),
        "stderr": o.stderr.as_ref().map(stderr_json),
    });
    if let Some(e) = o.error() {
        // The tool's exit status, when the tool's exit is the failure.
        let exit_code = o
            .evidence
            .process
            .as_ref()
            .and_then(|p| p.exit_code)
            .filter(|_| e.kind == crate::failure::FailureKind::Exit);
        v["error"] = json!({
            "exit_code": exit_code, "message": e.message, "kind": e.kind, "code": e.code,
        });
    }
    v
}

/// A dry run ([`crate::Runtime::plan`]): `{"dry_run": true, "status", "skill", "runner", "plan",
/// "error"}`, where `status` is `ready` (the run could start; `plan` is the
/// [`Plan`](crate::Plan) and
/// `error` is `null`) or `failure` (`plan` is `null` and `error` is `{"kind", "code",
/// "message"}`, what the run would have been refused with).
pub fn plan_json(o: &PlanOutcome) -> Value {
    let plan = o.result.as_ref().map_err(Clone::clone).and_then(|plan| {
        serde_json::to_value(plan).map_err(|e| RunError::internal("encode", e.to_string()))
    });
    let (status, plan, error) = match plan {
        Ok(plan) => ("ready", Some(plan), None),
        Err(e) => ("failure", None, Some(e)),
    };
    json!({
        "dry_run": true, "status": status, "skill": o.skill, "runner": o.runner,
        "plan": plan, "error": error,
    })
}

/// The result for a request refused before any run (no package loaded, no receipt), as runx
/// prints one: `{"status": "failure", "error": {"code", "message"}}`, the error with this
/// runtime's `kind` too, and the runner asked for.
pub fn refused_json(runner: Option<&str>, error: &RunError) -> Value {
    json!({ "status": "failure", "runner": runner, "error": error })
}

/// Printed bytes of each stream.
fn budget() -> usize {
    usize::try_from(PRINTED_TEXT_BYTES.max).unwrap_or(usize::MAX)
}

/// `{lines: [{level, message}], line_count, bytes, printed_bytes, dropped_bytes}`: the console
/// lines the worker kept (at most its 64 KiB log bound), printed until [`PRINTED_TEXT_BYTES`] of
/// messages; `bytes` counts every kept message byte, `dropped_bytes` what the worker dropped.
pub fn console_json(log: &ConsoleLog) -> Value {
    let mut printed = Vec::new();
    let mut printed_bytes = 0usize;
    let bytes: usize = log.lines.iter().map(|l| l.message.len()).sum();
    for line in &log.lines {
        if printed_bytes + line.message.len() > budget() {
            break;
        }
        printed_bytes += line.message.len();
        printed.push(json!({"level": line.level, "message": line.message}));
    }
    json!({
        "lines": printed,
        "line_count": log.lines.len(),
        "bytes": bytes,
        "printed_bytes": printed_bytes,
        "dropped_bytes": log.dropped_bytes,
    })
}

/// `{text, total_bytes, printed_bytes, truncated, sha256}`: the first [`PRINTED_TEXT_BYTES`] of
/// what a cli-tool wrote to stderr (cut at a character boundary, invalid UTF-8 replaced), with
/// the count and digest of the whole stream.
pub fn stderr_json(c: &Capture) -> Value {
    let mut end = c.kept.len().min(budget());
    // Cut at a character boundary: back off over UTF-8 continuation bytes.
    while end > 0 && end < c.kept.len() && (c.kept[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    let text = String::from_utf8_lossy(&c.kept[..end]);
    json!({
        "text": text,
        "total_bytes": c.total_bytes,
        "printed_bytes": end,
        "truncated": (end as u64) < c.total_bytes,
        "sha256": c.sha256,
    })
}

/// The package as one JSON object: `{"skill", "version", "dir", "runners", "input_definitions",
/// "declared_only", "diagnostics"}`, every runner in name order with its inputs, outputs,
/// environment, limits and the keys this runtime shows without running.
pub fn describe_json(p: &Profile) -> Value {
    let mut runners: Vec<(String, Value)> = p
        .runners
        .values()
        .map(|r| (r.name.clone(), describe_runner(p, r)))
        .collect();
    runners.extend(p.other_runners.iter().map(|(name, other)| {
        (
            name.clone(),
            json!({
                "name": name,
                "type": other.ty,
                "default": p.default_runner.as_deref() == Some(name.as_str()),
                "runs_here": false,
                "keys": other.keys,
            }),
        )
    }));
    runners.sort_by(|a, b| a.0.cmp(&b.0));
    let runners: Vec<Value> = runners.into_iter().map(|(_, v)| v).collect();
    let definitions: Map<String, Value> = p
        .input_definitions
        .iter()
        .map(|(k, d)| (k.clone(), describe_input(d)))
        .collect();
    json!({
        "skill": p.skill, "version": p.version, "dir": p.dir, "runners": runners,
        "input_definitions": definitions,
        "declared_only": p.declared_only,
        "diagnostics": p.diagnostics,
    })
}

/// One input declaration, with where its schema came from.
fn describe_input(d: &InputDecl) -> Value {
    json!({
        "type": d.ty.name(), "required": d.required, "default": d.default,
        "description": d.description, "schema": d.schema, "artifact": d.artifact,
        "definition": d.definition,
        "packet": d.packet.as_ref().map(|pk| json!({"id": pk.id, "file": pk.file, "digest": pk.digest})),
    })
}

/// What a javascript runner declares about its engine and what this executable has: the
/// runner runs on the caller's engine when one is given (`--engine`), else on `declared`, else
/// on `default`.
fn engine_json(declared: Option<&str>) -> Value {
    json!({
        "declared": declared,
        "default": DEFAULT_ENGINE,
        "built": engines_built(),
    })
}

fn describe_runner(p: &Profile, r: &Runner) -> Value {
    let (module, export, pages, command, engine) = match &r.kind {
        RunnerKind::Javascript(js) => (
            Some(js.module.clone()),
            js.export.clone(),
            js.pages.as_ref().map(|pg| {
                let mut pages = json!({"path_from": pg.path_from, "path_scope_from": pg.path_scope_from,
                       "media_type": pg.media_type, "framing": "json_array", "page_bytes": pg.page_bytes,
                       "partitions": pg.partitions(), "module": pg.module.name()});
                if let (Some(par), Some(obj)) = (&pg.parallel, pages.as_object_mut()) {
                    obj.insert("map".into(), json!(par.map));
                    obj.insert("fold".into(), json!(par.fold));
                    obj.insert("workers".into(), json!(par.workers));
                }
                pages
            }),
            None,
            Some(engine_json(js.engine.as_deref())),
        ),
        RunnerKind::CliTool(t) => (None, None, None, Some(t.command.clone()), None),
    };
    let inputs: Map<String, Value> = r
        .inputs
        .iter()
        .map(|(k, d)| (k.clone(), describe_input(d)))
        .collect();
    let outputs: Map<String, Value> = r
        .outputs
        .iter()
        .map(|(k, d)| (k.clone(), json!(d.ty.name())))
        .collect();
    let output_declarations: Map<String, Value> = r
        .outputs
        .iter()
        .map(|(k, d)| {
            let decl = json!({
                "type": d.ty.name(), "required": d.required, "schema": d.schema,
                "description": d.description, "wrap_as": d.wrap_as,
            });
            (k.clone(), decl)
        })
        .collect();
    let mut doc = json!({
        "name": r.name,
        "type": r.kind.type_name(),
        "default": p.default_runner.as_deref() == Some(r.name.as_str()),
        "runs_here": true,
        "module": module, "export": export, "pages": pages, "command": command,
        "engine": engine,
        "inputs": inputs,
        "outputs": outputs,
        "output_declarations": output_declarations,
        "environment": {"required": r.environment.required, "optional": r.environment.optional},
        "limits": limits_json(&runx_profile::limits_for(r)),
        "artifacts": r.artifacts,
        "examples": r.examples,
        "declared_only": r.declared_only,
    });
    if let (RunnerKind::CliTool(t), Some(obj)) = (&r.kind, doc.as_object_mut()) {
        obj.insert("args".into(), json!(t.args));
        obj.insert("cwd".into(), json!(t.cwd));
        obj.insert("input_mode".into(), json!(t.input_mode.name()));
        obj.insert("idempotent".into(), json!(t.idempotent));
        obj.insert(
            "retry".into(),
            json!(t.retry.as_ref().map(|rt| json!({
                "max_attempts": rt.attempts + 1,
                "on": rt.on.iter().map(|_| "crash").collect::<Vec<_>>(),
                "backoff_seconds": rt.backoff.as_secs(),
                "applies": rt.inert.is_none(),
                "inert": rt.inert,
            }))),
        );
    }
    doc
}

/// The limits as `name → value`, the same map a receipt records.
fn limits_json(applied: &AppliedLimits) -> Value {
    json!(applied.to_map())
}

#[cfg(test)]
mod tests {
    use super::*;
    use runx_worker::LogLine;

    #[test]
    fn stderr_is_cut_at_a_character_boundary_with_its_full_count() {
        let mut kept = vec![b'a'; budget() - 1];
        kept.extend_from_slice("é".as_bytes());
        kept.extend_from_slice(b"tail");
        let c = Capture {
            total_bytes: 10 * kept.len() as u64,
            kept,
            sha256: "sha256:x".into(),
            truncated: true,
        };
        let v = stderr_json(&c);
        assert_eq!(v["printed_bytes"], budget() - 1);
        assert_eq!(v["text"].as_str().map(str::len), Some(budget() - 1));
        assert_eq!(v["truncated"], true);
        assert_eq!(v["total_bytes"], c.total_bytes);
        let small = Capture {
            kept: b"warn\n".to_vec(),
            total_bytes: 5,
            sha256: "sha256:y".into(),
            truncated: false,
        };
        assert_eq!(
            stderr_json(&small),
            json!({"text": "warn\n", "total_bytes": 5, "printed_bytes": 5, "truncated": false, "sha256": "sha256:y"})
        );
    }

    #[test]
    fn console_lines_are_printed_within_the_budget() {
        let line = |m: String| LogLine {
            level: "log".into(),
            message: m,
        };
        // As a log from a worker arrives: its lines and dropped count, nothing else.
        let mut log = ConsoleLog::default();
        log.lines = vec![
            line("x".repeat(budget() - 10)),
            line("y".repeat(20)),
            line("z".into()),
        ];
        log.dropped_bytes = 7;
        let v = console_json(&log);
        assert_eq!(v["line_count"], 3);
        assert_eq!(v["lines"].as_array().map(Vec::len), Some(1));
        assert_eq!(v["bytes"], budget() + 11);
        assert_eq!(v["dropped_bytes"], 7);
    }
}
