//! Property tests of the profile parser: generated profiles parse to what they say; damaged
//! ones never panic or hang. `PROPTEST_CASES=1000000 cargo test --release -p runx-runtime
//! proptest_` is the long run.

use super::*;
use crate::tests::parse_str;
use proptest::prelude::*;
use std::time::Duration;

/// One generated runner.
#[derive(Clone, Debug)]
struct GenRunner {
    name: String,
    javascript: bool,
    timeout: u64,
    inputs: Vec<(String, &'static str, bool)>,
    env: Vec<String>,
    flow: bool,
}

fn ident() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,8}".prop_filter("a YAML keyword or a reserved name", |s| {
        !matches!(
            s.as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n" | "runx_page"
        )
    })
}

fn runner() -> impl Strategy<Value = GenRunner> {
    (
        ident(),
        any::<bool>(),
        1u64..=30,
        prop::collection::vec(
            (
                ident(),
                prop_oneof![
                    Just("string"),
                    Just("integer"),
                    Just("number"),
                    Just("boolean"),
                    Just("object"),
                    Just("array"),
                ],
                any::<bool>(),
            ),
            0..4,
        ),
        prop::collection::vec("[A-Z][A-Z0-9_]{0,6}", 0..3),
        any::<bool>(),
    )
        .prop_map(|(name, javascript, timeout, inputs, env, flow)| GenRunner {
            name,
            javascript,
            timeout,
            inputs,
            env,
            flow,
        })
}

fn render(skill: &str, runners: &[GenRunner]) -> String {
    let mut out = format!("skill: {skill}\nversion: \"1.0\"\nrunners:\n");
    for r in runners {
        let kind = if r.javascript {
            "type: javascript, module: src/main.mjs".to_string()
        } else {
            "type: cli-tool, command: ./bin/tool".to_string()
        };
        let inputs: Vec<String> = r
            .inputs
            .iter()
            .map(|(n, t, req)| format!("{n}: {{ type: {t}, required: {req} }}"))
            .collect();
        let env = r.env.join(", ");
        if r.flow {
            out.push_str(&format!(
                "  {}: {{ {kind}, timeout_seconds: {}, inputs: {{ {} }}, environment: {{ optional: [{env}] }} }}\n",
                r.name,
                r.timeout,
                inputs.join(", ")
            ));
        } else {
            out.push_str(&format!("  {}:\n", r.name));
            for kv in kind.split(", ") {
                out.push_str(&format!("    {kv}\n"));
            }
            out.push_str(&format!("    timeout_seconds: {}\n", r.timeout));
            out.push_str(&format!("    environment:\n      optional: [{env}]\n"));
            if !inputs.is_empty() {
                out.push_str("    inputs:\n");
                for i in &inputs {
                    out.push_str(&format!("      {i}\n"));
                }
            }
        }
    }
    out
}

/// Distinct runner names, distinct input and environment names within a runner.
fn distinct(runners: Vec<GenRunner>) -> Vec<GenRunner> {
    let mut seen = std::collections::BTreeSet::new();
    runners
        .into_iter()
        .filter(|r| seen.insert(r.name.clone()))
        .map(|mut r| {
            let mut names = std::collections::BTreeSet::new();
            r.inputs.retain(|(n, _, _)| names.insert(n.clone()));
            let mut env = std::collections::BTreeSet::new();
            r.env
                .retain(|n| env.insert(n.clone()) && !n.starts_with("RUNX_"));
            r
        })
        .collect()
}

/// A YAML-ish mutation of `text`: bytes removed, replaced or inserted where `at` points.
fn mutate(text: &str, edits: &[(usize, u8, u8)]) -> String {
    const ALPHABET: &[u8] = b"[]{}:,-?|>'\"#&*!%@` \n\t\\0aZ9.";
    let mut bytes = text.as_bytes().to_vec();
    for &(at, op, pick) in edits {
        if bytes.is_empty() {
            break;
        }
        let at = at % bytes.len();
        let c = ALPHABET[pick as usize % ALPHABET.len()];
        match op % 4 {
            0 => {
                bytes.remove(at);
            }
            1 => bytes[at] = c,
            2 => bytes.insert(at, c),
            _ => {
                let end = (at + usize::from(pick % 16)).min(bytes.len());
                let slice = bytes[at..end].to_vec();
                bytes.splice(at..at, slice);
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

proptest! {
    #![proptest_config(crate::proptest_config(256))]

    #[test]
    fn proptest_generated_profiles_parse_to_what_they_say(
        skill in ident(),
        runners in prop::collection::vec(runner(), 1..4),
    ) {
        let runners = distinct(runners);
        let text = render(&skill, &runners);
        let p = parse_str(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&p.skill, &skill);
        prop_assert_eq!(p.runners.len(), runners.len());
        for g in &runners {
            let r = &p.runners[&g.name];
            prop_assert_eq!(r.timeout, Duration::from_secs(g.timeout));
            prop_assert_eq!(matches!(r.kind, RunnerKind::Javascript(_)), g.javascript);
            prop_assert_eq!(r.inputs.len(), g.inputs.len());
            for (n, _, req) in &g.inputs {
                prop_assert_eq!(r.inputs[n].required, *req);
            }
            prop_assert_eq!(&r.environment.optional, &g.env);
        }
    }

    #[test]
    fn proptest_damaged_profiles_never_panic(
        skill in ident(),
        runners in prop::collection::vec(runner(), 1..3),
        edits in prop::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..8),
    ) {
        let text = mutate(&render(&skill, &distinct(runners)), &edits);
        // Ok or a located error; never a panic.
        if let Err(ProfileError::Invalid { line: Some(line), .. }) = parse_str(&text) {
            prop_assert!(line >= 1);
        }
    }

    #[test]
    fn proptest_token_soup_never_panics(
        tokens in prop::collection::vec(
            prop_oneof![
                Just("["), Just("]"), Just("{"), Just("}"), Just(": "), Just(", "),
                Just("- "), Just("? "), Just("\n"), Just("\n  "), Just("'"), Just("\""),
                Just("# c"), Just("|"), Just(">-"), Just("&a "), Just("*a"), Just("!!str "),
                Just("skill"), Just("runners"), Just("run"), Just("type"), Just("javascript"),
                Just("cli-tool"), Just("module"), Just("x.mjs"), Just("inputs"), Just("pages"),
                Just("1"), Just("-1"), Just("1e999"), Just("~"), Just("null"), Just("\\"),
                Just("---\n"), Just("...\n"), Just("<<: "), Just("\t"),
            ],
            0..80,
        ),
    ) {
        let _ = parse_str(&tokens.concat());
    }
}
