//! An upper bound of the work of validating one instance against a schema graph: the number of
//! (subschema, instance node) evaluations a validator could make, counted over the graph's
//! edges. Memoized on (subschema, instance node), so the count takes time linear in the schema
//! size times the instance size even where the validator's work doubles with each level.

use std::collections::HashMap;

use serde_json::Value;

use crate::schema::graph::{Edge, Graph};

/// Evaluations counted for each instance node under a reference to a meta-schema: more than the
/// subschemas of the largest specification meta-schema that apply to one node.
const EXTERNAL_PER_NODE: u64 = 1024;

/// Deepest chain of evaluations counted; beyond it the count is `u64::MAX`. A schema compiled at
/// load has no cycle that stays on one instance node, so the chain is at most the instance's
/// depth times the schema's longest reference chain.
const MAX_CHAIN: usize = 1024;

/// The number of evaluations validating `instance` against `graph` could take, or more: it
/// stops counting at `cap` (and may return any value above it).
pub(crate) fn steps(graph: &Graph, instance: &Value, cap: u64) -> u64 {
    let mut count = Count {
        graph,
        memo: HashMap::new(),
        sizes: HashMap::new(),
        cap,
        depth: 0,
    };
    count.cost(0, instance)
}

struct Count<'g> {
    graph: &'g Graph,
    memo: HashMap<(usize, *const Value), u64>,
    sizes: HashMap<*const Value, u64>,
    cap: u64,
    depth: usize,
}

/// What a key of an object is, for `propertyNames`.
static KEY: Value = Value::String(String::new());

impl Count<'_> {
    fn cost(&mut self, node: usize, instance: &Value) -> u64 {
        let key = (node, std::ptr::from_ref(instance));
        if let Some(&c) = self.memo.get(&key) {
            return c;
        }
        if self.depth >= MAX_CHAIN {
            return u64::MAX;
        }
        self.depth += 1;
        let graph = self.graph;
        let mut total: u64 = 1;
        for edge in &graph.nodes[node].edges {
            if total > self.cap {
                break;
            }
            let add = match edge {
                Edge::Same(targets) => targets
                    .iter()
                    .map(|&t| self.cost(t, instance))
                    .max()
                    .unwrap_or(0),
                Edge::Property(name, t) => match instance.get(name) {
                    Some(child) if instance.is_object() => self.cost(*t, child),
                    _ => 0,
                },
                Edge::EachProperty(t) => match instance {
                    Value::Object(map) => self.sum(*t, map.values()),
                    _ => 0,
                },
                Edge::PropertyNames(t) => match instance {
                    Value::Object(map) => {
                        let each = self.cost(*t, &KEY);
                        each.saturating_mul(map.len() as u64)
                    }
                    _ => 0,
                },
                Edge::Item(index, t) => match instance {
                    Value::Array(items) if *index < items.len() => self.cost(*t, &items[*index]),
                    _ => 0,
                },
                Edge::EachItem(t) => match instance {
                    Value::Array(items) => self.sum(*t, items.iter()),
                    _ => 0,
                },
                Edge::Unknown(t) => {
                    let here = self.cost(*t, instance);
                    let below = match instance {
                        Value::Array(items) => self.sum(*t, items.iter()),
                        Value::Object(map) => self.sum(*t, map.values()),
                        _ => 0,
                    };
                    here.saturating_add(below)
                }
                Edge::External => EXTERNAL_PER_NODE.saturating_mul(self.size(instance)),
            };
            total = total.saturating_add(add);
        }
        self.depth -= 1;
        self.memo.insert(key, total);
        total
    }

    fn sum<'v>(&mut self, node: usize, children: impl Iterator<Item = &'v Value>) -> u64 {
        let mut total: u64 = 0;
        for child in children {
            total = total.saturating_add(self.cost(node, child));
            if total > self.cap {
                break;
            }
        }
        total
    }

    /// Nodes of an instance, itself included.
    fn size(&mut self, instance: &Value) -> u64 {
        if let Some(&n) = self.sizes.get(&std::ptr::from_ref(instance)) {
            return n;
        }
        let n = match instance {
            Value::Array(items) => items
                .iter()
                .fold(1u64, |n, c| n.saturating_add(self.size(c))),
            Value::Object(map) => map
                .values()
                .fold(1u64, |n, c| n.saturating_add(self.size(c))),
            _ => 1,
        };
        self.sizes.insert(std::ptr::from_ref(instance), n);
        n
    }
}
