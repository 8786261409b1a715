//! What a module threw (or rejected a promise with), in the same words on every engine.
//!
//! An `Error` object is reported by its engine's own text (its stack, which the engines write
//! differently); every other value is named for what it is, so that `throw null` never reads
//! like a message and `throw 1` reads the same on QuickJS and V8. The text never decides a
//! failure's code: an engine decides a limit from its own state (see `quickjs/budget.rs` and
//! `v8/buffers.rs`), never from what a module could have written itself.

/// A thrown value, as an engine read it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Thrown {
    /// An `Error` object (a native error: it has the `[[ErrorData]]` slot): the engine's text.
    Error(String),
    /// A string: its text is the message.
    String(String),
    Null,
    Undefined,
    Boolean(bool),
    Number(f64),
    /// A BigInt, by its decimal digits.
    BigInt(String),
    /// A symbol, by its description.
    Symbol(Option<String>),
    Function,
    /// Any other object, by its JSON text when it has one.
    Object(Option<String>),
    /// Nothing the engine could read (execution was terminated, or no exception was pending).
    Nothing,
}

impl Thrown {
    /// The failure message for this value; empty only for [`Thrown::Nothing`].
    pub(crate) fn text(self) -> String {
        let what = match self {
            Thrown::Error(text) => return text,
            Thrown::String(text) if !text.is_empty() => return text,
            Thrown::Nothing => return String::new(),
            Thrown::String(_) => "an empty string".to_string(),
            Thrown::Null => "null".to_string(),
            Thrown::Undefined => "undefined".to_string(),
            Thrown::Boolean(b) => format!("the boolean {b}"),
            Thrown::Number(n) => format!("the number {}", number_text(n)),
            Thrown::BigInt(digits) => format!("the bigint {digits}n"),
            Thrown::Symbol(description) => {
                format!("a symbol, Symbol({})", description.unwrap_or_default())
            }
            Thrown::Function => "a function".to_string(),
            Thrown::Object(Some(json)) => format!("an object, {json}"),
            Thrown::Object(None) => "an object with no JSON form".to_string(),
        };
        format!("the module threw {what}")
    }
}

/// A number as `String(n)` writes it (the shortest text that reads back), with the sign of a
/// negative zero kept: one text on every engine, whatever each engine's own number printing.
fn number_text(n: f64) -> String {
    if n == 0.0 && n.is_sign_negative() {
        return "-0".to_string();
    }
    ryu_js::Buffer::new().format(n).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_named_for_what_they_are() {
        let cases = [
            (Thrown::Null, "the module threw null"),
            (Thrown::Undefined, "the module threw undefined"),
            (Thrown::Boolean(false), "the module threw the boolean false"),
            (Thrown::Number(1.0), "the module threw the number 1"),
            (Thrown::Number(-0.0), "the module threw the number -0"),
            (Thrown::Number(f64::NAN), "the module threw the number NaN"),
            (
                Thrown::Number(f64::NEG_INFINITY),
                "the module threw the number -Infinity",
            ),
            (
                Thrown::Number(2f64.powi(-24)),
                "the module threw the number 5.960464477539063e-8",
            ),
            (Thrown::Number(1e21), "the module threw the number 1e+21"),
            (
                Thrown::BigInt("-12".into()),
                "the module threw the bigint -12n",
            ),
            (
                Thrown::Symbol(Some("s".into())),
                "the module threw a symbol, Symbol(s)",
            ),
            (Thrown::Symbol(None), "the module threw a symbol, Symbol()"),
            (Thrown::Function, "the module threw a function"),
            (
                Thrown::Object(Some(r#"{"a":1}"#.into())),
                r#"the module threw an object, {"a":1}"#,
            ),
            (
                Thrown::Object(None),
                "the module threw an object with no JSON form",
            ),
            (
                Thrown::String(String::new()),
                "the module threw an empty string",
            ),
            (Thrown::String("null".into()), "null"),
            (Thrown::Error("Error: x".into()), "Error: x"),
            (Thrown::Nothing, ""),
        ];
        for (value, text) in cases {
            assert_eq!(value.clone().text(), text, "{value:?}");
        }
    }
}
