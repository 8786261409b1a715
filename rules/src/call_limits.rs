//! Per-call limits, defined once as data.
//!
//! Every limit has a value, a unit and a stable name. Failures, receipts and `runx skill inspect`
//! all read the names from [`Limit`], so a limit is never described in two places.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One MiB in bytes.
pub const MIB: usize = 1024 * 1024;

/// The names of the limits a call runs under, as they appear in failures and receipts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Limit {
    /// Size of the encoded input object (and page records) delivered to the export.
    InputBytes,
    /// Size of the encoded output returned by the export.
    OutputBytes,
    /// Size of the module bundle's source.
    SourceBytes,
    /// Memory the JavaScript heap may use.
    HeapBytes,
    /// Native stack the JavaScript engine may use for recursion.
    StackBytes,
    /// Wall-clock time of one call.
    WallMilliseconds,
    /// Size of the captured console log.
    LogBytes,
    /// Levels of nested objects and arrays in the output.
    OutputDepth,
}

impl Limit {
    /// Every limit of a call.
    pub const ALL: [Limit; 8] = [
        Limit::InputBytes,
        Limit::OutputBytes,
        Limit::SourceBytes,
        Limit::HeapBytes,
        Limit::StackBytes,
        Limit::WallMilliseconds,
        Limit::LogBytes,
        Limit::OutputDepth,
    ];

    /// The stable snake_case name of the limit.
    pub const fn name(self) -> &'static str {
        match self {
            Limit::InputBytes => "input_bytes",
            Limit::OutputBytes => "output_bytes",
            Limit::SourceBytes => "source_bytes",
            Limit::HeapBytes => "heap_bytes",
            Limit::StackBytes => "stack_bytes",
            Limit::WallMilliseconds => "wall_milliseconds",
            Limit::LogBytes => "log_bytes",
            Limit::OutputDepth => "output_depth",
        }
    }
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The limits one call runs under. Hosts may narrow them ([`Limits::narrow`]), never widen them
/// beyond [`Limits::CEILING`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Bytes of input JSON plus page records.
    pub input_bytes: usize,
    /// Bytes of output JSON.
    pub output_bytes: usize,
    /// Bytes of module source in the bundle.
    pub source_bytes: usize,
    /// Bytes of JavaScript heap (the engine's memory limit).
    pub heap_bytes: usize,
    /// Bytes of native stack for JavaScript recursion.
    pub stack_bytes: usize,
    /// Milliseconds of wall-clock time for the call.
    pub wall_milliseconds: u64,
    /// Bytes of console log kept (every line's text and its line break); the rest is counted
    /// as dropped. Zero keeps nothing, which is how the last pages of a paged run whose log is
    /// full are called.
    pub log_bytes: usize,
    /// Levels of objects and arrays the output may nest (the top-level object is level 1).
    #[serde(default = "default_output_depth")]
    pub output_depth: usize,
}

fn default_output_depth() -> usize {
    Limits::CEILING.output_depth
}

/// Shortest wall a runner may declare, in seconds.
pub const MIN_TIMEOUT_SECONDS: u64 = 1;
/// Longest wall a javascript runner may declare, in seconds.
pub const MAX_TIMEOUT_SECONDS: u64 = 30;

impl Limits {
    /// The defaults, which are also the ceiling: input, output and source 4 MiB, heap 64 MiB,
    /// stack 8 MiB, wall 2 s, console log 64 KiB, output nesting 100 levels. The host parses
    /// every output with a JSON reader that stops at 128 levels; 100 leaves room for the
    /// envelope a paged run puts around its state. The stack is what QuickJS needs for 10,000
    /// frames of an ordinary recursive function (about 650 bytes each; it threw at 1,600 frames
    /// under 1 MiB), the depth guaranteed on both engines.
    pub const CEILING: Limits = Limits {
        input_bytes: 4 * MIB,
        output_bytes: 4 * MIB,
        source_bytes: 4 * MIB,
        heap_bytes: 64 * MIB,
        stack_bytes: 8 * MIB,
        wall_milliseconds: 2_000,
        log_bytes: 64 * 1024,
        output_depth: 100,
    };

    /// The wall a call may be given at most (the declared `timeout_seconds` ceiling).
    pub const MAX_WALL: Duration = Duration::from_secs(MAX_TIMEOUT_SECONDS);

    /// Returns the limits with the wall set to `wall`, clamped to 1–30 s.
    pub fn with_wall(mut self, wall: Duration) -> Limits {
        let ms = wall.as_millis().clamp(
            u128::from(MIN_TIMEOUT_SECONDS * 1000),
            Limits::MAX_WALL.as_millis(),
        );
        self.wall_milliseconds = u64::try_from(ms).unwrap_or(30_000);
        self
    }

    /// Every limit of `self` narrowed to at most the ceiling; wall at most 30 s.
    pub fn narrow(self) -> Limits {
        let c = Limits::CEILING;
        Limits {
            input_bytes: self.input_bytes.min(c.input_bytes),
            output_bytes: self.output_bytes.min(c.output_bytes),
            source_bytes: self.source_bytes.min(c.source_bytes),
            heap_bytes: self.heap_bytes.min(c.heap_bytes),
            stack_bytes: self.stack_bytes.min(c.stack_bytes),
            wall_milliseconds: self.wall_milliseconds.clamp(1, MAX_TIMEOUT_SECONDS * 1000),
            log_bytes: self.log_bytes.min(c.log_bytes),
            output_depth: self.output_depth.min(c.output_depth),
        }
    }

    /// `Ok` when every limit lies within its range: at least 1 (the console log may be 0) and at
    /// most the ceiling (the wall at most [`MAX_TIMEOUT_SECONDS`]). A worker refuses a call
    /// whose limits are not, as `invalid_request`: zero never means "unlimited".
    pub fn check(&self) -> Result<(), String> {
        let c = Limits::CEILING;
        for limit in Limit::ALL {
            let value = self.value(limit);
            let (min, max) = match limit {
                Limit::LogBytes => (0, c.value(limit)),
                Limit::WallMilliseconds => (1, MAX_TIMEOUT_SECONDS * 1000),
                _ => (1, c.value(limit)),
            };
            if value < min || value > max {
                return Err(format!(
                    "the limit {limit} is {value}; it must lie between {min} and {max}"
                ));
            }
        }
        Ok(())
    }

    /// The wall as a duration.
    pub fn wall(&self) -> Duration {
        Duration::from_millis(self.wall_milliseconds)
    }

    /// The value of one limit, as a number in its unit.
    pub const fn value(&self, limit: Limit) -> u64 {
        match limit {
            Limit::InputBytes => self.input_bytes as u64,
            Limit::OutputBytes => self.output_bytes as u64,
            Limit::SourceBytes => self.source_bytes as u64,
            Limit::HeapBytes => self.heap_bytes as u64,
            Limit::StackBytes => self.stack_bytes as u64,
            Limit::WallMilliseconds => self.wall_milliseconds,
            Limit::LogBytes => self.log_bytes as u64,
            Limit::OutputDepth => self.output_depth as u64,
        }
    }

    /// All limits with their names and values, for receipts and `inspect`.
    pub fn entries(&self) -> Vec<(Limit, u64)> {
        Limit::ALL.into_iter().map(|l| (l, self.value(l))).collect()
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::CEILING
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_never_widens() {
        let wide = Limits {
            input_bytes: usize::MAX,
            wall_milliseconds: 1_000_000,
            ..Limits::CEILING
        };
        let n = wide.narrow();
        assert_eq!(n.input_bytes, Limits::CEILING.input_bytes);
        assert_eq!(n.wall_milliseconds, 30_000);
    }

    #[test]
    fn zero_and_values_above_the_ceiling_are_refused() {
        assert!(Limits::CEILING.check().is_ok());
        let zero_log = Limits {
            log_bytes: 0,
            ..Limits::CEILING
        };
        assert!(
            zero_log.check().is_ok(),
            "an empty console budget is a budget"
        );
        for limit in Limit::ALL {
            let mut wide = Limits::CEILING;
            let mut zero = Limits::CEILING;
            let set = |l: &mut Limits, v: u64| match limit {
                Limit::InputBytes => l.input_bytes = v as usize,
                Limit::OutputBytes => l.output_bytes = v as usize,
                Limit::SourceBytes => l.source_bytes = v as usize,
                Limit::HeapBytes => l.heap_bytes = v as usize,
                Limit::StackBytes => l.stack_bytes = v as usize,
                Limit::WallMilliseconds => l.wall_milliseconds = v,
                Limit::LogBytes => l.log_bytes = v as usize,
                Limit::OutputDepth => l.output_depth = v as usize,
            };
            let above = match limit {
                Limit::WallMilliseconds => 30_001,
                _ => Limits::CEILING.value(limit) + 1,
            };
            set(&mut wide, above);
            let e = wide.check().expect_err("above the ceiling");
            assert!(e.contains(limit.name()), "{e}");
            set(&mut zero, 0);
            assert_eq!(
                zero.check().is_ok(),
                limit == Limit::LogBytes,
                "{limit} = 0"
            );
        }
    }

    #[test]
    fn wall_is_clamped_to_declared_range() {
        assert_eq!(
            Limits::CEILING
                .with_wall(Duration::from_millis(10))
                .wall_milliseconds,
            1_000
        );
        assert_eq!(
            Limits::CEILING
                .with_wall(Duration::from_secs(99))
                .wall_milliseconds,
            30_000
        );
    }
}
