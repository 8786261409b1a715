//! Tool names, the same on every start and valid wherever MCP names a tool.
//!
//! As in runx, a package's tool is named after the skill (`helpdesk`) and runs the package's
//! chosen runner (`--runner`, else its default, else its only one). This runtime's further
//! tools, one for each other runner, are `SKILL.RUNNER` (runx serves no other runner).
//!
//! MCP asks for names of 1 to 128 characters from `[A-Za-z0-9_.-]`. A skill or runner name is
//! a YAML key and may hold anything, so a name is built from its own package and runner only
//! (never from what else is served, which would rename a tool when a package is added): the
//! names joined by `.`, and, when one needed a character replaced or the whole is too long, a
//! suffix of the SHA-256 of the original names, so `a b` and `a_b` stay two tools.

use sha2::{Digest, Sha256};

/// The longest tool name MCP allows.
pub const MAX_TOOL_NAME: usize = 128;

/// The tool name of runner `runner` of skill `skill`: `skill.runner` when both are made of
/// `[A-Za-z0-9_-]` and the whole fits [`MAX_TOOL_NAME`]; otherwise every other character
/// becomes `_`, the name is shortened to fit, and `-` and 8 hex digits of the SHA-256 of
/// `skill`, a NUL byte and `runner` end it.
pub fn tool_name(skill: &str, runner: &str) -> String {
    let (skill_part, skill_exact) = clean(skill);
    let (runner_part, runner_exact) = clean(runner);
    let plain = format!("{skill_part}.{runner_part}");
    if skill_exact && runner_exact && plain.len() <= MAX_TOOL_NAME {
        return plain;
    }
    let mut hash = Sha256::new();
    hash.update(skill.as_bytes());
    hash.update([0]);
    hash.update(runner.as_bytes());
    shortened(&plain, &hash.finalize())
}

/// The name of a package's own tool, which runs its chosen runner: the skill's name, as runx
/// names it, when it is made of `[A-Za-z0-9_-]` and fits [`MAX_TOOL_NAME`]; otherwise cleaned
/// and shortened as [`tool_name`] does, with the SHA-256 of `skill` alone. It never holds a
/// `.`, so it is never the name of a further tool.
pub fn skill_tool_name(skill: &str) -> String {
    let (part, exact) = clean(skill);
    if exact && part.len() <= MAX_TOOL_NAME {
        return part;
    }
    shortened(&part, &Sha256::digest(skill.as_bytes()))
}

/// `plain` cut to fit with `-` and 8 hex digits of `digest` after it.
fn shortened(plain: &str, digest: &[u8]) -> String {
    let suffix = &hex::encode(digest)[..8];
    // Every character of `plain` is ASCII, so any byte length is a character boundary.
    let keep = plain.len().min(MAX_TOOL_NAME - 1 - suffix.len());
    format!("{}-{suffix}", &plain[..keep])
}

/// Whether `name` is a tool name MCP allows.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME).contains(&name.len()) && name.bytes().all(allowed)
}

/// `name` with every character outside `[A-Za-z0-9_-]` replaced by `_` (empty: `_`), and
/// whether nothing was replaced. `.` is replaced too: it separates the skill from the runner.
fn clean(name: &str) -> (String, bool) {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii() && allowed(c as u8) && c != '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        return ("_".to_string(), false);
    }
    let exact = cleaned == name;
    (cleaned, exact)
}

fn allowed(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_join_with_a_dot() {
        assert_eq!(tool_name("hello", "greet"), "hello.greet");
        assert_eq!(tool_name("hello", "wrong-output"), "hello.wrong-output");
    }

    #[test]
    fn other_characters_are_replaced_and_the_original_hashed() {
        let spaced = tool_name("my skill", "run");
        let underscored = tool_name("my_skill", "run");
        assert_eq!(underscored, "my_skill.run");
        assert!(spaced.starts_with("my_skill.run-"), "{spaced}");
        assert_ne!(spaced, underscored);
        assert!(is_valid_tool_name(&spaced));
        // A dot inside a part would make `a.b` + `c` and `a` + `b.c` one name.
        assert_ne!(tool_name("a.b", "c"), tool_name("a", "b.c"));
        assert!(is_valid_tool_name(&tool_name("", "")));
        assert!(is_valid_tool_name(&tool_name("ünïcode", "😀")));
    }

    #[test]
    fn long_names_are_shortened_and_stay_distinct() {
        let long = "x".repeat(200);
        let a = tool_name(&long, "a");
        let b = tool_name(&long, "b");
        assert_eq!(a.len(), MAX_TOOL_NAME);
        assert!(is_valid_tool_name(&a));
        assert_ne!(a, b);
        // The same inputs give the same name on every start.
        assert_eq!(a, tool_name(&long, "a"));
    }

    #[test]
    fn a_package_tool_is_the_skill_name() {
        assert_eq!(skill_tool_name("helpdesk"), "helpdesk");
        assert_eq!(skill_tool_name("vault-unseal"), "vault-unseal");
        let dotted = skill_tool_name("multi.def ault");
        assert!(dotted.starts_with("multi_def_ault-"), "{dotted}");
        assert!(!dotted.contains('.'));
        assert!(is_valid_tool_name(&dotted));
        assert_ne!(skill_tool_name("a b"), skill_tool_name("a_b"));
        assert_eq!(skill_tool_name(&"x".repeat(300)).len(), MAX_TOOL_NAME);
        assert!(is_valid_tool_name(&skill_tool_name("")));
    }

    #[test]
    fn validity() {
        assert!(is_valid_tool_name("a.b-c_D9"));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name("a b"));
        assert!(!is_valid_tool_name(&"a".repeat(129)));
    }
}
