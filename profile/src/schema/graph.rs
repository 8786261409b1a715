//! A schema document read as a graph of subschemas: which subschema applies to which part of an
//! instance. It is what [`crate::schema`] walks to bound the work of validating a value before
//! `jsonschema` starts (which cannot be interrupted once it has).
//!
//! Every edge over-approximates what a validator may do: a keyword this module does not know
//! applies its subschemas to the instance and to every child, every pattern matches every key, and
//! a reference that could name several subschemas names whichever is dearest.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Keywords whose values are data or containers, never applied to the instance.
const NOT_APPLIED: &[&str] = &[
    "$defs",
    "definitions",
    "const",
    "enum",
    "default",
    "examples",
    "dependentRequired",
    "required",
    "$vocabulary",
];

/// How a subschema applies, from one schema node.
#[derive(Debug, Clone)]
pub(crate) enum Edge {
    /// To the same instance, one of the targets (a reference: whichever it resolves to).
    Same(Vec<usize>),
    /// To the member `key` of an object.
    Property(String, usize),
    /// To every member of an object.
    EachProperty(usize),
    /// To every key of an object (a string).
    PropertyNames(usize),
    /// To the element `index` of an array.
    Item(usize, usize),
    /// To every element of an array.
    EachItem(usize),
    /// A keyword not modelled: to the same instance and to every child.
    Unknown(usize),
    /// A reference outside the document: one of the specifications' meta-schemas, the only
    /// documents `jsonschema` resolves without a retriever.
    External,
}

/// One subschema: a `true`/`false` schema has no edges.
#[derive(Debug, Default, Clone)]
pub(crate) struct Node {
    pub(crate) edges: Vec<Edge>,
}

/// The subschemas of one document; node 0 is the root.
#[derive(Debug, Clone)]
pub(crate) struct Graph {
    pub(crate) nodes: Vec<Node>,
}

/// Builds the graph of `root`, or says why its references cannot be followed.
pub(crate) fn build(root: &Value) -> Result<Graph, String> {
    let mut builder = Builder {
        root,
        ids: HashMap::new(),
        nodes: Vec::new(),
        resources: Vec::new(),
        anchors: HashMap::new(),
        dynamic: HashMap::new(),
        recursive: Vec::new(),
        external: false,
    };
    builder.scan(root);
    builder.node(root)?;
    if builder.external && !(builder.dynamic.is_empty() && builder.recursive.is_empty()) {
        return Err("`schema` refers to a meta-schema and declares `$dynamicAnchor` or `$recursiveAnchor`, so the meta-schema may refer back into it; runx cannot bound the work of validating against it".to_string());
    }
    let graph = Graph {
        nodes: builder.nodes,
    };
    if let Some(at) = same_instance_cycle(&graph) {
        return Err(format!(
            "`schema` refers to itself without descending into the value (a `$ref` cycle through subschema {at}); remove the cycle"
        ));
    }
    Ok(graph)
}

struct Builder<'a> {
    root: &'a Value,
    ids: HashMap<*const Value, usize>,
    nodes: Vec<Node>,
    /// Objects that carry an `$id` (or draft-4 `id`) string, with it.
    resources: Vec<(&'a str, &'a Value)>,
    /// `$anchor` names, `$id: "#name"` names and `$dynamicAnchor` names.
    anchors: HashMap<&'a str, Vec<&'a Value>>,
    dynamic: HashMap<&'a str, Vec<&'a Value>>,
    recursive: Vec<&'a Value>,
    external: bool,
}

impl<'a> Builder<'a> {
    /// Collects every identifier and anchor of the document, wherever it is (an over-approximation:
    /// a key named `$id` inside `enum` is collected too, and only ever adds candidates).
    fn scan(&mut self, value: &'a Value) {
        match value {
            Value::Object(map) => {
                for key in ["$id", "id"] {
                    if let Some(Value::String(id)) = map.get(key) {
                        self.resources.push((id, value));
                        if let Some((_, name)) = id.split_once('#')
                            && !name.is_empty()
                        {
                            self.anchors.entry(name).or_default().push(value);
                        }
                    }
                }
                if let Some(Value::String(name)) = map.get("$anchor") {
                    self.anchors.entry(name).or_default().push(value);
                }
                if let Some(Value::String(name)) = map.get("$dynamicAnchor") {
                    self.anchors.entry(name).or_default().push(value);
                    self.dynamic.entry(name).or_default().push(value);
                }
                if map.get("$recursiveAnchor") == Some(&Value::Bool(true)) {
                    self.recursive.push(value);
                }
                map.values().for_each(|v| self.scan(v));
            }
            Value::Array(items) => items.iter().for_each(|v| self.scan(v)),
            _ => {}
        }
    }

    /// The node of a subschema, built on first sight.
    fn node(&mut self, value: &'a Value) -> Result<usize, String> {
        if let Some(&id) = self.ids.get(&std::ptr::from_ref(value)) {
            return Ok(id);
        }
        let id = self.nodes.len();
        self.ids.insert(std::ptr::from_ref(value), id);
        self.nodes.push(Node::default());
        if let Value::Object(map) = value {
            let edges = self.edges(map)?;
            self.nodes[id].edges = edges;
        }
        Ok(id)
    }

    fn edges(&mut self, map: &'a Map<String, Value>) -> Result<Vec<Edge>, String> {
        let mut edges = Vec::new();
        for (keyword, sub) in map {
            match (keyword.as_str(), sub) {
                (k, _) if NOT_APPLIED.contains(&k) => {}
                ("$ref", Value::String(r)) => edges.push(self.reference(r)?),
                ("$dynamicRef", Value::String(r)) => {
                    let mut edge = self.reference(r)?;
                    if let (Edge::Same(targets), Some(name)) = (&mut edge, r.strip_prefix('#')) {
                        for v in self.dynamic.get(name).cloned().unwrap_or_default() {
                            targets.push(self.node(v)?);
                        }
                    }
                    edges.push(edge);
                }
                ("$recursiveRef", _) => {
                    let mut candidates = vec![self.root];
                    candidates.extend(self.recursive.iter().copied());
                    candidates.extend(self.resources.iter().map(|(_, v)| *v));
                    edges.push(Edge::Same(self.nodes_of(&candidates)?));
                }
                ("allOf" | "anyOf" | "oneOf", Value::Array(list)) => {
                    for s in list.iter().filter(|s| is_schema(s)) {
                        edges.push(Edge::Same(vec![self.node(s)?]));
                    }
                }
                ("not" | "if" | "then" | "else", s) if is_schema(s) => {
                    edges.push(Edge::Same(vec![self.node(s)?]));
                }
                ("dependentSchemas" | "dependencies", Value::Object(deps)) => {
                    for s in deps.values().filter(|s| is_schema(s)) {
                        edges.push(Edge::Same(vec![self.node(s)?]));
                    }
                }
                ("properties", Value::Object(props)) => {
                    for (key, s) in props {
                        edges.push(Edge::Property(key.clone(), self.node(s)?));
                    }
                }
                ("patternProperties", Value::Object(props)) => {
                    for s in props.values() {
                        edges.push(Edge::EachProperty(self.node(s)?));
                    }
                }
                ("additionalProperties" | "unevaluatedProperties", s) if is_schema(s) => {
                    edges.push(Edge::EachProperty(self.node(s)?));
                }
                ("propertyNames", s) if is_schema(s) => {
                    edges.push(Edge::PropertyNames(self.node(s)?));
                }
                ("prefixItems" | "items", Value::Array(list)) => {
                    for (index, s) in list.iter().enumerate() {
                        edges.push(Edge::Item(index, self.node(s)?));
                    }
                }
                ("items" | "additionalItems" | "unevaluatedItems" | "contains", s)
                    if is_schema(s) =>
                {
                    edges.push(Edge::EachItem(self.node(s)?));
                }
                (_, Value::Object(_)) => edges.push(Edge::Unknown(self.node(sub)?)),
                (_, Value::Array(list)) => {
                    for s in list.iter().filter(|s| s.is_object()) {
                        edges.push(Edge::Unknown(self.node(s)?));
                    }
                }
                _ => {}
            }
        }
        Ok(edges)
    }

    fn nodes_of(&mut self, values: &[&'a Value]) -> Result<Vec<usize>, String> {
        values.iter().map(|v| self.node(v)).collect()
    }

    /// The edge of a `$ref`: every subschema it may resolve to, whatever `$id` it is read under.
    fn reference(&mut self, reference: &str) -> Result<Edge, String> {
        let (uri, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let bases: Vec<&'a Value> = if uri.is_empty() {
            let mut bases = vec![self.root];
            bases.extend(self.resources.iter().map(|(_, v)| *v));
            bases
        } else {
            let found: Vec<&'a Value> = self
                .resources
                .iter()
                .filter(|(id, _)| {
                    let id = id.split_once('#').map_or(*id, |(u, _)| u);
                    !id.is_empty()
                        && (id == uri
                            || id.ends_with(&format!("/{uri}"))
                            || uri.ends_with(&format!("/{id}")))
                })
                .map(|(_, v)| *v)
                .collect();
            if found.is_empty() {
                if uri.starts_with("https://json-schema.org/")
                    || uri.starts_with("http://json-schema.org/")
                {
                    self.external = true;
                    return Ok(Edge::External);
                }
                return Err(format!(
                    "`schema` has `$ref: {reference}`, which runx cannot follow inside the schema to bound the work of validating; refer with a `#/...` pointer"
                ));
            }
            found
        };
        let mut targets = Vec::new();
        if fragment.is_empty() || fragment.starts_with('/') {
            let pointer = unescape_percent(fragment);
            for base in bases {
                if let Some(target) = base.pointer(&pointer) {
                    targets.push(self.node(target)?);
                }
            }
        } else {
            for v in self.anchors.get(fragment).cloned().unwrap_or_default() {
                targets.push(self.node(v)?);
            }
        }
        if targets.is_empty() {
            return Err(format!(
                "`schema` has `$ref: {reference}`, which names no subschema of the schema"
            ));
        }
        Ok(Edge::Same(targets))
    }
}

fn is_schema(v: &Value) -> bool {
    matches!(v, Value::Object(_) | Value::Bool(_))
}

/// `%25` and the like, as a `$ref` fragment may escape them.
fn unescape_percent(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(b) if bytes[i] == b'%' => {
                out.push(b);
                i += 3;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A node on a cycle of edges that stay on the same instance, if any.
fn same_instance_cycle(graph: &Graph) -> Option<usize> {
    // 0: unseen, 1: on the stack, 2: done. Iterative, so a long `$ref` chain cannot overflow.
    let mut state = vec![0u8; graph.nodes.len()];
    for start in 0..graph.nodes.len() {
        if state[start] != 0 {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        state[start] = 1;
        while let Some(top) = stack.last_mut() {
            let (node, next) = *top;
            let targets: Vec<usize> = same_targets(&graph.nodes[node]).collect();
            if let Some(&t) = targets.get(next) {
                top.1 += 1;
                match state[t] {
                    1 => return Some(t),
                    0 => {
                        state[t] = 1;
                        stack.push((t, 0));
                    }
                    _ => {}
                }
            } else {
                state[node] = 2;
                stack.pop();
            }
        }
    }
    None
}

fn same_targets(node: &Node) -> impl Iterator<Item = usize> + '_ {
    node.edges.iter().flat_map(|e| match e {
        Edge::Same(targets) => targets.clone(),
        Edge::Unknown(t) => vec![*t],
        _ => Vec::new(),
    })
}
