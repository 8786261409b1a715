//! Quoting text from a file in a message.

/// Text from a receipt or key file quoted in a message: control characters escaped and long
/// values cut, so a hostile file cannot rewrite the terminal or flood the report.
pub(crate) fn printable(text: &str) -> String {
    const MAX: usize = 120;
    let mut out = String::new();
    for c in text.chars().take(MAX) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if text.chars().count() > MAX {
        out.push('…');
    }
    out
}
