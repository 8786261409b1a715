//! Which rows `runx history` lists: runx's filters (`QUERY`, `--skill`, `--status`, `--source`,
//! `--actor`, `--artifact-type`, `--since`, `--until`, `--include-harness`), with runx's
//! meaning: every text compared trimmed and case-insensitively, the query and `--skill` as
//! parts of a field, the others as the whole field; times as RFC 3339 instants.

use serde_json::Value;

/// runx's `created_at` of a receipt made without a clock (a harness's): such receipts are
/// harness receipts, listed only with `--include-harness`.
const HARNESS_CREATED_AT: &str = "2026-05-18T00:00:00Z";

/// The filters of one `runx history`, each already trimmed and lowercased (empty is none).
#[derive(Default)]
pub struct Filter {
    pub query: Option<String>,
    pub skill: Option<String>,
    pub status: Option<String>,
    pub source: Option<String>,
    pub actor: Option<String>,
    pub artifact_type: Option<String>,
    pub since: Option<Instant>,
    pub until: Option<Instant>,
    pub include_harness: bool,
}

/// A point in time: seconds since the epoch and nanoseconds.
pub type Instant = (i64, u32);

/// A filter's text as runx compares it: trimmed and lowercased, `None` when empty.
pub fn normalized(value: Option<&str>) -> Option<String> {
    value
        .map(|v| v.trim().to_lowercase())
        .filter(|v| !v.is_empty())
}

/// `--since`/`--until`: an RFC 3339 timestamp, or the message runx gives for another text.
pub fn instant_flag(flag: &str, value: Option<&str>) -> Result<Option<Instant>, String> {
    let Some(text) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    parse_instant(text).map(Some).ok_or_else(|| {
        format!(
            "invalid {flag} timestamp '{text}': expected an RFC 3339 timestamp such as \
             2026-05-18T09:30:00Z"
        )
    })
}

impl Filter {
    /// Whether any filter that selects rows is set (`--include-harness` widens; it does not).
    pub fn selects(&self) -> bool {
        self.query.is_some() || self.flags_select()
    }

    /// Whether a filter other than the query selects rows.
    pub fn flags_select(&self) -> bool {
        self.skill.is_some()
            || self.status.is_some()
            || self.source.is_some()
            || self.actor.is_some()
            || self.artifact_type.is_some()
            || self.since.is_some()
            || self.until.is_some()
    }

    /// Whether `doc` is a harness or trial receipt, listed only with `--include-harness`: runx's
    /// (its subject a harness or trial, or made at runx's fixed harness time) or a fixture
    /// case's of this runtime (its evidence names the case).
    pub fn hides(&self, doc: &Value) -> bool {
        !self.include_harness
            && (doc["created_at"] == HARNESS_CREATED_AT
                || matches!(doc["subject"]["kind"].as_str(), Some("harness" | "trial"))
                || doc["metadata"]["evidence"]["case"].is_string())
    }

    /// Whether the history row `row` passes every filter.
    pub fn matches(&self, row: &Value) -> bool {
        let text = |key: &str| row[key].as_str().map(str::to_lowercase);
        let texts = |key: &str| -> Vec<String> {
            row[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_lowercase))
                .collect()
        };
        let contains = |field: Option<String>, part: &str| field.is_some_and(|f| f.contains(part));
        let query_ok = self.query.as_deref().is_none_or(|q| {
            ["name", "id", "source_type", "skill", "runner"]
                .iter()
                .any(|k| contains(text(k), q))
                || texts("actors").iter().any(|a| a.contains(q))
                || texts("artifact_types").iter().any(|a| a.contains(q))
        });
        let created = row["created_at"].as_str().and_then(parse_instant);
        let time_ok = match created {
            Some(at) => self.since.is_none_or(|s| at >= s) && self.until.is_none_or(|u| at <= u),
            None => self.since.is_none() && self.until.is_none(),
        };
        query_ok
            && time_ok
            && self
                .skill
                .as_deref()
                .is_none_or(|s| contains(text("skill"), s) || contains(text("name"), s))
            && self
                .status
                .as_deref()
                .is_none_or(|s| text("status").as_deref() == Some(s))
            && self
                .source
                .as_deref()
                .is_none_or(|s| text("source_type").as_deref() == Some(s))
            && self
                .actor
                .as_deref()
                .is_none_or(|a| texts("actors").iter().any(|x| x == a))
            && self
                .artifact_type
                .as_deref()
                .is_none_or(|t| texts("artifact_types").iter().any(|x| x == t))
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` as an instant; `None` for anything else.
pub fn parse_instant(text: &str) -> Option<Instant> {
    let (date, rest) = text.split_once(['T', 't'])?;
    let mut ymd = date.splitn(3, '-');
    let year: i64 = ymd.next()?.parse().ok()?;
    let month: u32 = ymd.next()?.parse().ok()?;
    let day: u32 = ymd.next()?.parse().ok()?;
    let (time, offset) = if let Some(t) = rest.strip_suffix(['Z', 'z']) {
        (t, 0i64)
    } else {
        let at = rest.rfind(['+', '-'])?;
        let (t, zone) = rest.split_at(at);
        let sign = if zone.starts_with('-') { -1 } else { 1 };
        let (h, m) = zone[1..].split_once(':')?;
        let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
        if h > 23 || m > 59 {
            return None;
        }
        (t, sign * (h * 3600 + m * 60))
    };
    let (hms, fraction) = time.split_once('.').unwrap_or((time, ""));
    let mut parts = hms.splitn(3, ':');
    let hour: i64 = parts.next()?.parse().ok()?;
    let minute: i64 = parts.next()?.parse().ok()?;
    let second: i64 = parts.next()?.parse().ok()?;
    let in_range = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && hour < 24
        && minute < 60
        && second < 61;
    if !in_range || !fraction.bytes().all(|b| b.is_ascii_digit()) || fraction.len() > 9 {
        return None;
    }
    let nanos: u32 = format!("{fraction:0<9}").parse().ok()?;
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((
        days * 86_400 + hour * 3600 + minute * 60 + second - offset,
        nanos,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn instants_compare_across_offsets_and_fractions() {
        assert_eq!(parse_instant("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(
            parse_instant("2026-05-18T02:00:00+02:00"),
            parse_instant("2026-05-18T00:00:00Z")
        );
        assert_eq!(
            parse_instant("2000-03-01T00:00:00.5Z"),
            Some((951_868_800, 500_000_000))
        );
        for bad in [
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-05-18",
            "2026-05-18T00:00:00",
        ] {
            assert_eq!(parse_instant(bad), None, "{bad}");
        }
    }

    #[test]
    fn filters_compare_as_runx_does() {
        let row = json!({"id": "sha256:ab", "name": "hello", "skill": "hello", "runner": "greet",
            "status": "closed", "source_type": "local", "actors": ["runx:principal:local"],
            "artifact_types": [], "created_at": "2026-05-18T10:00:00.123Z"});
        let f = |edit: &dyn Fn(&mut Filter)| {
            let mut f = Filter::default();
            edit(&mut f);
            f.matches(&row)
        };
        assert!(f(&|f| f.query = Some("gree".into())));
        assert!(!f(&|f| f.query = Some("nothing".into())));
        assert!(f(&|f| f.skill = Some("hel".into())));
        assert!(!f(&|f| f.status = Some("clos".into())));
        assert!(f(&|f| f.status = Some("closed".into())));
        assert!(f(&|f| f.since = parse_instant("2026-05-18T10:00:00Z")));
        assert!(!f(&|f| f.until = parse_instant("2026-05-18T10:00:00Z")));
        assert!(!f(&|f| f.actor = Some("runx:principal".into())));
        assert!(normalized(Some("  Closed ")).as_deref() == Some("closed"));
        assert_eq!(normalized(Some("  ")), None);
    }
}
