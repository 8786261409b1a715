//! What runx refuses in a runner of a type this runtime does not run (`graph`, `agent-task`,
//! `external-adapter`, ...): such a runner loads here with its keys shown, and a package that
//! loads here must load in runx too.

use crate::packet::PacketFinder;
use serde_json::Value;
use std::collections::BTreeMap;

/// Checks runner `name` of type `ty` with its declared `keys`.
pub(crate) fn check(
    name: &str,
    ty: &str,
    keys: &BTreeMap<String, Value>,
    packets: &PacketFinder,
) -> Result<(), String> {
    let keys = Keys::of(keys);
    if ty == "graph" {
        graph_rules(name, &keys)?;
    }
    other_rules(name, ty, &keys, packets)
}

/// A runner's keys in the flat form, or in the nested `run:`/`source:` block that holds them.
struct Keys<'a> {
    flat: &'a BTreeMap<String, Value>,
    nested: Option<&'a serde_json::Map<String, Value>>,
}

impl<'a> Keys<'a> {
    fn of(flat: &'a BTreeMap<String, Value>) -> Keys<'a> {
        let nested = ["run", "source"]
            .iter()
            .find_map(|k| flat.get(*k).and_then(Value::as_object));
        Keys { flat, nested }
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.flat
            .get(key)
            .or_else(|| self.nested.and_then(|n| n.get(key)))
    }
}

/// What runx refuses in a graph runner, though this runtime does not run graphs: a package
/// that loads here must load in runx. A graph names the steps whose outputs are its result
/// (`graph.result_from`, at least one), and leaves `environment`, `outputs` and `artifacts` to
/// its steps.
fn graph_rules(name: &str, keys: &Keys<'_>) -> Result<(), String> {
    for (key, place) in [
        ("environment", "the step that runs"),
        ("outputs", "the graph's last step that produces them"),
        ("artifacts", "the graph's last step that produces them"),
    ] {
        if keys.get(key).is_some() {
            return Err(format!(
                "runner `{name}` of type `graph` declares `{key}`, which is ambiguous for a graph: declare it on {place} (runx refuses it here)"
            ));
        }
    }
    let named = keys
        .get("graph")
        .and_then(|g| g.get("result_from"))
        .and_then(Value::as_array)
        .is_some_and(|steps| !steps.is_empty());
    if !named {
        return Err(format!(
            "runner `{name}` of type `graph` has no `graph.result_from`: name at least one step whose output is the graph's result (runx refuses a graph without one)"
        ));
    }
    Ok(())
}

/// What runx refuses in a runner of any type this runtime does not run: an `environment` name
/// starting with `RUNX_` (the runtime's), and an input whose `packet:` names a schema that is
/// not there.
fn other_rules(
    name: &str,
    ty: &str,
    keys: &Keys<'_>,
    packets: &PacketFinder,
) -> Result<(), String> {
    if let Some(environment) = keys.get("environment").and_then(Value::as_object) {
        for (list, names) in environment {
            for env in names
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if crate::validate::is_reserved_env_name(env) {
                    return Err(format!(
                        "runner `{name}` of type `{ty}`: `environment.{list}` entry `{env}`: names starting with RUNX_ belong to the runtime; runx refuses them"
                    ));
                }
            }
        }
    }
    if let Some(inputs) = keys.get("inputs").and_then(Value::as_object) {
        for (input, decl) in inputs {
            if let Some(id) = decl.get("packet").and_then(Value::as_str) {
                packets
                    .find(id)
                    .map_err(|e| format!("runner `{name}` of type `{ty}`: input `{input}`: {e}"))?;
            }
        }
    }
    Ok(())
}
