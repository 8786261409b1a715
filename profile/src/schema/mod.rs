//! A declared JSON Schema, compiled once when the profile is read and kept with it, and the bound
//! on the work of validating a value against it.
//!
//! `jsonschema` cannot be interrupted once it validates, and its work can double with each level
//! of a value (a recursive `anyOf` whose branches all descend): so before it starts, the value is
//! measured against the schema's graph ([`graph`]), counting the (subschema, value node)
//! evaluations a validator could make ([`bound`]). A value whose count exceeds
//! [`VALIDATION_STEPS`] is refused without being validated.

mod bound;
mod graph;

#[cfg(test)]
mod bound_tests;

use std::fmt;
use std::sync::Arc;

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::limits::VALIDATION_STEPS;

/// Most schema violations listed in one message; the rest are counted.
const MAX_SCHEMA_ERRORS: usize = 5;
/// Longest single schema violation text; `jsonschema` quotes the offending value, which may be
/// large.
const MAX_SCHEMA_ERROR_CHARS: usize = 300;

/// A declared JSON Schema with its compiled validator. Cloning shares the compiled form, so a
/// profile kept warm validates without compiling again.
#[derive(Clone)]
pub struct Schema(Arc<Compiled>);

struct Compiled {
    value: Value,
    validator: jsonschema::Validator,
    graph: graph::Graph,
}

/// Why a value was not accepted by a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// It breaks the schema: the first violations, with their paths.
    Mismatch(String),
    /// Validating it could take more than [`VALIDATION_STEPS`] evaluations.
    TooComplex {
        /// The bound counted (at least this many above the limit).
        steps: u64,
    },
}

impl Schema {
    /// Compiles a schema, so a broken one (or one whose validation runx cannot bound) is
    /// reported at load, not on first use.
    pub fn compile(value: Value) -> Result<Schema, String> {
        let validator = jsonschema::validator_for(&value)
            .map_err(|e| format!("`schema` is not a usable JSON Schema: {e}"))?;
        let graph = graph::build(&value)?;
        Ok(Schema(Arc::new(Compiled {
            value,
            validator,
            graph,
        })))
    }

    /// The schema as declared.
    pub fn value(&self) -> &Value {
        &self.0.value
    }

    /// An upper bound of the evaluations validating `instance` takes, counted up to a little past
    /// `cap` (a larger result means only "more than `cap`").
    pub fn steps(&self, instance: &Value, cap: u64) -> u64 {
        bound::steps(&self.0.graph, instance, cap)
    }

    /// Validates `instance`, within [`VALIDATION_STEPS`], summarising the violations as
    /// `at /path: reason; ...`.
    pub(crate) fn check(&self, instance: &Value) -> Result<(), Refusal> {
        let limit = VALIDATION_STEPS.default;
        let steps = self.steps(instance, limit);
        if steps > limit {
            return Err(Refusal::TooComplex { steps });
        }
        let validator = &self.0.validator;
        if validator.is_valid(instance) {
            return Ok(());
        }
        let mut parts = Vec::new();
        let mut more = 0usize;
        for error in validator.iter_errors(instance) {
            if parts.len() == MAX_SCHEMA_ERRORS {
                more += 1;
                continue;
            }
            let at = error.instance_path().as_str();
            let at = if at.is_empty() { "the value" } else { at };
            parts.push(format!("at {at}: {}", truncate(&error.to_string())));
        }
        if parts.is_empty() {
            return Ok(());
        }
        let mut details = parts.join("; ");
        if more > 0 {
            details.push_str(&format!("; and {more} more"));
        }
        Err(Refusal::Mismatch(details))
    }
}

/// The message of a value refused as too complex to validate, after `input `x` ` or
/// `output `x` `.
pub(crate) fn too_complex(steps: u64) -> String {
    let limit = VALIDATION_STEPS.default;
    let steps = if steps == u64::MAX {
        "more".to_string()
    } else {
        steps.to_string()
    };
    format!(
        "is too complex for its schema: validating it could take at least {steps} steps, more than the {limit} allowed (`{}`); the value nests too deep for a schema whose alternatives (`anyOf`, `oneOf`, `allOf`) each descend into it. Simplify the schema or the value",
        VALIDATION_STEPS.name
    )
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_SCHEMA_ERROR_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        self.0.value == other.0.value
    }
}

impl PartialEq<Value> for Schema {
    fn eq(&self, other: &Value) -> bool {
        &self.0.value == other
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.value.fmt(f)
    }
}

impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.value.serialize(s)
    }
}
