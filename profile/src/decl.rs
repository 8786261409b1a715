//! Declared inputs and outputs: their types, defaults and JSON Schemas, as read from a profile.
//!
//! A declaration is written short (`name: string`) or long (`name: { type, required, default,
//! description, schema, artifact, packet }`), or refers to a reusable declaration of the
//! profile's `input_definitions` (`name: { definition: NAME }`, the only key then). All are read
//! here, and a long one is checked at load (its default against its type and schema, its schema
//! compiled, its packet schema found) so a broken declaration fails early. Unknown keys are
//! errors naming the key and its line.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::packet::{PacketFinder, PacketRef};
use crate::schema::{Refusal, Schema, too_complex};

/// A declared input.
#[derive(Debug, Clone, PartialEq)]
pub struct InputDecl {
    /// Declared type; `string` when the declaration names none.
    pub ty: ValueType,
    /// Whether the caller must give it (after defaults).
    pub required: bool,
    /// Applied when the caller gives no value; checked against `ty` and `schema` at load.
    pub default: Option<Value>,
    /// What it is for, for people.
    pub description: Option<String>,
    /// JSON Schema for the value (a packet input's packet schema); compiled at load so a broken
    /// schema fails early, and kept compiled with the profile.
    pub schema: Option<Schema>,
    /// `artifact: true`: a value wrapped in an artifact envelope (`{data: ...}`) is unwrapped
    /// before it is checked and passed on.
    pub artifact: bool,
    /// `packet: ID`: where the schema of the packet came from.
    pub packet: Option<PacketRef>,
    /// The `input_definitions` entry this declaration refers to (`{definition: NAME}`).
    pub definition: Option<String>,
}

/// A declared output.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputDecl {
    /// Declared type; `any` when the declaration names none.
    pub ty: ValueType,
    /// JSON Schema for the value (an `enum:` is folded into it), compiled at load.
    pub schema: Option<Schema>,
    /// Whether the result must hold it (`required: false` makes it optional).
    pub required: bool,
    /// What it is for, for people.
    pub description: Option<String>,
    /// `wrap_as`, shown but not acted on (runx does not project artifacts).
    pub wrap_as: Option<String>,
}

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
    /// `null` (a runx extension).
    Null,
    /// Any JSON value (`json`, as runx packages write it).
    Json,
    /// Any JSON value (`any`, a runx extension kept beside `json`).
    Any,
}

const TYPE_NAMES: &str =
    "array, boolean, integer, json, number, object, string (and the runx extensions any, null)";

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
            "json" => ValueType::Json,
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
            ValueType::Json => "json",
            ValueType::Any => "any",
        }
    }

    /// Whether every JSON value has this type.
    pub fn is_any(self) -> bool {
        matches!(self, ValueType::Json | ValueType::Any)
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
            ValueType::Json | ValueType::Any => true,
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

/// Long form of an input declaration, or a `{definition: NAME}` reference.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInput {
    #[serde(rename = "type", default, deserialize_with = "some_type")]
    ty: Option<ValueType>,
    required: Option<bool>,
    // `default: null` is a real default, hence the double option.
    #[serde(default, deserialize_with = "present")]
    default: Option<Value>,
    description: Option<String>,
    schema: Option<Value>,
    artifact: Option<bool>,
    packet: Option<String>,
    definition: Option<String>,
}

impl RawInput {
    /// Whether any key but `definition` is present.
    fn has_declaration_keys(&self) -> bool {
        self.ty.is_some()
            || self.required.is_some()
            || self.default.is_some()
            || self.description.is_some()
            || self.schema.is_some()
            || self.artifact.is_some()
            || self.packet.is_some()
    }
}

/// Keeps an explicitly written `null` as `Some(Value::Null)`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Long form of an output declaration.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOutput {
    #[serde(rename = "type", default, deserialize_with = "some_type")]
    ty: Option<ValueType>,
    schema: Option<Value>,
    description: Option<String>,
    required: Option<bool>,
    #[serde(rename = "enum")]
    one_of: Option<Vec<Value>>,
    wrap_as: Option<String>,
}

const EMPTY_DECLARATION: &str = "the declaration is empty (YAML reads a bare `null` as nothing); write a type such as `json`, or `\"null\"` quoted for the null type";

impl InputDecl {
    fn of_type(ty: ValueType) -> InputDecl {
        InputDecl {
            ty,
            required: false,
            default: None,
            description: None,
            schema: None,
            artifact: false,
            packet: None,
            definition: None,
        }
    }
}

/// What reading input declarations needs besides the YAML: the profile's `input_definitions`
/// (absent while the definitions themselves are read) and its packet schemas.
pub(crate) struct DeclContext<'a> {
    pub(crate) definitions: Option<&'a BTreeMap<String, InputDecl>>,
    pub(crate) packets: &'a PacketFinder,
}

/// Reads a map of input declarations.
pub(crate) struct InputsSeed<'a>(pub(crate) &'a DeclContext<'a>);

impl<'de> DeserializeSeed<'de> for InputsSeed<'_> {
    type Value = BTreeMap<String, InputDecl>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for InputsSeed<'_> {
    type Value = BTreeMap<String, InputDecl>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping from input names to declarations")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(BTreeMap::new())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        while let Some(name) = map.next_key::<String>()? {
            let decl = map.next_value_seed(InputSeed(self.0))?;
            out.insert(name, decl);
        }
        Ok(out)
    }
}

/// Reads one input declaration: a type name, a long form or a definition reference.
struct InputSeed<'a>(&'a DeclContext<'a>);

impl<'de> DeserializeSeed<'de> for InputSeed<'_> {
    type Value = InputDecl;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<InputDecl, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for InputSeed<'_> {
    type Value = InputDecl;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an input type name, a mapping with `type`, `required`, `default`, `description`, `schema`, `artifact`, `packet`, or `{definition: NAME}`")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<InputDecl, E> {
        let ty = ValueType::from_name(v).ok_or_else(|| unknown_type::<E>(v))?;
        Ok(InputDecl::of_type(ty))
    }

    fn visit_unit<E: de::Error>(self) -> Result<InputDecl, E> {
        Err(E::custom(EMPTY_DECLARATION))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<InputDecl, A::Error> {
        let raw = RawInput::deserialize(de::value::MapAccessDeserializer::new(map))?;
        build_input(raw, self.0).map_err(de::Error::custom)
    }
}

fn build_input(mut raw: RawInput, ctx: &DeclContext<'_>) -> Result<InputDecl, String> {
    if let Some(name) = raw.definition.take() {
        let Some(definitions) = ctx.definitions else {
            return Err(format!(
                "`definition: {name}` inside `input_definitions`; a definition declares the input itself"
            ));
        };
        if raw.has_declaration_keys() {
            return Err(format!(
                "`definition: {name}` must be the only key of the declaration; move the other keys into `input_definitions.{name}` (a definition is used as written, never merged)"
            ));
        }
        let Some(found) = definitions.get(&name) else {
            let known: Vec<&str> = definitions.keys().map(String::as_str).collect();
            return Err(format!(
                "`definition` names `{name}`, which `input_definitions` does not declare (declared: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ));
        };
        return Ok(InputDecl {
            definition: Some(name),
            ..found.clone()
        });
    }
    let ty = raw.ty.unwrap_or(ValueType::String);
    let mut packet = None;
    if let Some(id) = raw.packet.take() {
        if id.trim().is_empty() {
            return Err("`packet` is empty; name the packet id".to_string());
        }
        if ty != ValueType::Json {
            return Err(format!(
                "`packet: {id}` needs `type: json` (the packet's schema decides the shape), but the input is declared `{ty}`"
            ));
        }
        if raw.schema.is_some() {
            return Err(format!(
                "`packet: {id}` and `schema` are both given; the packet's schema is the input's schema, remove `schema`"
            ));
        }
        if raw.default.is_some() {
            return Err(format!(
                "`packet: {id}` and `default` are both given; a packet input has no default"
            ));
        }
        let (found, schema) = ctx.packets.find(&id)?;
        raw.schema = Some(schema);
        packet = Some(found);
    }
    let schema = raw.schema.take().map(Schema::compile).transpose()?;
    if let Some(default) = &raw.default {
        if !ty.matches(default) {
            return Err(format!(
                "`default` is {}, but the input is declared `{ty}`",
                with_article(ValueType::describe(default))
            ));
        }
        match schema.as_ref().map(|s| s.check(default)) {
            Some(Err(Refusal::Mismatch(e))) => {
                return Err(format!("`default` does not match `schema`: {e}"));
            }
            Some(Err(Refusal::TooComplex { steps })) => {
                return Err(format!("`default` {}", too_complex(steps)));
            }
            _ => {}
        }
    }
    Ok(InputDecl {
        ty,
        required: raw.required.unwrap_or(false),
        default: raw.default,
        description: raw.description,
        schema,
        artifact: raw.artifact.unwrap_or(false),
        packet,
        definition: None,
    })
}

impl OutputDecl {
    fn of_type(ty: ValueType) -> OutputDecl {
        OutputDecl {
            ty,
            schema: None,
            required: true,
            description: None,
            wrap_as: None,
        }
    }
}

fn build_output(raw: RawOutput) -> Result<OutputDecl, String> {
    let mut schema = raw.schema;
    if let Some(values) = raw.one_of {
        match &mut schema {
            None => schema = Some(serde_json::json!({ "enum": values })),
            Some(Value::Object(m)) if !m.contains_key("enum") => {
                m.insert("enum".to_string(), Value::Array(values));
            }
            Some(_) => {
                return Err(
                    "`enum` is given both beside `schema` and inside it; keep one".to_string(),
                );
            }
        }
    }
    let schema = schema.map(Schema::compile).transpose()?;
    Ok(OutputDecl {
        ty: raw.ty.unwrap_or(ValueType::Any),
        schema,
        required: raw.required.unwrap_or(true),
        description: raw.description,
        wrap_as: raw.wrap_as,
    })
}

impl<'de> Deserialize<'de> for OutputDecl {
    /// Accepts `name: <type>` or `name: { type, schema, description, required, enum, wrap_as }`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OutputDecl;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an output type name or a mapping with `type`, `schema`, `description`, `required`, `enum`, `wrap_as`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<OutputDecl, E> {
                let ty = ValueType::from_name(v).ok_or_else(|| unknown_type::<E>(v))?;
                Ok(OutputDecl::of_type(ty))
            }
            fn visit_unit<E: de::Error>(self) -> Result<OutputDecl, E> {
                Err(E::custom(EMPTY_DECLARATION))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<OutputDecl, A::Error> {
                let raw = RawOutput::deserialize(de::value::MapAccessDeserializer::new(map))?;
                build_output(raw).map_err(de::Error::custom)
            }
        }
        d.deserialize_any(V)
    }
}
