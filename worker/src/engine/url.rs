//! `Runx.parseUrl`, the one global runx's own worker adds to the ECMAScript builtins, here on
//! both engines so that runx's packages that call it run unchanged (`google-search-console`,
//! `organic-growth`, `operator-inbox`).
//!
//! runx parses with the `url` crate (the WHATWG URL standard) and answers a plain object of
//! four strings: `href`, `origin`, `protocol` (the scheme and a colon) and `hostname` (empty
//! for a URL without a host). This worker uses the same crate, so the four strings are runx's;
//! a text that is not an absolute URL throws a `TypeError` with runx's message.
//!
//! The engine hands the prelude a native that calls [`parse`]; the prelude converts the
//! argument with `ToString` (a symbol throws, as in runx), makes lone surrogates U+FFFD, refuses
//! a text longer than [`MAX_UNITS`], and builds the object. Nothing else reaches the native.

/// The longest text parsed, in UTF-16 code units: the host copies the text out of the engine's
/// heap and the `url` crate writes an `href` up to three times its UTF-8 length, all outside
/// the heap limit, so the copy is bounded. runx has no bound; no URL a package parses is near it.
pub(crate) const MAX_UNITS: usize = 4 * 1024 * 1024;

/// What the native answers the prelude: a newline, then the four strings of [`parse`] joined
/// by newlines (none holds one: the `url` crate removes newlines and percent-encodes control
/// characters, and a host is ASCII), or the message of the `TypeError`, which never starts with
/// a newline. One string, not an array: an array made here would be filled with `[[Set]]`,
/// which a setter module code put on `Array.prototype` would intercept.
pub(crate) fn answer(text: &str) -> String {
    match parse(text) {
        Ok(parts) => {
            let mut joined = String::new();
            for part in parts {
                joined.push('\n');
                joined.push_str(&part);
            }
            joined
        }
        Err(message) => message,
    }
}

/// The four strings of an absolute URL, in the order the prelude reads them (`href`, `origin`,
/// `protocol`, `hostname`), or the message of the `TypeError` to throw.
pub(crate) fn parse(text: &str) -> Result<[String; 4], String> {
    if text.len() > 3 * MAX_UNITS {
        return Err(format!(
            "Runx.parseUrl takes a text of at most {MAX_UNITS} characters"
        ));
    }
    let url = url::Url::parse(text)
        .map_err(|e| format!("Runx.parseUrl requires an absolute URL: {e}"))?;
    let hostname = url.host().map_or_else(String::new, |host| host.to_string());
    Ok([
        url.as_str().to_owned(),
        url.origin().ascii_serialization(),
        format!("{}:", url.scheme()),
        hostname,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absolute_url_gives_runx_four_strings() {
        assert_eq!(
            parse("https://Example.com:8443/a?q=1#fragment").unwrap(),
            [
                "https://example.com:8443/a?q=1#fragment",
                "https://example.com:8443",
                "https:",
                "example.com",
            ]
        );
        assert_eq!(
            parse("sc-domain:example.com").unwrap(),
            ["sc-domain:example.com", "null", "sc-domain:", ""]
        );
        assert_eq!(
            parse("http://[::1]:80/x").unwrap(),
            ["http://[::1]/x", "http://[::1]", "http:", "[::1]"]
        );
        assert_eq!(
            parse("https://bücher.example/ä").unwrap()[0],
            "https://xn--bcher-kva.example/%C3%A4"
        );
    }

    #[test]
    fn the_answer_is_one_string_the_prelude_can_cut() {
        assert_eq!(
            answer("https://a.example/x?y#z"),
            "\nhttps://a.example/x?y#z\nhttps://a.example\nhttps:\na.example"
        );
        // Newlines and tabs in the text are removed by the parser; control characters are
        // percent-encoded: no part ever holds a newline.
        assert_eq!(answer("https://a.exa\nmple/\u{1}x").split('\n').count(), 5);
        assert!(!answer("nope").starts_with('\n'));
    }

    #[test]
    fn a_relative_or_empty_text_is_refused_with_runx_message() {
        for text in ["not an absolute URL", "", "/a/b", "http://"] {
            let message = parse(text).unwrap_err();
            assert!(
                message.starts_with("Runx.parseUrl requires an absolute URL: "),
                "{text}: {message}"
            );
        }
    }

    #[test]
    fn a_text_over_the_bound_is_refused_before_it_is_parsed() {
        let long = format!("https://example.com/{}", "a".repeat(3 * MAX_UNITS));
        assert!(parse(&long).unwrap_err().contains("at most"));
    }
}
