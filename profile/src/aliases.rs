//! Where an alias bomb goes off. The YAML reader refuses a document whose aliases expand past a
//! hundred times its events ("repetition limit exceeded", a billion-laughs document) but says
//! no more; this walks the document's events once, counts what each alias costs to expand
//! (itself and every alias inside the node it names), and finds the alias at which the
//! document passes the limit, so that the refusal can point at a line.

use saphyr_parser::{Event, Parser};
use std::collections::HashMap;

/// The alias at which expanding a document's aliases passes the YAML reader's repetition
/// limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bomb {
    /// 1-based line of the alias.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The expansions the document needs up to and including this alias.
    pub expansions: u64,
    /// The most expansions the reader allows (a hundred per event).
    pub limit: u64,
}

/// The alias of `text` at which its expansions pass the limit, or, when none does by this
/// count, the alias whose expansion costs most; `None` for text with no alias or that does not
/// parse.
pub(crate) fn bomb(text: &str) -> Option<Bomb> {
    // What one alias of each anchor costs: itself and the aliases inside its node.
    let mut cost: HashMap<usize, u64> = HashMap::new();
    // Open collections: their anchor (0 for none) and the expansions inside them so far.
    let mut open: Vec<(usize, u64)> = Vec::new();
    // Every alias, in order: where, what it costs, the running total.
    let mut aliases: Vec<(usize, usize, u64, u64)> = Vec::new();
    let (mut events, mut total) = (0u64, 0u64);
    for event in Parser::new_from_str(text) {
        let (event, span) = event.ok()?;
        events += 1;
        match event {
            Event::Alias(id) => {
                let c = cost.get(&id).copied().unwrap_or(0).saturating_add(1);
                total = total.saturating_add(c);
                if let Some((_, inner)) = open.last_mut() {
                    *inner = inner.saturating_add(c);
                }
                aliases.push((span.start.line(), span.start.col() + 1, c, total));
            }
            Event::Scalar(_, _, id, _) if id != 0 => {
                cost.insert(id, 0);
            }
            Event::SequenceStart(id, _) | Event::MappingStart(id, _) => open.push((id, 0)),
            Event::SequenceEnd | Event::MappingEnd => {
                let (id, inner) = open.pop()?;
                if id != 0 {
                    cost.insert(id, inner);
                }
                if let Some((_, outer)) = open.last_mut() {
                    *outer = outer.saturating_add(inner);
                }
            }
            _ => {}
        }
    }
    let limit = events.saturating_mul(100);
    let over = aliases.iter().find(|a| a.3 > limit);
    let (line, column, _, expansions) =
        *over.or_else(|| aliases.iter().max_by_key(|a| (a.2, std::cmp::Reverse(a.3))))?;
    Some(Bomb {
        line,
        column,
        expansions,
        limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alias_that_passes_the_limit_is_found() {
        // Each level names the one before nine times: the last line's aliases explode.
        let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x]\n");
        for (n, prev) in ["b", "c", "d", "e", "f"]
            .iter()
            .zip(["a", "b", "c", "d", "e"])
        {
            text.push_str(&format!(
                "{n}: &{n} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
        }
        let b = bomb(&text).expect("a bomb");
        assert!(b.expansions > b.limit, "{b:?}");
        // The level whose aliases first pass a hundred expansions per event: `e` or `f`.
        assert!(b.line == 5 || b.line == 6, "{b:?}");
        assert!(b.column > 1, "{b:?}");
    }

    #[test]
    fn a_document_without_aliases_has_no_bomb() {
        assert_eq!(bomb("skill: x\nrunners: {}\n"), None);
        assert_eq!(bomb("a: [unclosed\n"), None);
        let small = bomb("a: &a 1\nb: *a\n").expect("an alias");
        assert_eq!((small.line, small.column, small.expansions), (2, 4, 1));
    }
}
