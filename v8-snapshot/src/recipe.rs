//! What a snapshot is made from, and the key that names it.

use sha2::{Digest, Sha256};

/// V8 flags, set once per process before V8 starts: by the worker, and by the build script
/// before it makes the snapshot, which V8 reads back under the same flags. This V8 ships every
/// ES2025 feature QuickJS-ng has (`Float16Array`, `using`, iterator helpers, …) without flags.
/// Two shipped features are turned off, both outside the intrinsics modules may see:
/// - `Atomics.pause`: V8 adds it to every context it deserialises, and fails (a fatal error)
///   when the context comes from a snapshot whose prelude deleted `Atomics`, as every call's
///   context does;
/// - Temporal: the prelude deletes the global, but V8 would install it again in every
///   deserialised context, with `Date.prototype.toTemporalInstant`, a way back to it (and
///   `Temporal.Now` reads the real clock).
///
/// And no work on background threads, so that timing decides no outcome (`--predictable
/// --single-threaded`): with concurrent compilation, the point where a function moves to a
/// faster tier (whose frames are smaller, and which writes other NaN bits) depended on when a
/// background compile finished, so one recursion overflowed at 10,067 or 18,346 frames and a
/// `Float64Array` got other NaN bits from one run to the next; with concurrent or parallel
/// collection, and the memory reducer's timers, 810,000 small objects passed or failed
/// `heap_bytes` from run to run. Compilation and collection now run on the call's thread, at
/// points set by what the call did. It costs a call that allocates much about a third more
/// wall (its collections no longer use the second core) and a tenth less CPU in all
/// (`docs/src/engines.md`, "Recursion depth, and outcomes at a limit").
pub const FLAGS: &str = "--no-js-atomics-pause --no-harmony-temporal --predictable --single-threaded --predictable-gc-schedule";

/// The layout of a recipe's key and of what the maker does with a recipe: part of every key, so
/// a change here refuses every blob made before it.
const FORMAT: &str = "runx-v8-snapshot/2: prelude(console, globals, charge-buffers, math, url); natives console, math, url";

/// What a snapshot is made from: everything that decides its contents.
#[derive(Clone, Copy, Debug)]
pub struct Recipe<'a> {
    /// The prelude's source (`engine/prelude.js` of the worker): a function expression called
    /// with `(sink, allowed, chargeBuffers, math)` that returns the engine's helpers.
    pub prelude: &'a str,
    /// The globals a module may see; the prelude deletes every other string-named global.
    pub globals: &'a [&'a str],
    /// The `Math` functions implemented natively, by name and `length`; each function's index
    /// here is the data its native callback reads.
    pub math: &'a [(&'a str, i32)],
}

impl Recipe<'_> {
    /// A digest of everything the snapshot of this recipe is made from, for a V8 whose version
    /// string is `v8_version` (`v8_version()` gives this build's).
    pub fn key_for(&self, v8_version: &str) -> String {
        let mut hash = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hash.update((bytes.len() as u64).to_be_bytes());
            hash.update(bytes);
        };
        field(FORMAT.as_bytes());
        field(v8_version.as_bytes());
        field(FLAGS.as_bytes());
        field(self.prelude.as_bytes());
        field(&(self.globals.len() as u64).to_be_bytes());
        for global in self.globals {
            field(global.as_bytes());
        }
        field(&(self.math.len() as u64).to_be_bytes());
        for (name, length) in self.math {
            field(name.as_bytes());
            field(&length.to_be_bytes());
        }
        hex::encode(hash.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECIPE: Recipe<'static> = Recipe {
        prelude: "(function () { return {}; })",
        globals: &["Object", "Math"],
        math: &[("sin", 1), ("atan2", 2)],
    };

    #[test]
    fn the_key_covers_every_part_of_the_recipe() {
        let key = RECIPE.key_for("1.2.3");
        assert_eq!(key, RECIPE.key_for("1.2.3"));
        assert_ne!(key, RECIPE.key_for("1.2.4"));
        let changed = [
            Recipe {
                prelude: "(function () { return { x: 1 }; })",
                ..RECIPE
            },
            Recipe {
                globals: &["Object"],
                ..RECIPE
            },
            // The same names moved between fields must not give the same key.
            Recipe {
                globals: &["ObjectMath"],
                ..RECIPE
            },
            Recipe {
                math: &[("sin", 2), ("atan2", 2)],
                ..RECIPE
            },
            Recipe {
                math: &[("atan2", 2), ("sin", 1)],
                ..RECIPE
            },
        ];
        for recipe in changed {
            assert_ne!(recipe.key_for("1.2.3"), key, "{recipe:?}");
        }
    }
}
