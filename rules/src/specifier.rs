//! What a module specifier may name.
//!
//! One function, [`resolve`], decides it. The host applies it when it collects a bundle from a
//! skill directory, and the worker applies it again when the engine resolves an import, so the
//! two can never disagree.

/// Why a specifier was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("import of `{specifier}` from `{base}` rejected: {reason}")]
pub struct ImportRejected {
    /// The specifier as written in the importing module.
    pub specifier: String,
    /// The bundle path of the importing module.
    pub base: String,
    /// Why it may not be imported.
    pub reason: &'static str,
}

/// Resolves `specifier`, written in the module at bundle path `base`, to a bundle path.
///
/// Bundle paths are relative, `/`-separated, and never leave the bundle root. Only relative
/// specifiers (`./x.mjs`, `../y.js`) naming `.mjs` or `.js` files are allowed: bare names
/// (`lodash`), URLs and `node:` specifiers, absolute paths and anything that climbs out of the
/// bundle root are rejected.
pub fn resolve_import(base: &str, specifier: &str) -> Result<String, ImportRejected> {
    let reject = |reason| ImportRejected {
        specifier: specifier.to_string(),
        base: base.to_string(),
        reason,
    };
    if specifier.starts_with('/') {
        return Err(reject(
            "absolute paths are not importable; use a relative path",
        ));
    }
    if specifier.contains(':') {
        return Err(reject(
            "URL and `node:` specifiers are not importable; the worker has no host modules",
        ));
    }
    if !(specifier.starts_with("./") || specifier.starts_with("../")) {
        return Err(reject(
            "bare module names are not importable; bundle the code inside the skill and import it with a relative path",
        ));
    }
    if specifier.contains('\\') || specifier.contains('\0') {
        return Err(reject("backslashes and NUL are not allowed in specifiers"));
    }
    if !(specifier.ends_with(".mjs") || specifier.ends_with(".js")) {
        return Err(reject("only `.mjs` and `.js` files are importable"));
    }
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop(); // the importing file's own name
    for part in specifier.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(reject("the path leaves the skill directory"));
                }
            }
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

/// Checks that a module path given by a profile (the entry) is a portable relative path.
pub fn check_module_entry(path: &str) -> Result<String, ImportRejected> {
    let spec = if path.starts_with('/') || path.starts_with("./") || path.starts_with("../") {
        path.to_string()
    } else {
        format!("./{path}")
    };
    resolve_import("", &spec).map_err(|mut e| {
        e.specifier = path.to_string();
        e.base = "X.yaml".to_string();
        e
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_imports_resolve_inside_the_bundle() {
        assert_eq!(resolve_import("main.mjs", "./lib.mjs").unwrap(), "lib.mjs");
        assert_eq!(
            resolve_import("src/a/main.mjs", "../b/x.js").unwrap(),
            "src/b/x.js"
        );
        assert_eq!(
            resolve_import("src/main.mjs", "./././y.mjs").unwrap(),
            "src/y.mjs"
        );
    }

    #[test]
    fn escapes_and_host_specifiers_are_rejected() {
        for s in [
            "node:fs",
            "/etc/passwd",
            "../outside.mjs",
            "lodash",
            "https://x.test/a.mjs",
            "./a.json",
            "./a\\b.mjs",
        ] {
            assert!(
                resolve_import("main.mjs", s).is_err(),
                "{s} should be rejected"
            );
        }
        assert!(resolve_import("a/main.mjs", "../../x.mjs").is_err());
    }

    #[test]
    fn entries_are_checked_like_imports() {
        assert_eq!(check_module_entry("src/main.mjs").unwrap(), "src/main.mjs");
        assert!(check_module_entry("/abs.mjs").is_err());
        assert!(check_module_entry("../up.mjs").is_err());
        assert!(check_module_entry("main.ts").is_err());
    }
}
