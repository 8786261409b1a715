//! The no-host worker as its own executable, for embedders and tests. `runx __worker` is the
//! same program.
fn main() {
    std::process::exit(runx_worker::worker_main());
}
