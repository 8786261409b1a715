//! The JSON Schemas of the documents this crate reads (`schemas/`), compiled once: runx's
//! receipt (its field rules), this runtime's evidence and its harness receipt.

use crate::quote::printable;
use crate::receipt::HARNESS_RECEIPT_SCHEMA;
use serde_json::Value;
use std::sync::OnceLock;

/// runx's receipt schema name.
pub const RECEIPT_SCHEMA: &str = "runx.receipt.v1";
/// The schema of this runtime's own evidence document, carried in a receipt's
/// `metadata.evidence`.
pub const EVIDENCE_SCHEMA: &str = "runx-rs.run_evidence.v1";

/// Schema violations quoted in one message.
const MAX_SCHEMA_ERRORS: usize = 3;

type Compiled = Result<jsonschema::Validator, String>;

fn compile(text: &str, name: &str) -> Compiled {
    let schema: Value = serde_json::from_str(text).map_err(|e| format!("{name}: {e}"))?;
    jsonschema::validator_for(&schema).map_err(|e| format!("{name}: {e}"))
}

fn validator(name: &str) -> Option<&'static Compiled> {
    static RECEIPT: OnceLock<Compiled> = OnceLock::new();
    static EVIDENCE: OnceLock<Compiled> = OnceLock::new();
    static HARNESS: OnceLock<Compiled> = OnceLock::new();
    let (cell, text) = match name {
        RECEIPT_SCHEMA => (&RECEIPT, include_str!("../schemas/runx.receipt.v1.json")),
        EVIDENCE_SCHEMA => (
            &EVIDENCE,
            include_str!("../schemas/runx-rs.run_evidence.v1.json"),
        ),
        HARNESS_RECEIPT_SCHEMA => (
            &HARNESS,
            include_str!("../schemas/runx-rs.harness_receipt.v1.json"),
        ),
        _ => return None,
    };
    Some(cell.get_or_init(|| compile(text, name)))
}

/// Checks `doc` against the JSON Schema its `schema` field names; the first few violations,
/// each with where it is, as one message.
pub fn schema_errors(doc: &Value) -> Result<(), String> {
    let name = doc
        .get("schema")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(validator) = validator(name) else {
        return Err(format!(
            "schema `{}` is not one runx verifies ({RECEIPT_SCHEMA}, {HARNESS_RECEIPT_SCHEMA})",
            printable(name)
        ));
    };
    let validator = validator.as_ref().map_err(Clone::clone)?;
    let parts: Vec<String> = validator
        .iter_errors(doc)
        .take(MAX_SCHEMA_ERRORS)
        .map(|e| {
            let at = e.instance_path().as_str();
            let at = if at.is_empty() { "the receipt" } else { at };
            format!("at {}: {}", printable(at), printable(&e.to_string()))
        })
        .collect();
    if parts.is_empty() {
        Ok(())
    } else {
        Err(format!("does not meet {name}: {}", parts.join("; ")))
    }
}
