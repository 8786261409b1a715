//! The wire: JSON-RPC 2.0 messages, one per line, and the parameters of each method.
//!
//! Parsing follows the JSON-RPC order of checks: a line that is not JSON is a parse error; a
//! JSON value that is not a request object is an invalid request; an unknown method is
//! `method not found`; parameters that do not fit the method are `invalid params`. Batches
//! (arrays of requests) are refused as invalid requests: answers come one per line, each when
//! its step ends.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// The JSON-RPC error codes of the step server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    /// -32700: the line is not JSON.
    ParseError,
    /// -32600: not a request object, a batch, a duplicate id, or a line over the size limit.
    InvalidRequest,
    /// -32601: no such method.
    MethodNotFound,
    /// -32602: the parameters do not fit the method.
    InvalidParams,
    /// -32603: the server failed while handling the request (a bug in runx).
    Internal,
    /// -32001: every step slot is taken and the queue is full; retry later.
    Busy,
    /// -32002: `inspect` could not load the package; `data` is runx's failure
    /// (`{"kind", "code", "message"}`).
    PackageFailure,
}

impl ErrorCode {
    /// The number on the wire.
    pub const fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::Internal => -32603,
            ErrorCode::Busy => -32001,
            ErrorCode::PackageFailure => -32002,
        }
    }
}

/// A JSON-RPC error answer.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    /// Which error.
    pub code: ErrorCode,
    /// What a person needs to know.
    pub message: String,
    /// Details for programs, when there are any.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error without data.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error carrying `data`.
    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code.code(), self.message)
    }
}

/// A request's id: its value, which a `cancel` names and which keys a request in flight, and
/// its text exactly as the request wrote it, which every answer echoes byte for byte (a number
/// such as `12345678901234567890123` or `1e2` would not survive a round trip through a value).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestId {
    value: Value,
    text: String,
}

impl RequestId {
    /// The `null` id, for answers to requests whose id could not be read.
    pub fn null() -> RequestId {
        RequestId {
            value: Value::Null,
            text: "null".to_string(),
        }
    }

    /// The id as a JSON value.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The id as the request wrote it.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The text of a request's `id` member, as written (`None` when it has none or it is `null`).
#[derive(Deserialize)]
struct RawId<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
}

/// A request as read from one line.
#[derive(Debug)]
pub struct Request {
    /// The id; `None` for a notification (no `id` member), which gets no answer.
    pub id: Option<RequestId>,
    /// The method.
    pub method: Method,
}

/// The methods, with their parameters.
#[derive(Debug)]
#[non_exhaustive]
pub enum Method {
    /// Run one runner of a package.
    Run(RunParams),
    /// Describe a package.
    Inspect(InspectParams),
    /// Cancel a request in flight.
    Cancel(CancelParams),
    /// Stop reading; answer once every accepted step has answered.
    Shutdown(ShutdownParams),
}

/// `run` parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunParams {
    /// The package directory; relative to the server's working directory.
    pub skill: PathBuf,
    /// The runner; the package's default when absent.
    #[serde(default)]
    pub runner: Option<String>,
    /// The input object.
    #[serde(default)]
    pub inputs: Map<String, Value>,
    /// The only environment the step sees (declared names, and a cli-tool's baseline names).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The step's workspace (`RUNX_CWD`); the server's working directory when absent.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Where the receipt goes; `<cwd>/.runx/receipts` when absent.
    #[serde(default)]
    pub receipt_dir: Option<PathBuf>,
    /// Whether to send `progress` notifications after each page of a paged run.
    #[serde(default)]
    pub progress: bool,
}

/// `inspect` parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InspectParams {
    /// The package directory; relative to the server's working directory.
    pub skill: PathBuf,
}

/// `cancel` parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelParams {
    /// The id of the request to cancel.
    pub id: Value,
}

/// `shutdown` parameters (all optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShutdownParams {
    /// Cancel the steps in flight (they answer `interrupted`) instead of letting them finish.
    #[serde(default)]
    pub cancel: bool,
}

/// Parses one line. An `Err` carries the id to answer with (`null` when none could be read).
/// A line whose objects name a member twice, at any depth, is a parse error: readers disagree
/// on which of the two counts.
pub fn parse(line: &[u8]) -> Result<Request, (RequestId, RpcError)> {
    let value: Value = runx_receipts::parse_unique(line).map_err(|e| {
        (
            RequestId::null(),
            RpcError::new(ErrorCode::ParseError, format!("parse error: {e}")),
        )
    })?;
    let invalid = |id: &RequestId, m: &str| {
        (
            id.clone(),
            RpcError::new(ErrorCode::InvalidRequest, format!("invalid request: {m}")),
        )
    };
    let mut obj = match value {
        Value::Object(o) => o,
        Value::Array(_) => {
            return Err(invalid(
                &RequestId::null(),
                "batches are not supported; send one request object per line",
            ));
        }
        _ => return Err(invalid(&RequestId::null(), "a request is a JSON object")),
    };
    let id = match obj.remove("id") {
        None => None,
        Some(value @ (Value::Null | Value::Number(_) | Value::String(_))) => {
            // The line parsed once already, so it parses again; its `id` text is kept as is.
            let text = serde_json::from_slice::<RawId<'_>>(line)
                .ok()
                .and_then(|raw| raw.id.map(|id| id.get().to_string()))
                .unwrap_or_else(|| value.to_string());
            Some(RequestId { value, text })
        }
        Some(_) => {
            return Err(invalid(
                &RequestId::null(),
                "`id` must be a string, a number or null",
            ));
        }
    };
    let answer_id = id.clone().unwrap_or_else(RequestId::null);
    if obj.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(invalid(&answer_id, "`jsonrpc` must be \"2.0\""));
    }
    let Some(Value::String(method)) = obj.remove("method") else {
        return Err(invalid(&answer_id, "`method` must be a string"));
    };
    if let Some(extra) = obj.keys().find(|k| *k != "jsonrpc" && *k != "params") {
        return Err(invalid(
            &answer_id,
            &format!("unknown member `{extra}`; a request has jsonrpc, id, method and params"),
        ));
    }
    let params = match obj.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(p @ Value::Object(_)) => p,
        Some(Value::Array(_)) => {
            return Err((
                answer_id,
                RpcError::new(
                    ErrorCode::InvalidParams,
                    "invalid params: parameters are passed by name, as an object",
                ),
            ));
        }
        Some(_) => return Err(invalid(&answer_id, "`params` must be an object")),
    };
    let method = method_with(&method, params).map_err(|e| (answer_id, e))?;
    Ok(Request { id, method })
}

fn method_with(name: &str, params: Value) -> Result<Method, RpcError> {
    fn typed<T: serde::de::DeserializeOwned>(method: &str, params: Value) -> Result<T, RpcError> {
        serde_json::from_value(params).map_err(|e| {
            RpcError::new(
                ErrorCode::InvalidParams,
                format!("invalid params for `{method}`: {e}"),
            )
        })
    }
    match name {
        "run" => {
            let p: RunParams = typed(name, params)?;
            check_run(&p)?;
            Ok(Method::Run(p))
        }
        "inspect" => Ok(Method::Inspect(typed(name, params)?)),
        "cancel" => Ok(Method::Cancel(typed(name, params)?)),
        "shutdown" => Ok(Method::Shutdown(typed(name, params)?)),
        other => Err(RpcError::new(
            ErrorCode::MethodNotFound,
            format!(
                "method not found: `{other}`; the methods are run, inspect, cancel and shutdown"
            ),
        )),
    }
}

/// What serde cannot say about `run` parameters: names and values a process environment
/// cannot hold, and empty paths.
fn check_run(p: &RunParams) -> Result<(), RpcError> {
    let bad = |m: String| {
        RpcError::new(
            ErrorCode::InvalidParams,
            format!("invalid params for `run`: {m}"),
        )
    };
    if p.skill.as_os_str().is_empty() {
        return Err(bad(
            "`skill` is empty; name the package directory".to_string()
        ));
    }
    for (name, value) in &p.env {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err(bad(format!(
                "environment name {name:?} is empty or holds `=` or a NUL byte"
            )));
        }
        if value.contains('\0') {
            return Err(bad(format!(
                "the value of environment name `{name}` holds a NUL byte"
            )));
        }
    }
    Ok(())
}

/// A result answer; `result` is already JSON text, written as it is.
pub fn result_line(id: &RequestId, result: &str) -> Vec<u8> {
    let mut line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":").into_bytes();
    line.extend_from_slice(result.as_bytes());
    line.extend_from_slice(b"}\n");
    line
}

/// An error answer.
pub fn error_line(id: &RequestId, e: &RpcError) -> Vec<u8> {
    let mut error = json!({"code": e.code.code(), "message": e.message});
    if let Some(data) = &e.data {
        error["data"] = data.clone();
    }
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}\n").into_bytes()
}

/// A notification about the request `id`: `params` is an object, and `id` goes first in it,
/// written as the request wrote it.
pub fn notification_line(method: &str, id: &RequestId, params: Value) -> Vec<u8> {
    let method = Value::from(method);
    let rest = match params {
        Value::Object(map) if !map.is_empty() => {
            format!(",{}", &Value::Object(map).to_string()[1..])
        }
        _ => "}".to_string(),
    };
    format!("{{\"jsonrpc\":\"2.0\",\"method\":{method},\"params\":{{\"id\":{id}{rest}}}\n")
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of(line: &str) -> (Value, i64) {
        let (id, e) = parse(line.as_bytes()).expect_err("refused");
        (id.value().clone(), e.code.code())
    }

    #[test]
    fn the_order_of_checks_gives_the_standard_codes() {
        assert_eq!(code_of("{nope"), (Value::Null, -32700));
        assert_eq!(code_of("[1]"), (Value::Null, -32600));
        assert_eq!(code_of("7"), (Value::Null, -32600));
        assert_eq!(
            code_of(r#"{"id":{},"jsonrpc":"2.0","method":"run"}"#),
            (Value::Null, -32600)
        );
        assert_eq!(code_of(r#"{"id":3,"method":"run"}"#), (json!(3), -32600));
        assert_eq!(
            code_of(r#"{"id":3,"jsonrpc":"2.0","method":1}"#),
            (json!(3), -32600)
        );
        assert_eq!(
            code_of(r#"{"id":3,"jsonrpc":"2.0","method":"run","x":1}"#),
            (json!(3), -32600)
        );
        assert_eq!(
            code_of(r#"{"id":"a","jsonrpc":"2.0","method":"fly"}"#),
            (json!("a"), -32601)
        );
        assert_eq!(
            code_of(r#"{"id":4,"jsonrpc":"2.0","method":"run","params":[1]}"#),
            (json!(4), -32602)
        );
        assert_eq!(
            code_of(r#"{"id":4,"jsonrpc":"2.0","method":"run","params":{}}"#),
            (json!(4), -32602)
        );
        assert_eq!(
            code_of(
                r#"{"id":4,"jsonrpc":"2.0","method":"run","params":{"skill":"s","inputs":[]}}"#
            ),
            (json!(4), -32602)
        );
        assert_eq!(
            code_of(r#"{"id":4,"jsonrpc":"2.0","method":"run","params":{"skill":"s","input":{}}}"#),
            (json!(4), -32602)
        );
        assert_eq!(
            code_of(
                r#"{"id":4,"jsonrpc":"2.0","method":"run","params":{"skill":"s","env":{"A":1}}}"#
            ),
            (json!(4), -32602)
        );
        assert_eq!(
            code_of(
                r#"{"id":4,"jsonrpc":"2.0","method":"run","params":{"skill":"s","env":{"A=B":"1"}}}"#
            ),
            (json!(4), -32602)
        );
        assert_eq!(
            code_of(
                r#"{"id":4,"jsonrpc":"2.0","method":"run","params":{"skill":"s","env":{"A":"x\u0000"}}}"#
            ),
            (json!(4), -32602)
        );
        assert_eq!(
            code_of(r#"{"id":4,"jsonrpc":"2.0","method":"run","params":{"skill":""}}"#),
            (json!(4), -32602)
        );
    }

    #[test]
    fn deep_nesting_is_a_parse_error_not_a_stack_overflow() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"run","params":{{"skill":"s","inputs":{{"a":{}1{}}}}}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(code_of(&deep), (Value::Null, -32700));
    }

    #[test]
    fn requests_and_notifications() {
        let r = parse(br#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"skill":"s","runner":"r","inputs":{"a":1},"env":{"A":"b"},"cwd":"w","receipt_dir":"d","progress":true}}"#)
            .expect("run");
        assert_eq!(r.id.as_ref().map(RequestId::value), Some(&json!(1)));
        let Method::Run(p) = r.method else {
            panic!("not run")
        };
        assert_eq!((p.runner.as_deref(), p.progress), (Some("r"), true));
        assert_eq!(p.inputs["a"], 1);
        let r = parse(br#"{"jsonrpc":"2.0","method":"shutdown"}"#).expect("shutdown");
        assert!(r.id.is_none());
        assert!(matches!(
            r.method,
            Method::Shutdown(ShutdownParams { cancel: false })
        ));
        let r = parse(br#"{"jsonrpc":"2.0","id":null,"method":"cancel","params":{"id":"x"}}"#)
            .expect("cancel");
        assert_eq!(r.id.as_ref().map(RequestId::value), Some(&Value::Null));
    }

    #[test]
    fn ids_are_echoed_as_written_and_duplicate_members_refused() {
        for written in [
            "12345678901234567890123",
            "1e2",
            "-0",
            "1.50",
            r#""\u0061b""#,
            "null",
        ] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":{written},"method":"inspect","params":{{"skill":"s"}}}}"#
            );
            let r = parse(line.as_bytes()).expect("inspect");
            let id = r.id.expect("an id");
            assert_eq!(id.text(), written);
            let answer = String::from_utf8(result_line(&id, "null")).expect("utf-8");
            assert_eq!(
                answer,
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{written},\"result\":null}}\n")
            );
            let note = String::from_utf8(notification_line("progress", &id, json!({"bytes": 1})))
                .expect("utf-8");
            assert!(
                note.contains(&format!(r#""params":{{"id":{written},"bytes":1}}"#)),
                "{note}"
            );
        }
        for duplicated in [
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"inspect","params":{"skill":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"skill":"a","skill":"b"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"skill":"s","inputs":{"x":1,"x":2}}}"#,
        ] {
            assert_eq!(code_of(duplicated), (Value::Null, -32700), "{duplicated}");
        }
    }

    #[test]
    fn answers_are_one_line_each() {
        let id = parse(br#"{"jsonrpc":"2.0","id":"a\nb","method":"shutdown"}"#)
            .expect("shutdown")
            .id
            .expect("an id");
        let line = result_line(&id, r#"{"status":"sealed"}"#);
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"id\":\"a\\nb\",\"result\":{\"status\":\"sealed\"}}\n"
        );
        let e = RpcError::new(ErrorCode::Busy, "busy\nnow").with_data(json!({"running": 1}));
        let line = error_line(&RequestId::null(), &e);
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        let v: Value = serde_json::from_slice(&line).expect("json");
        assert_eq!(v["error"]["code"], -32001);
        assert_eq!(v["error"]["data"]["running"], 1);
    }
}
