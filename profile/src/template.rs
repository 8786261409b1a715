//! Argument templates of cli-tool runners: the one reading of `{{...}}`, shared by the load-time
//! check (which reports templates naming undeclared inputs) and the run-time expansion.
//!
//! `{{name}}` and `{{ name }}` name an input (runx packages write them so), `{{input.name}}` does
//! too, `{{input}}` is the whole input object and `{{env.NAME}}` a declared environment name (or
//! `RUNX_CWD`, the workspace). Input names may contain dots (`thread.title`), so anything that is
//! not `input`, `input.X` or `env.X` is an input name.

use crate::decl::InputDecl;
use std::collections::BTreeMap;

/// One part of an argument template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Literal text.
    Text(&'a str),
    /// The value of one input, by name.
    Input(&'a str),
    /// The whole input object as compact JSON.
    AllInputs,
    /// The value of an environment name.
    Env(&'a str),
}

/// Splits `arg` into literal text and placeholders; an unclosed or empty `{{` is an error whose
/// message names the argument.
pub fn pieces(arg: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = arg;
    while let Some(start) = rest.find("{{") {
        if start > 0 {
            out.push(Piece::Text(&rest[..start]));
        }
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return Err(format!("argument `{arg}` has an unclosed `{{{{`"));
        };
        let key = after[..end].trim();
        let piece = if key == "input" {
            Piece::AllInputs
        } else if let Some(name) = key.strip_prefix("input.") {
            Piece::Input(name)
        } else if let Some(name) = key.strip_prefix("env.") {
            Piece::Env(name)
        } else {
            Piece::Input(key)
        };
        if matches!(piece, Piece::Input("") | Piece::Env("")) {
            return Err(format!(
                "argument `{arg}` has an empty placeholder; write `{{{{name}}}}`, `{{{{input.name}}}}`, `{{{{input}}}}` or `{{{{env.NAME}}}}`"
            ));
        }
        out.push(piece);
        rest = &after[end + 2..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

/// What loading notes of a cli-tool's templates, as `(key, message, fails every run)`:
/// a template that cannot be read or names an environment name the runner does not declare
/// (every run fails); one that names an input `inputs:` does not declare (a run must give it);
/// a `cwd:` template other than exactly `{{env.RUNX_CWD}}` (every run fails).
pub(crate) fn problems(
    args: &[String],
    cwd: Option<&str>,
    inputs: &BTreeMap<String, InputDecl>,
    declares_env: impl Fn(&str) -> bool,
) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        let key = format!("args[{i}]");
        let found = match pieces(arg) {
            Ok(p) => p,
            Err(e) => {
                out.push((key, format!("{e}; every run will fail"), true));
                continue;
            }
        };
        for piece in found {
            match piece {
                Piece::Input(name) if !inputs.contains_key(name) => out.push((
                    key.clone(),
                    format!(
                        "`{arg}` names input `{name}`, which `inputs:` does not declare; a run must give it (declare it to give it a type or a default)"
                    ),
                    false,
                )),
                Piece::Env(name) if name != "RUNX_CWD" && !declares_env(name) => {
                    out.push((
                        key.clone(),
                        format!(
                            "`{arg}` names environment variable `{name}`, which the runner does not declare; every run will fail"
                        ),
                        true,
                    ))
                }
                _ => {}
            }
        }
    }
    if let Some(cwd) = cwd.filter(|c| c.contains("{{") && *c != WORKSPACE_CWD) {
        out.push((
            "cwd".to_string(),
            format!(
                "`{cwd}` is a template; `cwd:` is a path of the package or exactly `{WORKSPACE_CWD}` (the workspace), so every run will fail"
            ),
            true,
        ));
    }
    out
}

/// The one template a `cwd:` may be: the workspace.
const WORKSPACE_CWD: &str = "{{env.RUNX_CWD}}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_is_read() {
        assert_eq!(
            pieces("--to={{name}}/{{ name }}/{{input.thread.title}}").expect("valid"),
            vec![
                Piece::Text("--to="),
                Piece::Input("name"),
                Piece::Text("/"),
                Piece::Input("name"),
                Piece::Text("/"),
                Piece::Input("thread.title"),
            ]
        );
        assert_eq!(
            pieces("{{input}}{{env.REGION}}").expect("valid"),
            vec![Piece::AllInputs, Piece::Env("REGION")]
        );
        assert_eq!(pieces("plain").expect("valid"), vec![Piece::Text("plain")]);
        assert_eq!(pieces("").expect("valid"), vec![]);
    }

    #[test]
    fn broken_templates_are_errors() {
        assert!(pieces("{{name").expect_err("unclosed").contains("unclosed"));
        assert!(pieces("{{ }}").expect_err("empty").contains("empty"));
        assert!(pieces("{{env.}}").expect_err("empty").contains("empty"));
    }
}
