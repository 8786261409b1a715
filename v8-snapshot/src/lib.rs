//! The V8 startup snapshot of the runx worker: a context in which the worker's prelude ran, and
//! nothing else.
//!
//! Every call of runx's V8 engine gets a context deserialised from this snapshot (the `engine/v8`
//! module of `runx-worker` says why), so what goes into it is fixed when runx is built and out of
//! any package's reach: the prelude's text, the globals a module may see, the names and lengths
//! of the `Math` functions the worker implements natively, V8's version and its flags (a
//! [`Recipe`]). No module, input, environment or file read at run time goes in.
//!
//! The worker's build script makes the snapshot once (`make_for_embedding`) and the worker
//! embeds the blob with the [`Recipe::key_for`] it was made from. A worker compares that key with
//! its own recipe's before it uses the blob, and makes the snapshot when it starts (`make`)
//! when the keys differ or nothing is embedded (a build under `DOCS_RS`, which links no V8, or a
//! cross-compiled one: a snapshot holds the heap layout of the machine that made it). Both paths
//! run the same code on the same recipe.
//!
//! Native functions appear in a snapshot by their index in the isolate's external references
//! (`external_references`), never by address: the build script's placeholders and the
//! worker's own callbacks take the same places, and the placeholders refuse to be called while
//! the snapshot is made.
//!
//! Without the `v8` feature this crate holds only the recipe and its key.
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "v8")]
mod maker;
mod recipe;

pub use recipe::{FLAGS, Recipe};

#[cfg(feature = "v8")]
pub use maker::{Made, Natives, external_references, make, make_for_embedding, v8_version};
