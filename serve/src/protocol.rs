//! The wire: JSON-RPC 2.0 messages, one per line, read into a method and its parameters
//! ([`crate::params`]), and the answers written back.
//!
//! Parsing follows the JSON-RPC order of checks: a line that is not JSON is a parse error; a
//! JSON value that is not a request object is an invalid request; an unknown method is
//! `method not found`; parameters that do not fit the method are `invalid params`. Batches
//! (arrays of requests) are refused as invalid requests: answers come one per line, each when
//! its step ends.
//!
//! A line is never built into a tree of values here. Its values are counted first
//! ([`REQUEST_VALUES`]); it is then checked (JSON, every key once) without being built; the
//! request's members are read as text, and a `run`'s inputs and environment stay text
//! ([`Inputs`](crate::params::Inputs), [`Env`](crate::params::Env)) until a step thread takes
//! the request. So a queued request costs the bytes of its line, and only the requests running
//! (at most the pool size) hold parsed inputs, of a bounded number of values.

use crate::params::{
    CancelParams, InfoParams, InspectParams, RunParams, ShutdownParams, without_position,
};
use runx_profile::REQUEST_VALUES;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::fmt;

/// The JSON-RPC error codes of the step server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    /// -32700: the line is not JSON.
    ParseError,
    /// -32600: not a request object, a batch, a duplicate id, or a line over the size limit
    /// or the value limit ([`REQUEST_VALUES`]).
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

/// The text of a request's `id` member, as written (`None` when it has none).
#[derive(Deserialize)]
struct RawId<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
}

/// The id a request wrote, if it is one: `null`, a number or a string.
fn request_id(raw: &RawValue) -> Option<RequestId> {
    let text = raw.get();
    if !text.starts_with([
        'n', '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9',
    ]) {
        return None;
    }
    let value = serde_json::from_str(text).ok()?;
    Some(RequestId {
        value,
        text: text.to_string(),
    })
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
    /// Describe the server: its pool size, queue limit and version.
    Info(InfoParams),
    /// Cancel a request in flight.
    Cancel(CancelParams),
    /// Stop reading; answer once every accepted step has answered.
    Shutdown(ShutdownParams),
}

/// Parses one line. An `Err` carries the id to answer with (`null` when none could be read).
/// A line of more than [`REQUEST_VALUES`] values is refused before it is parsed. A line whose
/// objects name a member twice, at any depth, is a parse error: readers disagree on which of
/// the two counts.
pub fn parse(line: &[u8]) -> Result<Request, (RequestId, RpcError)> {
    if runx_receipts::count_values(line, REQUEST_VALUES.max) > REQUEST_VALUES.max {
        return Err((id_of(line), too_many_values()));
    }
    runx_receipts::check_unique(line).map_err(|e| {
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
    // The line is JSON: its first byte says what it holds.
    match line.trim_ascii_start().first() {
        Some(b'{') => {}
        Some(b'[') => {
            return Err(invalid(
                &RequestId::null(),
                "batches are not supported; send one request object per line",
            ));
        }
        _ => return Err(invalid(&RequestId::null(), "a request is a JSON object")),
    }
    let envelope: Envelope<'_> = serde_json::from_slice(line).map_err(|e| {
        (
            RequestId::null(),
            RpcError::new(ErrorCode::ParseError, format!("parse error: {e}")),
        )
    })?;
    let id = match envelope.id {
        None => None,
        Some(raw) => match request_id(raw) {
            Some(id) => Some(id),
            None => {
                return Err(invalid(
                    &RequestId::null(),
                    "`id` must be a string, a number or null",
                ));
            }
        },
    };
    let answer_id = id.clone().unwrap_or_else(RequestId::null);
    if envelope.jsonrpc.and_then(string).as_deref() != Some("2.0") {
        return Err(invalid(&answer_id, "`jsonrpc` must be \"2.0\""));
    }
    let Some(method) = envelope.method.and_then(string) else {
        return Err(invalid(&answer_id, "`method` must be a string"));
    };
    if let Some(extra) = envelope.unknown {
        return Err(invalid(
            &answer_id,
            &format!("unknown member `{extra}`; a request has jsonrpc, id, method and params"),
        ));
    }
    let params = match envelope.params.map(RawValue::get) {
        None | Some("null") => "{}",
        Some(p) if p.starts_with('{') => p,
        Some(p) if p.starts_with('[') => {
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

/// The refusal of a line over [`REQUEST_VALUES`].
fn too_many_values() -> RpcError {
    RpcError::new(
        ErrorCode::InvalidRequest,
        format!(
            "invalid request: the line holds more than {} JSON values (object keys included), the most a request may hold ({}); it was not parsed",
            REQUEST_VALUES.max, REQUEST_VALUES.name
        ),
    )
    .with_data(json!({"limit": REQUEST_VALUES.name, "max": REQUEST_VALUES.max}))
}

/// The id of a request object refused unparsed, read without building anything, so that its
/// answer can name it; `null` when there is none to read.
fn id_of(line: &[u8]) -> RequestId {
    if line.trim_ascii_start().first() != Some(&b'{') {
        return RequestId::null();
    }
    serde_json::from_slice::<RawId<'_>>(line)
        .ok()
        .and_then(|raw| raw.id)
        .and_then(request_id)
        .unwrap_or_else(RequestId::null)
}

/// A string member's value, if it is a string.
fn string(raw: &RawValue) -> Option<String> {
    serde_json::from_str(raw.get()).ok()
}

/// The members of a request object as they were written, read in one pass that builds no
/// value: the four a request may have, and the first (in key order) of any others.
#[derive(Default)]
struct Envelope<'a> {
    id: Option<&'a RawValue>,
    jsonrpc: Option<&'a RawValue>,
    method: Option<&'a RawValue>,
    params: Option<&'a RawValue>,
    unknown: Option<String>,
}

impl<'de> Deserialize<'de> for Envelope<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Envelope<'de>, D::Error> {
        d.deserialize_map(EnvelopeVisitor)
    }
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'de>, A::Error> {
        let mut e = Envelope::default();
        while let Some(key) = map.next_key::<String>()? {
            let slot = match key.as_str() {
                "id" => &mut e.id,
                "jsonrpc" => &mut e.jsonrpc,
                "method" => &mut e.method,
                "params" => &mut e.params,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    if e.unknown.as_ref().is_none_or(|u| key < *u) {
                        e.unknown = Some(key);
                    }
                    continue;
                }
            };
            *slot = Some(map.next_value()?);
        }
        Ok(e)
    }
}

fn method_with(name: &str, params: &str) -> Result<Method, RpcError> {
    fn typed<'a, T: Deserialize<'a>>(method: &str, params: &'a str) -> Result<T, RpcError> {
        serde_json::from_str(params).map_err(|e| {
            RpcError::new(
                ErrorCode::InvalidParams,
                format!("invalid params for `{method}`: {}", without_position(&e)),
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
        "info" => Ok(Method::Info(typed(name, params)?)),
        "cancel" => Ok(Method::Cancel(typed(name, params)?)),
        "shutdown" => Ok(Method::Shutdown(typed(name, params)?)),
        other => Err(RpcError::new(
            ErrorCode::MethodNotFound,
            format!(
                "method not found: `{other}`; the methods are run, inspect, info, cancel and shutdown"
            ),
        )),
    }
}

/// What serde cannot say about `run` parameters: an empty package path. (The environment's
/// names and values are checked as it is read, [`Env`](crate::params::Env).)
fn check_run(p: &RunParams) -> Result<(), RpcError> {
    if p.skill.as_os_str().is_empty() {
        return Err(RpcError::new(
            ErrorCode::InvalidParams,
            "invalid params for `run`: `skill` is empty; name the package directory",
        ));
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
        assert_eq!(p.inputs.parse().expect("inputs")["a"], 1);
        assert_eq!(p.inputs.text(), Some(r#"{"a":1}"#), "the inputs stay text");
        let env = p.env.parse().expect("env");
        assert_eq!(
            env.into_iter().collect::<Vec<_>>(),
            [("A".to_string(), "b".to_string())]
        );
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

    /// A `run` line whose inputs hold an array of `zeros` zeros.
    fn run_line(id: &str, zeros: u64) -> String {
        let zeros = usize::try_from(zeros).expect("usize");
        let items = if zeros == 0 {
            String::new()
        } else {
            format!("{}0", "0,".repeat(zeros - 1))
        };
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"run","params":{{"skill":"s","inputs":{{"a":[{items}]}}}}}}"#
        )
    }

    #[test]
    fn a_line_over_the_value_limit_is_refused_unparsed_with_its_id() {
        let around = runx_receipts::count_values(run_line("7", 0).as_bytes(), u64::MAX);
        let most = REQUEST_VALUES.max - around;
        let at = run_line("7", most);
        assert_eq!(
            runx_receipts::count_values(at.as_bytes(), u64::MAX),
            REQUEST_VALUES.max
        );
        let r = parse(at.as_bytes()).expect("at the limit it is a request");
        let Method::Run(p) = r.method else {
            panic!("not run")
        };
        assert_eq!(
            p.inputs.parse().expect("inputs")["a"]
                .as_array()
                .map(Vec::len),
            Some(usize::try_from(most).expect("usize"))
        );

        let over = run_line("\"big\"", most + 1);
        let (id, e) = parse(over.as_bytes()).expect_err("refused");
        assert_eq!((id.text(), e.code), ("\"big\"", ErrorCode::InvalidRequest));
        assert!(e.message.contains("request_values"), "{}", e.message);
        assert!(
            e.message.contains(&REQUEST_VALUES.max.to_string()),
            "{}",
            e.message
        );
        assert_eq!(
            e.data,
            Some(json!({"limit": "request_values", "max": REQUEST_VALUES.max}))
        );
        // Refused before it is checked: the same line with a member twice, or cut short, gets
        // the same answer, not a parse error.
        let twice = over.replacen(r#""skill":"s""#, r#""skill":"s","skill":"t""#, 1);
        assert_eq!(parse(twice.as_bytes()).expect_err("refused").1, e);
        let cut = &over[..over.len() - 3];
        let (id, cut_e) = parse(cut.as_bytes()).expect_err("refused");
        assert_eq!((id.value(), cut_e), (&Value::Null, e.clone()));
        // A batch over the limit has no id to answer with.
        let batch = format!("[{over}]");
        assert_eq!(
            parse(batch.as_bytes()).expect_err("refused").0,
            RequestId::null()
        );
    }

    #[test]
    fn invalid_params_messages_carry_no_position_within_params() {
        let (_, e) =
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"skill":"s","input":{}}}"#)
                .expect_err("unknown field");
        assert!(
            e.message
                .starts_with("invalid params for `run`: unknown field `input`"),
            "{}",
            e.message
        );
        assert!(!e.message.contains(" at line "), "{}", e.message);
        let (_, e) = parse(
            br#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"skill":"s","inputs":null}}"#,
        )
        .expect_err("null inputs");
        assert!(
            e.message.contains("`inputs` must be an object"),
            "{}",
            e.message
        );
        for (env, says) in [
            (
                r#"{"A=B":"c"}"#,
                r#"environment name "A=B" is empty or holds `=` or a NUL byte"#,
            ),
            (
                r#"{"A":"c\u0000"}"#,
                "the value of environment name `A` holds a NUL byte",
            ),
            (r#"{"A":1}"#, "invalid type: integer `1`, expected a string"),
            (
                "[]",
                "invalid type: sequence, expected an object of environment strings",
            ),
        ] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"run","params":{{"skill":"s","env":{env}}}}}"#
            );
            let (_, e) = parse(line.as_bytes()).expect_err("bad env");
            assert_eq!(e.code, ErrorCode::InvalidParams, "{env}");
            assert_eq!(
                e.message,
                format!("invalid params for `run`: {says}"),
                "{env}"
            );
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
