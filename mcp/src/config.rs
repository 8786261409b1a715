//! How a server runs: the bounds and working directory of `runx serve`, the environment its
//! steps may read, where receipts go.

use runx_serve::ServeConfig;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How a server runs.
#[derive(Clone, Debug)]
pub struct McpConfig {
    /// `runx serve`'s settings: calls run at once (and workers), calls waiting, the longest
    /// message in bytes, and the working directory (every run's workspace, `RUNX_CWD`).
    pub serve: ServeConfig,
    /// Values set with `--env NAME=VALUE`, over the server's own environment. A step sees only
    /// the names its runner declares, as with `runx skill`.
    pub env: BTreeMap<String, String>,
    /// Where receipts go; `<working directory>/.runx/receipts` when `None`.
    pub receipt_dir: Option<PathBuf>,
}

impl McpConfig {
    /// `serve`'s bounds, no `--env` values, receipts in the default place.
    pub fn new(serve: ServeConfig) -> McpConfig {
        McpConfig {
            serve,
            env: BTreeMap::new(),
            receipt_dir: None,
        }
    }
}
