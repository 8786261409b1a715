//! Near-miss names: the one rule for "did you mean ...?" in every message that refuses a name
//! (an export, a runner, an input, a profile key, a skill, a runner type).

/// The candidate closest to `name`, when one is close enough to be a plausible misspelling.
///
/// Closeness is the Damerau–Levenshtein distance (a swapped pair of letters counts once),
/// compared without regard to case: a candidate is offered when it differs from `name` by at
/// most a third of the longer name's length, and at least by one edit for short names. Of equal
/// candidates the first in `candidates` wins, so a caller that passes a sorted list gets a
/// stable answer. A candidate equal to `name` is never offered.
pub fn nearest<'a, I>(name: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let wanted = name.to_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == name {
            continue;
        }
        let (a, b) = (wanted.chars().count(), candidate.chars().count());
        let longer = a.max(b);
        let allowed = (longer / 3).max(1);
        // The distance is at least the difference of the lengths: a name far longer than every
        // candidate (a megabyte-long key from a caller) is no misspelling, and measuring it
        // would cost its length times the candidate's, in time and memory.
        if a.abs_diff(b) > allowed {
            continue;
        }
        let distance = strsim::damerau_levenshtein(&wanted, &candidate.to_lowercase());
        if distance <= allowed && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// `; did you mean `x`?` for the nearest candidate, or nothing: the tail of a refusal.
pub fn did_you_mean<'a, I>(name: &str, candidates: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    match nearest(name, candidates) {
        Some(n) => format!("; did you mean `{n}`?"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::{did_you_mean, nearest};

    #[test]
    fn a_huge_name_is_refused_at_once() {
        let huge = "a".repeat(8 << 20);
        let started = std::time::Instant::now();
        assert_eq!(nearest(&huge, ["name", "excited"]), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn a_misspelling_finds_its_name() {
        assert_eq!(nearest("greeet", ["greet", "shout"]), Some("greet"));
        assert_eq!(nearest("excitd", ["name", "excited"]), Some("excited"));
        assert_eq!(
            nearest("javascrpt", ["javascript", "cli-tool"]),
            Some("javascript")
        );
        assert_eq!(nearest("helpdeks", ["helpdesk", "hello"]), Some("helpdesk"));
        // A swapped pair is one edit.
        assert_eq!(nearest("nmae", ["name"]), Some("name"));
        // Case alone is a near miss.
        assert_eq!(nearest("Name", ["name"]), Some("name"));
    }

    #[test]
    fn a_different_name_finds_nothing() {
        assert_eq!(nearest("zebra", ["greet", "shout"]), None);
        assert_eq!(nearest("a", ["bcd"]), None);
        assert_eq!(nearest("x", Vec::<&str>::new()), None);
        assert_eq!(nearest("greet", ["greet"]), None);
        assert_eq!(did_you_mean("zebra", ["greet"]), "");
    }

    #[test]
    fn the_closest_and_then_the_first_wins() {
        assert_eq!(nearest("shot", ["shoot", "shout", "shot1"]), Some("shoot"));
        assert_eq!(nearest("greet", ["great", "greets"]), Some("great"));
        assert_eq!(did_you_mean("greeet", ["greet"]), "; did you mean `greet`?");
    }
}
