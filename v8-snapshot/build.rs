//! Under `DOCS_RS` the `v8` crate links no V8 library (it type-checks only), so the maker must
//! not reference V8's symbols there: the runx worker's build script links this crate, and a
//! build script is always linked, even by `cargo check`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(runx_v8_unlinked)");
    println!("cargo::rerun-if-env-changed=DOCS_RS");
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var_os("DOCS_RS").is_some() {
        println!("cargo::rustc-cfg=runx_v8_unlinked");
    }
}
