//! The inputs of `runx skill` from the command line: `-i`/`--input KEY=VALUE` and
//! `--input-json KEY=JSON` pairs, or one JSON object from `--inputs FILE|-`.
//!
//! What the inputs must then satisfy (declared types, schemas, defaults) is the runner's
//! contract, checked by the runtime; this module only turns the command line into an object.

use runx_profile::{INPUTS_BYTES, MAX_SAFE_INTEGER, ValueType, with_article};
use runx_runtime::{FailureKind, RunError};
use runx_worker::{Scope, ScopeError, read_capped};
use serde_json::{Map, Value};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why the command line's inputs cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum InputsError {
    /// A `-i` pair has no `=`.
    #[error("`{pair}` is not KEY=VALUE: there is no `=`")]
    KvNoEquals {
        /// The pair as given.
        pair: String,
    },
    /// A `-i` pair has an empty key.
    #[error("`{pair}` has an empty key; write KEY=VALUE")]
    KvEmptyKey {
        /// The pair as given.
        pair: String,
    },
    /// An `--input-json` pair's value is not JSON.
    #[error(
        "`--input-json {key}=...`: the value is not valid JSON ({message}); quote strings as JSON (`{key}='\"text\"'`) or use --input"
    )]
    KvInvalidJson {
        /// The key.
        key: String,
        /// What the parser said.
        message: String,
    },
    /// Two `-i` pairs name the same key.
    #[error("input `{key}` is given more than once")]
    KvDuplicate {
        /// The key.
        key: String,
    },
    /// The inputs file cannot be opened or read inside the working directory.
    #[error("cannot read inputs file `{file}`: {reason}")]
    InputsFile {
        /// The file as given.
        file: String,
        /// Why, naming the working directory.
        reason: String,
    },
    /// Stdin cannot be read.
    #[error("cannot read stdin: {reason}")]
    Stdin {
        /// Why.
        reason: String,
    },
    /// An inputs file or stdin holds more than `inputs_bytes`.
    #[error("{source_name} holds more than {} bytes of inputs (limit `{}`); pass large values as files the skill reads", INPUTS_BYTES.max, INPUTS_BYTES.name)]
    TooLarge {
        /// The file, or `stdin`.
        source_name: String,
    },
    /// An inputs file or stdin is not UTF-8.
    #[error("{source_name} is not UTF-8 (first invalid byte at offset {offset})")]
    NotUtf8 {
        /// The file, or `stdin`.
        source_name: String,
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// A JSON object of the inputs names a key twice. serde_json keeps the last and other
    /// readers the first, so the run and a log of the request could disagree; refused, as
    /// `runx serve` refuses such a line.
    #[error(
        "{source_name} names a key twice: {message} at line {line} column {column}; give each key once"
    )]
    DuplicateKey {
        /// The file, `stdin`, or `input `KEY``.
        source_name: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the check said (`duplicate key `name``).
        message: String,
    },
    /// An inputs file or stdin is not JSON.
    #[error("{source_name} is not valid JSON: {message} at line {line} column {column}")]
    InvalidJson {
        /// The file, or `stdin`.
        source_name: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// An input holds an integer literal beyond 64 bits, which JSON reads as a double (the
    /// integers of 64 bits are checked, with the same words, when the run resolves its inputs).
    #[error(
        "{source_name} holds the integer {value}{}, beyond ±{MAX_SAFE_INTEGER} (2^53 - 1), which a JSON number does not carry exactly; pass it as a string",
        if at.is_empty() { String::new() } else { format!(" at {at}") }
    )]
    UnsafeInteger {
        /// The file, `stdin`, or `input KEY`.
        source_name: String,
        /// Where, as a JSON pointer (empty: the value itself).
        at: String,
        /// The integer as given.
        value: String,
    },
    /// An inputs file or stdin holds JSON that is not an object.
    #[error(
        "{source_name} must hold a JSON object of inputs, but it holds {}",
        with_article(actual)
    )]
    NotObject {
        /// The file, or `stdin`.
        source_name: String,
        /// The JSON type it holds.
        actual: &'static str,
    },
}

impl InputsError {
    /// The failure code, under the `input` kind.
    pub fn code(&self) -> &'static str {
        match self {
            InputsError::KvNoEquals { .. }
            | InputsError::KvEmptyKey { .. }
            | InputsError::KvDuplicate { .. } => "bad_pair",
            InputsError::InputsFile { .. } => "inputs_file",
            InputsError::Stdin { .. } => "stdin",
            InputsError::TooLarge { .. } => INPUTS_BYTES.name,
            InputsError::NotUtf8 { .. } => "not_utf8",
            InputsError::InvalidJson { .. } | InputsError::KvInvalidJson { .. } => "invalid_json",
            InputsError::DuplicateKey { .. } => "duplicate_key",
            InputsError::NotObject { .. } => "not_object",
            InputsError::UnsafeInteger { .. } => "unsafe_integer",
        }
    }
}

impl From<InputsError> for RunError {
    fn from(e: InputsError) -> RunError {
        RunError::new(FailureKind::Input, e.code(), e.to_string())
    }
}

/// Reads `--inputs FILE|-`, or the `-i`/`--input` and `--input-json` pairs (never both). A
/// file is read inside the working directory (or `RUNX_CWD`) and stdin up to the
/// `inputs_bytes` limit.
pub(crate) fn read_inputs(
    inputs: Option<&str>,
    input: &[String],
    input_json: &[String],
) -> Result<Map<String, Value>, RunError> {
    let pairs = input.is_empty() && input_json.is_empty();
    match (inputs, pairs) {
        (Some(_), false) => Err(RunError::new(
            FailureKind::Usage,
            "mixed_inputs",
            "use either --inputs or -i/--input/--input-json KEY=VALUE, not both",
        )),
        (Some("-"), true) => Ok(read_object(&mut std::io::stdin().lock(), "stdin")?),
        (Some(file), true) => {
            let root = inputs_root(file)?;
            Ok(read_object_file(&root, file)?)
        }
        (None, _) => Ok(parse_pairs(input, input_json)?),
    }
}

/// The directory `--inputs FILE` is read inside: the working directory, or `RUNX_CWD` when it
/// is set and holds FILE (a relative FILE is looked for in the working directory first). The
/// file is opened inside that directory without following links out of it
/// ([`read_object_file`]).
fn inputs_root(file: &str) -> Result<PathBuf, RunError> {
    let input_err = |code: &str, m: String| RunError::new(FailureKind::Input, code, m);
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| input_err("cwd", e.to_string()))?;
    let mut roots = vec![cwd.clone()];
    if let Some(ws) = std::env::var_os("RUNX_CWD").filter(|v| !v.is_empty()) {
        let ws = cwd.join(ws).canonicalize().map_err(|e| {
            input_err(
                "inputs_file",
                format!("RUNX_CWD cannot be opened to find `{file}`: {e}"),
            )
        })?;
        roots.push(ws);
    }
    let given = Path::new(file);
    let found = if given.is_absolute() {
        roots.iter().find(|r| given.starts_with(r))
    } else {
        roots
            .iter()
            .find(|r| r.join(given).symlink_metadata().is_ok())
    };
    Ok(found.unwrap_or(&cwd).clone())
}

/// Parses `KEY=VALUE` command-line pairs. The value is JSON when it parses as JSON (`n=3`,
/// `tags=["a"]`, `on=true`) and a plain string otherwise (`name=Ada`, `empty=`); quote it as JSON
/// (`id="007"`) to force a string.
pub fn parse_kv(pairs: &[String]) -> Result<Map<String, Value>, InputsError> {
    let mut out = Map::new();
    for pair in pairs {
        let (key, raw) = pair
            .split_once('=')
            .ok_or_else(|| InputsError::KvNoEquals { pair: pair.clone() })?;
        if key.is_empty() {
            return Err(InputsError::KvEmptyKey { pair: pair.clone() });
        }
        let value =
            serde_json::from_str::<Value>(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
        if !value.is_string() {
            unique(raw, &format!("input `{key}`"))?;
        }
        exact(raw, &value, &format!("input `{key}`"))?;
        if out.insert(key.to_string(), value).is_some() {
            return Err(InputsError::KvDuplicate {
                key: key.to_string(),
            });
        }
    }
    Ok(out)
}

/// Parses `--input KEY=VALUE` pairs (see [`parse_kv`]) and `--input-json KEY=JSON` pairs, whose
/// value must be JSON, into one object; a key given twice, in either form, is refused.
pub fn parse_pairs(
    pairs: &[String],
    json_pairs: &[String],
) -> Result<Map<String, Value>, InputsError> {
    let mut out = parse_kv(pairs)?;
    for pair in json_pairs {
        let (key, raw) = pair
            .split_once('=')
            .ok_or_else(|| InputsError::KvNoEquals { pair: pair.clone() })?;
        if key.is_empty() {
            return Err(InputsError::KvEmptyKey { pair: pair.clone() });
        }
        let value = serde_json::from_str::<Value>(raw).map_err(|e| InputsError::KvInvalidJson {
            key: key.to_string(),
            // Where, not serde's token names (`expected ident`).
            message: format!("at character {}", e.column()),
        })?;
        unique(raw, &format!("input `{key}`"))?;
        exact(raw, &value, &format!("input `{key}`"))?;
        if out.insert(key.to_string(), value).is_some() {
            return Err(InputsError::KvDuplicate {
                key: key.to_string(),
            });
        }
    }
    Ok(out)
}

/// Reads the input object from `file`, a path inside the working directory `cwd` (relative,
/// or absolute under `cwd`): opened through [`Scope`] (no symlink, a regular file, without
/// blocking) and read up to [`INPUTS_BYTES`].
pub fn read_object_file(cwd: &Path, file: &str) -> Result<Map<String, Value>, InputsError> {
    let refused = |reason: String| InputsError::InputsFile {
        file: file.to_string(),
        reason,
    };
    let given = Path::new(file);
    let rel = if given.is_absolute() {
        given.strip_prefix(cwd).map_err(|_| {
            refused(format!(
                "it lies outside the working directory {}",
                cwd.display()
            ))
        })?
    } else {
        given
    };
    let scope = Scope::open(cwd).map_err(|e| refused(format!("{}: {e}", cwd.display())))?;
    let bytes = scope.read(rel, INPUTS_BYTES.max).map_err(|e| match e {
        ScopeError::TooLarge { .. } => InputsError::TooLarge {
            source_name: file.to_string(),
        },
        other => refused(other.to_string()),
    })?;
    parse_object(&bytes, file)
}

/// Reads the input object from `reader` (stdin) to its end, but never more than
/// [`INPUTS_BYTES`] + 1 bytes, whatever the reader is (`/dev/zero` included).
pub fn read_object(
    reader: &mut impl Read,
    source: &str,
) -> Result<Map<String, Value>, InputsError> {
    let bytes = read_capped(reader, INPUTS_BYTES.max, 0)
        .map_err(|e| InputsError::Stdin {
            reason: e.to_string(),
        })?
        .map_err(|_| InputsError::TooLarge {
            source_name: source.to_string(),
        })?;
    parse_object(&bytes, source)
}

/// Parses a complete inputs object from a file or stdin; `source` names it in errors
/// (`inputs.json`, `stdin`). A leading UTF-8 byte-order mark is skipped, since some editors
/// write one.
pub fn parse_object(bytes: &[u8], source: &str) -> Result<Map<String, Value>, InputsError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|e| InputsError::NotUtf8 {
        source_name: source.to_string(),
        offset: e.valid_up_to(),
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| {
        let full = e.to_string();
        // serde_json appends " at line L column C"; the variant carries those separately.
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
        InputsError::InvalidJson {
            source_name: source.to_string(),
            line: e.line(),
            column: e.column(),
            message,
        }
    })?;
    unique(text, source)?;
    exact(text, &value, source)?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(InputsError::NotObject {
            source_name: source.to_string(),
            actual: ValueType::describe(&other),
        }),
    }
}

/// Refuses JSON `text` (already known to parse) whose objects name a key twice, at any depth.
fn unique(text: &str, source: &str) -> Result<(), InputsError> {
    runx_receipts::check_unique(text.as_bytes()).map_err(|e| {
        let full = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        InputsError::DuplicateKey {
            source_name: source.to_string(),
            line: e.line(),
            column: e.column(),
            message: full.strip_suffix(&suffix).unwrap_or(&full).to_string(),
        }
    })
}

/// Refuses an integer literal of `text` beyond 64 bits (read as a double, so the value no
/// longer shows it); integers of 64 bits are refused later, with their input's name, by
/// `resolve_inputs`.
fn exact(text: &str, value: &Value, source: &str) -> Result<(), InputsError> {
    if runx_profile::unsafe_integer(value).is_some() {
        return Ok(());
    }
    match runx_profile::long_integer_in(text.as_bytes(), value) {
        Some((at, literal)) => Err(InputsError::UnsafeInteger {
            source_name: source.to_string(),
            at,
            value: literal,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_beyond_64_bits_are_refused_as_given() {
        let pairs = vec!["amount=12345678901234567890123".to_string()];
        let e = parse_kv(&pairs).unwrap_err();
        assert_eq!(e.code(), "unsafe_integer");
        assert!(e.to_string().contains("12345678901234567890123"), "{e}");
        let e =
            parse_object(br#"{"ids": [1, 123456789012345678901234567890]}"#, "stdin").unwrap_err();
        assert_eq!(e.code(), "unsafe_integer");
        assert!(e.to_string().contains("at /ids/1"), "{e}");
        // Written as a double, it is one: accepted.
        assert!(parse_object(br#"{"x": 1.2345678901234567e22}"#, "stdin").is_ok());
    }

    #[test]
    fn kv_parsing() {
        let pairs: Vec<String> = [
            "n=3",
            "name=Ada",
            "tags=[\"a\"]",
            "on=true",
            "id=\"007\"",
            "empty=",
            "eq=a=b",
            "nil=null",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let got = parse_kv(&pairs).expect("valid");
        assert_eq!(
            Value::Object(got),
            json!({"n": 3, "name": "Ada", "tags": ["a"], "on": true, "id": "007", "empty": "", "eq": "a=b", "nil": null})
        );
        let e = parse_kv(&["name".to_string()]).expect_err("no =");
        assert!(matches!(e, InputsError::KvNoEquals { .. }));
        let e = parse_kv(&["=x".to_string()]).expect_err("empty key");
        assert!(matches!(e, InputsError::KvEmptyKey { .. }));
        let e = parse_kv(&["a=1".to_string(), "a=2".to_string()]).expect_err("dup");
        assert_eq!(e.to_string(), "input `a` is given more than once");
    }

    #[test]
    fn json_pairs() {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let got = parse_pairs(
            &strings(&["a=x"]),
            &strings(&["o={\"k\": [1]}", "s=\"007\""]),
        )
        .expect("valid");
        assert_eq!(
            Value::Object(got),
            json!({"a": "x", "o": {"k": [1]}, "s": "007"})
        );
        let e = parse_pairs(&[], &strings(&["o={k}"])).expect_err("not json");
        assert_eq!(e.code(), "invalid_json");
        assert!(e.to_string().contains("`--input-json o=...`"), "{e}");
        let e = parse_pairs(&strings(&["a=1"]), &strings(&["a=2"])).expect_err("dup");
        assert!(matches!(e, InputsError::KvDuplicate { .. }));
        let e = parse_pairs(&[], &strings(&["nokey"])).expect_err("no =");
        assert!(matches!(e, InputsError::KvNoEquals { .. }));
    }

    #[test]
    fn object_parsing() {
        assert_eq!(
            Value::Object(parse_object(b"{\"a\": 1}", "inputs.json").expect("valid")),
            json!({"a": 1})
        );
        assert_eq!(
            Value::Object(parse_object(b"\xEF\xBB\xBF{}", "inputs.json").expect("bom")),
            json!({})
        );
        let e = parse_object(b"{\"a\": \xff}", "inputs.json").expect_err("utf8");
        assert_eq!(
            e.to_string(),
            "inputs.json is not UTF-8 (first invalid byte at offset 6)"
        );
        let e = parse_object(b"{\n  \"a\": 1,\n}", "stdin").expect_err("json");
        let InputsError::InvalidJson { line, column, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!((*line, *column), (3, 1));
        assert!(
            e.to_string().starts_with("stdin is not valid JSON: "),
            "{e}"
        );
        assert!(e.to_string().ends_with("at line 3 column 1"), "{e}");
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // One rule wherever a caller's JSON enters (`runx serve` refuses the same line): a key
        // named twice is refused, at any depth, in a file, on stdin and in a pair.
        let e = parse_object(br#"{"name": "Alice", "name": "Mallory"}"#, "stdin").expect_err("dup");
        assert_eq!(e.code(), "duplicate_key");
        assert_eq!(
            e.to_string(),
            "stdin names a key twice: duplicate key `name` at line 1 column 24; give each key once"
        );
        let e = parse_object(br#"{"a": [{"b": 1, "b": 2}]}"#, "inputs.json").expect_err("deep");
        assert!(matches!(e, InputsError::DuplicateKey { .. }), "{e:?}");
        let e = parse_pairs(&strings(&[r#"x={"k":1,"k":2}"#]), &[]).expect_err("pair");
        assert!(
            e.to_string().starts_with("input `x` names a key twice"),
            "{e}"
        );
        let e = parse_pairs(&[], &strings(&[r#"x={"k":1,"k":2}"#])).expect_err("json pair");
        assert!(matches!(e, InputsError::DuplicateKey { .. }), "{e:?}");
        assert_eq!(
            Value::Object(parse_pairs(&strings(&["x={\"k\":1,\"j\":2}"]), &[]).expect("distinct")),
            json!({"x": {"k": 1, "j": 2}})
        );
        let e = parse_object(b"[1]", "stdin").expect_err("array");
        assert_eq!(
            e.to_string(),
            "stdin must hold a JSON object of inputs, but it holds an array"
        );
    }
}
