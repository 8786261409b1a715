//! With the feature `v8`: makes the V8 engine's startup snapshot, a context in which the prelude
//! ran and nothing else (`runx-v8-snapshot`), and writes `$OUT_DIR/v8_snapshot.rs`, which
//! `src/engine/v8/snapshot.rs` includes: the blob embedded with its key, or `None` where it
//! cannot be made here (under `DOCS_RS`, which links no V8; when cross-compiling, since a
//! snapshot holds the heap layout of the machine that makes it). A worker with `None` makes the
//! snapshot when it starts, from the same recipe.
//!
//! The recipe is read from the same files the worker compiles: the prelude, the allowed globals
//! and the names and lengths of the native `Math` functions.

#[cfg(feature = "v8")]
#[path = "src/engine/globals.rs"]
#[allow(
    dead_code,
    reason = "the build script reads the allowed globals, not the ones the prelude installs"
)]
mod globals;

#[cfg(feature = "v8")]
#[path = "src/engine/math.rs"]
#[allow(
    dead_code,
    reason = "the build script reads the functions' names and lengths, not their code"
)]
mod math;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    #[cfg(feature = "v8")]
    v8::write_snapshot();
}

#[cfg(feature = "v8")]
mod v8 {
    use crate::globals::ALLOWED_GLOBALS;
    use crate::math::FUNCTIONS;
    use runx_v8_snapshot::{Recipe, make_for_embedding};
    use std::path::PathBuf;

    const PRELUDE: &str = include_str!("src/engine/prelude.js");

    pub(crate) fn write_snapshot() {
        for input in [
            "src/engine/prelude.js",
            "src/engine/globals.rs",
            "src/engine/math.rs",
        ] {
            println!("cargo::rerun-if-changed={input}");
        }
        println!("cargo::rerun-if-env-changed=DOCS_RS");
        let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        let cross = std::env::var("HOST").ok() != std::env::var("TARGET").ok();
        let math: Vec<(&str, i32)> = FUNCTIONS
            .iter()
            .map(|(name, arity)| (*name, arity.length()))
            .collect();
        let recipe = Recipe {
            prelude: PRELUDE,
            globals: ALLOWED_GLOBALS,
            math: &math,
        };
        let made = if cross {
            None
        } else {
            make_for_embedding(&recipe)
        };
        let code = match made {
            None => "None".to_string(),
            Some(Err(e)) => panic!("{e}"),
            Some(Ok(made)) => {
                let blob = out.join("v8_snapshot.bin");
                std::fs::write(&blob, &made.blob)
                    .unwrap_or_else(|e| panic!("cannot write {}: {e}", blob.display()));
                // Aligned as the blob V8 was handed before it was embedded (a heap allocation).
                format!(
                    "{{ #[repr(C, align(16))] struct Aligned<T: ?Sized>(T); \
                     const BLOB: &Aligned<[u8]> = &Aligned(*include_bytes!({:?})); \
                     Some(Embedded {{ blob: &BLOB.0, helpers: {}, key: {:?} }}) }}",
                    blob.display().to_string(),
                    made.helpers,
                    made.key,
                )
            }
        };
        let rs = out.join("v8_snapshot.rs");
        std::fs::write(&rs, code).unwrap_or_else(|e| panic!("cannot write {}: {e}", rs.display()));
    }
}
