//! Where a key of a YAML document is: the line and column of `runners.main.args[1]` in the text
//! of an `X.yaml`, for messages about a profile that loaded (`runx skill check`), where the
//! model no longer holds positions.
//!
//! The text is walked as a stream of parser events (`saphyr-parser`), so flow and block styles,
//! quoted keys and comments are read as YAML reads them. Only scalar keys can be named.

use saphyr_parser::{Event, Parser};

/// One step of a key path: a mapping key or a sequence index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A mapping key.
    Key(String),
    /// A sequence index.
    Index(usize),
}

/// Reads a dotted key path (`runners.main.args[1]`, `harness.cases[0].name`) into steps. A dot
/// always separates keys: a key that holds a dot itself cannot be named this way.
pub fn path(dotted: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for part in dotted.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            steps.push(Step::Key(key.to_string()));
        }
        while let Some(index) = rest
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .and_then(|(n, after)| Some((n.parse().ok()?, after)))
        {
            steps.push(Step::Index(index.0));
            rest = index.1;
        }
    }
    steps
}

/// The 1-based line and column where the node at `target` starts: its key, for a mapping
/// entry; the item, for a sequence index. `None` when the text has no such node (or does not
/// parse as YAML).
pub fn locate(text: &str, target: &[Step]) -> Option<(usize, usize)> {
    enum Frame {
        Map { key: Option<String> },
        Seq { next: usize },
    }
    let mut frames: Vec<Frame> = Vec::new();
    // The path of the collection each frame is, when it has one (the root has none).
    let mut here: Vec<Step> = Vec::new();
    let mut named: Vec<bool> = Vec::new();
    for event in Parser::new_from_str(text) {
        let (event, span) = event.ok()?;
        let at = (span.start.line(), span.start.col() + 1);
        let starts_node = matches!(
            event,
            Event::Scalar(..)
                | Event::Alias(_)
                | Event::MappingStart(..)
                | Event::SequenceStart(..)
        );
        if starts_node {
            let step = match frames.last_mut() {
                Some(Frame::Map { key }) if key.is_none() => {
                    // A key. Complex keys (a mapping as a key) are not named: their content
                    // is walked as an anonymous node.
                    let text = match &event {
                        Event::Scalar(value, ..) => value.to_string(),
                        _ => String::new(),
                    };
                    here.push(Step::Key(text.clone()));
                    let found = here.as_slice() == target;
                    here.pop();
                    if found {
                        return Some(at);
                    }
                    *key = Some(text);
                    if matches!(event, Event::Scalar(..) | Event::Alias(_)) {
                        continue;
                    }
                    None
                }
                Some(Frame::Map { key }) => key.take().map(Step::Key),
                Some(Frame::Seq { next }) => {
                    *next += 1;
                    Some(Step::Index(*next - 1))
                }
                None => None,
            };
            if let Some(step) = &step
                && target.len() == here.len() + 1
                && target.starts_with(&here)
                && target.last() == Some(step)
                && matches!(step, Step::Index(_))
            {
                return Some(at);
            }
            let opens = match event {
                Event::MappingStart(..) => Some(Frame::Map { key: None }),
                Event::SequenceStart(..) => Some(Frame::Seq { next: 0 }),
                _ => None,
            };
            if let Some(frame) = opens {
                frames.push(frame);
                named.push(step.is_some());
                if let Some(step) = step {
                    here.push(step);
                }
            }
        } else if matches!(event, Event::MappingEnd | Event::SequenceEnd) {
            frames.pop();
            if named.pop() == Some(true) {
                here.pop();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{Step, locate, path};

    const TEXT: &str = "skill: s\n# a comment\nrunners:\n  main:\n    type: cli-tool\n    args: [\"a\", \"{{b}}\"]\n    inputs:\n      \"quoted key\": string\n  other: { type: javascript, module: m.mjs }\nharness:\n  cases:\n    - name: one\n    - name: two\n";

    fn at(dotted: &str) -> Option<(usize, usize)> {
        locate(TEXT, &path(dotted))
    }

    #[test]
    fn keys_and_items_are_found_in_block_and_flow_style() {
        assert_eq!(at("skill"), Some((1, 1)));
        assert_eq!(at("runners.main"), Some((4, 3)));
        assert_eq!(at("runners.main.type"), Some((5, 5)));
        assert_eq!(at("runners.main.args"), Some((6, 5)));
        assert_eq!(at("runners.main.args[1]"), Some((6, 17)));
        assert_eq!(at("runners.main.inputs.quoted key"), Some((8, 7)));
        assert_eq!(at("runners.other.module"), Some((9, 30)));
        assert_eq!(at("harness.cases[1]"), Some((13, 7)));
        assert_eq!(at("harness.cases[1].name"), Some((13, 7)));
    }

    #[test]
    fn what_is_not_there_is_none() {
        assert_eq!(at("runners.nothing"), None);
        assert_eq!(at("runners.main.args[2]"), None);
        assert_eq!(at("skill.more"), None);
        assert_eq!(locate("a: [", &path("b")), None);
    }

    #[test]
    fn dotted_paths_read_indices() {
        assert_eq!(
            path("runners.x.args[1][2]"),
            vec![
                Step::Key("runners".into()),
                Step::Key("x".into()),
                Step::Key("args".into()),
                Step::Index(1),
                Step::Index(2),
            ]
        );
    }
}
