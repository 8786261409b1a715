//! Inputs given as runx gives them: `runx skill DIR --name Ada --count=3`.
//!
//! clap knows `runx skill`'s own flags; an input flag is whatever else starts with `--`. Before
//! clap parses, [`direct_inputs`] rewrites each such flag into the hidden `--direct-input
//! KEY=VALUE`, and `-i KEY VALUE` (runx's two-token form) into `-i KEY=VALUE`, so the rest of
//! the CLI sees inputs one way. As in runx: `--KEY` always takes the next argument as its value
//! (there are no bare boolean input flags), `--KEY=VALUE` splits at the first `=`, and a
//! kebab-case key becomes snake_case (`--thread-title` is `thread_title`). The value is read
//! like `-i`'s: JSON when it is JSON, else a string.
//!
//! A flag of this runx (`--json`, `--inputs`, `--receipt-dir`, `--dry-run`, `--engine`, ...)
//! stays a flag: an input with such a name is given with `-i NAME=VALUE`.

use clap::CommandFactory;
use std::collections::HashSet;
use std::ffi::OsString;

/// The hidden flag the rewrite produces.
pub const DIRECT_INPUT: &str = "--direct-input";

/// The long and short flags of `runx skill` (its own and the global ones), and which of them
/// take a value.
struct Flags {
    known: HashSet<String>,
    with_value: HashSet<String>,
}

fn skill_flags<C: CommandFactory>() -> Option<Flags> {
    let cli = C::command();
    let skill = cli.find_subcommand("skill")?;
    let mut flags = Flags {
        known: HashSet::new(),
        with_value: HashSet::new(),
    };
    for arg in cli.get_arguments().chain(skill.get_arguments()) {
        let takes_value = arg.get_action().takes_values();
        let mut names: Vec<String> = Vec::new();
        // A flag's aliases are its names too: `--receipts` is `--receipt-dir`.
        let longs = arg
            .get_long()
            .into_iter()
            .chain(arg.get_all_aliases().unwrap_or_default());
        for long in longs {
            names.push(format!("--{long}"));
        }
        if let Some(short) = arg.get_short() {
            names.push(format!("-{short}"));
        }
        for name in names {
            if takes_value {
                flags.with_value.insert(name.clone());
            }
            flags.known.insert(name);
        }
    }
    for name in ["--help", "-h", "--version", "-V"] {
        flags.known.insert(name.to_string());
    }
    Some(flags)
}

/// `args` (the whole command line, program name first) with `runx skill`'s input flags
/// rewritten for clap; any other command line unchanged. An input flag with no value left is
/// an error to print.
pub fn direct_inputs<C: CommandFactory>(args: Vec<OsString>) -> Result<Vec<OsString>, String> {
    let Some(flags) = skill_flags::<C>() else {
        return Ok(args);
    };
    let Some(at) = skill_position(&args, &flags) else {
        return Ok(args);
    };
    let mut out: Vec<OsString> = args[..=at].to_vec();
    let mut rest = args[at + 1..].iter().cloned();
    let mut positionals = 0usize;
    while let Some(arg) = rest.next() {
        let Some(text) = arg.to_str().map(str::to_string) else {
            out.push(arg);
            continue;
        };
        if text == "--" {
            out.push(arg);
            out.extend(rest.by_ref());
            break;
        }
        let (name, inline) = match text.split_once('=') {
            Some((n, v)) if n.starts_with('-') => (n.to_string(), Some(v.to_string())),
            _ => (text.clone(), None),
        };
        if flags.known.contains(&name) {
            out.push(arg);
            if inline.is_some() || !flags.with_value.contains(&name) {
                continue;
            }
            let Some(value) = rest.next() else { break };
            // runx's two-token `-i KEY VALUE`: a value without `=` takes the next argument,
            // unless that is a flag of `runx skill` (`-i KEY --json` stays a missing `=`).
            let next_is_flag = rest.clone().next().is_some_and(|a| {
                a.to_str().is_some_and(|a| {
                    flags
                        .known
                        .contains(a.split_once('=').map_or(a, |(n, _)| n))
                })
            });
            if (name == "-i" || name == "--input")
                && value.to_str().is_some_and(|v| !v.contains('='))
                && !next_is_flag
                && let Some(second) = rest.next()
            {
                let mut pair = value;
                pair.push("=");
                pair.push(second);
                out.push(pair);
            } else {
                out.push(value);
            }
            continue;
        }
        if let Some(key) = name.strip_prefix("--") {
            let value = match inline {
                Some(v) => OsString::from(v),
                None => rest
                    .next()
                    .ok_or_else(|| format!("`--{key}` needs a value: `--{key} VALUE`"))?,
            };
            if key.is_empty() {
                return Err("an input flag needs a name: `--NAME VALUE`".to_string());
            }
            let mut pair = OsString::from(format!("{}=", key.replace('-', "_")));
            pair.push(value);
            out.push(OsString::from(DIRECT_INPUT));
            out.push(pair);
            continue;
        }
        if !text.starts_with('-') {
            positionals += 1;
            if positionals == 1 && (text == "inspect" || text == "check" || text == "help") {
                // A subcommand of `runx skill`: its flags are its own.
                out.push(arg);
                out.extend(rest.by_ref());
                break;
            }
        }
        out.push(arg);
    }
    Ok(out)
}

/// Where `skill` is on the command line, when it is the command: the first argument that is
/// neither a global flag nor a global flag's value.
fn skill_position(args: &[OsString], flags: &Flags) -> Option<usize> {
    let mut i = 1;
    while i < args.len() {
        let text = args[i].to_str()?;
        if text == "skill" {
            return Some(i);
        }
        if !text.starts_with('-') {
            return None;
        }
        let name = text.split_once('=').map_or(text, |(n, _)| n);
        if flags.with_value.contains(name) && !text.contains('=') {
            i += 1;
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::direct_inputs;

    fn rewrite(line: &str) -> Result<String, String> {
        let args = line.split(' ').map(Into::into).collect();
        let out = direct_inputs::<crate::Cli>(args)?;
        Ok(out
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" "))
    }

    #[test]
    fn input_flags_become_direct_inputs() {
        assert_eq!(
            rewrite("runx skill pkg --message hi --count=3 --json").unwrap(),
            "runx skill pkg --direct-input message=hi --direct-input count=3 --json"
        );
        // Kebab-case names are snake_case keys; a value may start with a dash or hold `=`.
        assert_eq!(
            rewrite("runx skill pkg --thread-title -3 --q=a=b").unwrap(),
            "runx skill pkg --direct-input thread_title=-3 --direct-input q=a=b"
        );
        // A flag before the package directory is an input too, as in runx.
        assert_eq!(
            rewrite("runx skill --name Ada pkg").unwrap(),
            "runx skill --direct-input name=Ada pkg"
        );
    }

    #[test]
    fn the_flags_of_runx_skill_stay_flags() {
        for line in [
            "runx skill pkg --receipt-dir --odd --json --non-interactive",
            "runx --engine v8 skill pkg --inputs - --dry-run",
            "runx skill pkg -i name=Ada --input-json n=3 --receipt-dir=x",
            "runx skill inspect pkg --json",
            "runx skill check pkg --json",
            "runx harness skill-fixtures --json",
            "runx skill pkg -- --literal",
            // runx's short and alias names of the same flags.
            "runx skill pkg -j -R r -p ops --diagnostics",
            "runx skill pkg --receipts r --credential-profile ops",
            "runx skill pkg --receipts=r -R=r",
        ] {
            assert_eq!(rewrite(line).unwrap(), line);
        }
    }

    #[test]
    fn dash_i_takes_runx_two_token_form() {
        assert_eq!(
            rewrite("runx skill pkg -i severity low runner").unwrap(),
            "runx skill pkg -i severity=low runner"
        );
        assert_eq!(
            rewrite("runx skill pkg --input a=1 runner").unwrap(),
            "runx skill pkg --input a=1 runner"
        );
        // A flag of runx skill after `-i KEY` is not the value.
        assert_eq!(
            rewrite("runx skill pkg -i payload --json").unwrap(),
            "runx skill pkg -i payload --json"
        );
        assert_eq!(
            rewrite("runx skill pkg -i payload --receipt-dir=r").unwrap(),
            "runx skill pkg -i payload --receipt-dir=r"
        );
    }

    #[test]
    fn the_command_line_is_consistent() {
        // clap's own checks (no two flags share a name, short or alias), which a release
        // build leaves out of parsing.
        <crate::Cli as clap::CommandFactory>::command().debug_assert();
    }

    #[test]
    fn an_input_flag_needs_a_value() {
        let e = rewrite("runx skill pkg --message").unwrap_err();
        assert!(e.contains("`--message` needs a value"), "{e}");
        assert!(rewrite("runx skill pkg --=x").is_err());
    }
}
