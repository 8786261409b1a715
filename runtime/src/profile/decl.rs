//! Declared inputs and outputs: their types, defaults and JSON Schemas, as read from a profile.
//!
//! A declaration is written short (`name: string`) or long (`name: { type, required, default,
//! description, schema }`); both are read here, and a long one is checked at load (its default
//! against its type and schema, its schema compiled) so a broken declaration fails early.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{InputDecl, OutputDecl};

/// Declared JSON type of an input or output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// A JSON string.
    String,
    /// Any JSON number.
    Number,
    /// A number without a fractional part (`2` and `2.0`, not `2.5`).
    Integer,
    /// `true` or `false`.
    Boolean,
    /// A JSON object.
    Object,
    /// A JSON array.
    Array,
    /// `null`.
    Null,
    /// Any JSON value.
    Any,
}

const TYPE_NAMES: &str = "string, number, integer, boolean, object, array, null, any";

impl ValueType {
    /// Parses a declared type name.
    pub fn from_name(name: &str) -> Option<ValueType> {
        Some(match name {
            "string" => ValueType::String,
            "number" => ValueType::Number,
            "integer" => ValueType::Integer,
            "boolean" => ValueType::Boolean,
            "object" => ValueType::Object,
            "array" => ValueType::Array,
            "null" => ValueType::Null,
            "any" => ValueType::Any,
            _ => return None,
        })
    }

    /// The name as written in a profile.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::String => "string",
            ValueType::Number => "number",
            ValueType::Integer => "integer",
            ValueType::Boolean => "boolean",
            ValueType::Object => "object",
            ValueType::Array => "array",
            ValueType::Null => "null",
            ValueType::Any => "any",
        }
    }

    /// Whether `v` has this type.
    pub fn matches(self, v: &Value) -> bool {
        match self {
            ValueType::String => v.is_string(),
            ValueType::Number => v.is_number(),
            ValueType::Integer => is_integer(v),
            ValueType::Boolean => v.is_boolean(),
            ValueType::Object => v.is_object(),
            ValueType::Array => v.is_array(),
            ValueType::Null => v.is_null(),
            ValueType::Any => true,
        }
    }

    /// The JSON type name of a value, for "expected X, got Y" messages.
    pub fn describe(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) if is_integer(v) => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A type name with its indefinite article (`a string`, `an integer`), for messages.
pub fn with_article(name: &str) -> String {
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64()
                || n.is_u64()
                || n.as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        _ => false,
    }
}

impl<'de> Deserialize<'de> for ValueType {
    /// Reads a type name. YAML reads an unquoted `type: null` as the null value, which here can
    /// only mean the `null` type.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ValueType;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a type name ({TYPE_NAMES})")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ValueType, E> {
                ValueType::from_name(v).ok_or_else(|| unknown_type(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<ValueType, E> {
                Ok(ValueType::Null)
            }
        }
        d.deserialize_any(V)
    }
}

/// A `type:` key that is present; `type: null` is the null type, not an absent type.
fn some_type<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ValueType>, D::Error> {
    ValueType::deserialize(d).map(Some)
}

fn unknown_type<E: de::Error>(name: &str) -> E {
    E::custom(format!(
        "unknown type `{name}`; the types are: {TYPE_NAMES}"
    ))
}

/// Long form of an input declaration; unknown keys (`examples`, ...) are ignored.
#[derive(Deserialize)]
struct RawInput {
    #[serde(rename = "type", default, deserialize_with = "some_type")]
    ty: Option<ValueType>,
    #[serde(default)]
    required: bool,
    // `default: null` is a real default, hence the double option.
    #[serde(default, deserialize_with = "present")]
    default: Option<Value>,
    description: Option<String>,
    schema: Option<Value>,
}

/// Keeps an explicitly written `null` as `Some(Value::Null)`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct RawOutput {
    #[serde(rename = "type", default, deserialize_with = "some_type")]
    ty: Option<ValueType>,
    schema: Option<Value>,
}

/// Compiles a schema so a broken one is reported at load, not on first use.
pub fn compile_schema(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(schema)
        .map_err(|e| format!("`schema` is not a usable JSON Schema: {e}"))
}

/// Accepts `name: <type>` or `name: { type, ... }` and validates the long form.
macro_rules! decl_visitor {
    ($decl:ident, $expect:literal, $build:expr) => {
        impl<'de> Deserialize<'de> for $decl {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $decl;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expect)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$decl, E> {
                        let ty = ValueType::from_name(v).ok_or_else(|| unknown_type::<E>(v))?;
                        Ok($decl::of_type(ty))
                    }
                    fn visit_unit<E: de::Error>(self) -> Result<$decl, E> {
                        Err(E::custom(
                            "the declaration is empty (YAML reads a bare `null` as nothing); write a type such as `any`, or `\"null\"` quoted for the null type",
                        ))
                    }
                    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<$decl, A::Error> {
                        let raw = Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))?;
                        #[allow(clippy::redundant_closure_call)]
                        ($build)(raw).map_err(de::Error::custom)
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

impl InputDecl {
    fn of_type(ty: ValueType) -> InputDecl {
        InputDecl {
            ty,
            required: false,
            default: None,
            description: None,
            schema: None,
        }
    }
}

impl OutputDecl {
    fn of_type(ty: ValueType) -> OutputDecl {
        OutputDecl { ty, schema: None }
    }
}

decl_visitor!(
    InputDecl,
    "an input type name or a mapping with `type`, `required`, `default`, `description`, `schema`",
    |raw: RawInput| -> Result<InputDecl, String> {
        let ty = raw.ty.unwrap_or(ValueType::Any);
        let validator = raw.schema.as_ref().map(compile_schema).transpose()?;
        if let Some(default) = &raw.default {
            if !ty.matches(default) {
                return Err(format!(
                    "`default` is {}, but the input is declared `{ty}`",
                    with_article(ValueType::describe(default))
                ));
            }
            if let Some(validator) = &validator
                && let Err(e) = validator.validate(default)
            {
                return Err(format!("`default` does not match `schema`: {e}"));
            }
        }
        Ok(InputDecl {
            ty,
            required: raw.required,
            default: raw.default,
            description: raw.description,
            schema: raw.schema,
        })
    }
);

decl_visitor!(
    OutputDecl,
    "an output type name or a mapping with `type` and `schema`",
    |raw: RawOutput| -> Result<OutputDecl, String> {
        if let Some(schema) = &raw.schema {
            compile_schema(schema)?;
        }
        Ok(OutputDecl {
            ty: raw.ty.unwrap_or(ValueType::Any),
            schema: raw.schema,
        })
    }
);
