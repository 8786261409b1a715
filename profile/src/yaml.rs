//! The nesting guard for YAML documents runx reads (`X.yaml`, fixture files).
//!
//! YAML parsers keep per-level state and revisit it for every token, so parse time grows with
//! the square of the nesting depth: a 1 MB profile of nested brackets, well under the size cap,
//! ran for ten minutes. [`check_depth`] measures the nesting of the text in one linear pass,
//! before any parser sees it, and refuses anything deeper than [`YAML_DEPTH`].
//!
//! The measure is conservative: it counts every flow bracket that opens a collection plus every
//! indentation level and every `- `/`? ` indicator of block structure, skipping quoted scalars,
//! comments and block scalars (`|`, `>`), whose brackets are text. A real profile is a few
//! levels deep; the limit is far above that and far below where parsing slows down.

use crate::limits::YAML_DEPTH;

/// Where a document nests deeper than the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the document nests deeper than {} levels (limit `{}`) at line {line} column {column}", YAML_DEPTH.max, YAML_DEPTH.name)]
pub struct TooDeep {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

/// Refuses `text` when it nests deeper than [`YAML_DEPTH`]. Linear in the length of `text`.
pub fn check_depth(text: &str) -> Result<(), TooDeep> {
    let max = usize::try_from(YAML_DEPTH.max).unwrap_or(usize::MAX);
    let mut scan = Scan::default();
    for (n, line) in text.split('\n').enumerate() {
        scan.line(line.as_bytes(), max).map_err(|column| TooDeep {
            line: n + 1,
            column: column + 1,
        })?;
    }
    Ok(())
}

/// The scanner's state between lines.
#[derive(Default)]
struct Scan {
    /// Open flow collections (`[`, `{`).
    flow: usize,
    /// Indentation columns of the open block levels, increasing.
    blocks: Vec<usize>,
    /// Inside a quoted scalar that continues on the next line.
    quote: Option<u8>,
    /// Inside a block scalar whose parent line had this indentation.
    block_scalar: Option<usize>,
}

impl Scan {
    /// Scans one line; `Err(column)` where the depth passes `max`.
    fn line(&mut self, line: &[u8], max: usize) -> Result<(), usize> {
        let indent = line.iter().take_while(|&&b| b == b' ').count();
        let blank = line[indent..].iter().all(|b| b.is_ascii_whitespace());
        if let Some(parent) = self.block_scalar {
            if blank || indent > parent {
                return Ok(());
            }
            self.block_scalar = None;
        }
        let mut i = 0;
        if let Some(q) = self.quote {
            match close_quote(line, 0, q) {
                Some(end) => {
                    self.quote = None;
                    i = end;
                }
                None => return Ok(()),
            }
        } else if self.flow == 0 {
            if blank || line[indent] == b'#' {
                return Ok(());
            }
            if indent == 0 && (line.starts_with(b"---") || line.starts_with(b"...")) {
                self.blocks.clear();
                return Ok(());
            }
            while self.blocks.last().is_some_and(|&top| top >= indent) {
                self.blocks.pop();
            }
            self.blocks.push(indent);
            i = indent;
            // Compact nested sequences and complex keys (`- - x`, `? x`) nest on one line.
            while i + 1 < line.len() && matches!(line[i], b'-' | b'?') && line[i + 1] == b' ' {
                i += 2;
                while i < line.len() && line[i] == b' ' {
                    i += 1;
                }
                self.blocks.push(i);
            }
            if self.blocks.len() > max {
                return Err(i.min(line.len().saturating_sub(1)));
            }
        }
        self.rest(line, i, indent, max)
    }

    /// Flow brackets, quotes, comments and block-scalar headers from byte `i` on.
    fn rest(&mut self, line: &[u8], mut i: usize, indent: usize, max: usize) -> Result<(), usize> {
        // Whether a token may start here: at the start, after blanks, or after a flow
        // indicator. Quotes and (outside flow collections) brackets only open a scalar or a
        // collection at a token start; elsewhere they are text of a plain scalar.
        let mut token_start = true;
        while i < line.len() {
            let b = line[i];
            match b {
                b'#' if token_start => return Ok(()),
                b'\'' | b'"' if token_start => match close_quote(line, i + 1, b) {
                    Some(end) => {
                        i = end;
                        token_start = false;
                        continue;
                    }
                    None => {
                        self.quote = Some(b);
                        return Ok(());
                    }
                },
                b'[' | b'{' if token_start || self.flow > 0 => {
                    self.flow += 1;
                    if self.flow + self.blocks.len() > max {
                        return Err(i);
                    }
                    token_start = true;
                }
                b']' | b'}' if self.flow > 0 => {
                    self.flow -= 1;
                    token_start = false;
                }
                b',' if self.flow > 0 => token_start = true,
                b'|' | b'>' if token_start && self.flow == 0 && is_block_header(&line[i + 1..]) => {
                    self.block_scalar = Some(indent);
                    return Ok(());
                }
                b' ' | b'\t' | b'\r' => token_start = true,
                b':' => token_start = self.flow > 0,
                _ => token_start = false,
            }
            i += 1;
        }
        Ok(())
    }
}

/// The index just past the quote that closes a scalar opened by `q`, searching from `from`;
/// `None` when it continues past the line. `''` inside single quotes and `\` escapes inside
/// double quotes do not close it.
fn close_quote(line: &[u8], from: usize, q: u8) -> Option<usize> {
    let mut i = from;
    while i < line.len() {
        match line[i] {
            b'\\' if q == b'"' => i += 2,
            c if c == q => {
                if q == b'\'' && line.get(i + 1) == Some(&b'\'') {
                    i += 2;
                } else {
                    return Some(i + 1);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// Whether what follows `|` or `>` is a block scalar header: indicators (`-`, `+`, a digit),
/// then only blanks or a comment.
fn is_block_header(after: &[u8]) -> bool {
    let rest = after
        .iter()
        .position(|b| !matches!(b, b'-' | b'+' | b'1'..=b'9'))
        .map_or(&after[after.len()..], |p| &after[p..]);
    let rest = rest.trim_ascii_start();
    rest.is_empty() || rest[0] == b'#'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(text: &str) -> bool {
        check_depth(text).is_ok()
    }

    #[test]
    fn real_profiles_pass() {
        for dir in ["hello", "tool", "archive", "imports", "hostile"] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../skill-fixtures")
                .join(dir)
                .join("X.yaml");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(depth_ok(&text), "{}", path.display());
        }
    }

    #[test]
    fn deep_flow_and_block_nesting_are_refused() {
        let deep = format!("x: {}{}\n", "[".repeat(70), "]".repeat(70));
        let e = check_depth(&deep).unwrap_err();
        assert_eq!(e.line, 1);
        let fine = format!("x: {}{}\n", "[".repeat(40), "]".repeat(40));
        assert!(depth_ok(&fine));
        let mut block = String::new();
        for level in 0..70 {
            block.push_str(&" ".repeat(level));
            block.push_str("k:\n");
        }
        assert_eq!(check_depth(&block).unwrap_err().line, 65);
        let compact = format!("{}x\n", "- ".repeat(70));
        assert!(check_depth(&compact).is_err());
        // Nesting spread over lines inside a flow collection still counts.
        let spread = format!("x:\n{}\n", "[\n".repeat(70));
        assert!(check_depth(&spread).is_err());
    }

    #[test]
    fn brackets_that_are_text_do_not_count() {
        let many = "[".repeat(200);
        for text in [
            format!("a: '{many}'\n"),
            format!("a: \"{many}\"\n"),
            format!("a: \"x\\\" {many}\"\n"),
            format!("a: 'it''s {many}'\n"),
            format!("a: plain{many}\n"),
            format!("a: b # {many}\n"),
            format!("a: |\n  {many}\n  {many}\nb: 1\n"),
            format!("a: >-\n    {many}\n\n    {many}\nb: 1\n"),
            format!("a: \"multi\n {many}\n end\"\nb: 1\n"),
        ] {
            assert!(depth_ok(&text), "{text}");
        }
        // After the text, real nesting is still seen.
        let after = format!("a: '{many}'\nb: {}\n", "[".repeat(70));
        assert_eq!(check_depth(&after).unwrap_err().line, 2);
    }

    #[test]
    fn linear_in_size() {
        // A megabyte of brackets is refused at the 65th; a megabyte of flat text is read once.
        let text = format!("x: {}", "[".repeat(1 << 20));
        assert_eq!(check_depth(&text).unwrap_err().column, 3 + 64);
        let flat = "k: v\n".repeat(200_000);
        assert!(depth_ok(&flat));
    }
}
