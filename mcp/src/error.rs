//! Why a server could not start: a package that does not load, two tools of one name, nothing
//! to serve, an address that cannot be listened on, a token that cannot be read.

use std::path::PathBuf;

/// Why `runx mcp serve` could not start. A call that fails once the server runs is a tool
/// result (`isError: true`) or a JSON-RPC error, never this.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// A package directory does not load.
    #[error("{}: {source}", dir.display())]
    Package {
        /// The directory as given.
        dir: PathBuf,
        /// Why it does not load, or why it lacks the runner asked for.
        #[source]
        source: runx_profile::ProfileError,
    },
    /// Two runners would be served under one tool name.
    #[error(
        "two runners would be the tool `{name}`: runner `{first_runner}` of {} and runner `{second_runner}` of {}; serve the packages from separate servers, or rename one skill",
        first.display(), second.display()
    )]
    Clash {
        /// The tool name.
        name: String,
        /// The first package.
        first: PathBuf,
        /// Its runner.
        first_runner: String,
        /// The second package.
        second: PathBuf,
        /// Its runner.
        second_runner: String,
    },
    /// No package given has a runner this runtime runs.
    #[error("no tool to serve: none of the packages has a javascript or cli-tool runner{}", runner.as_ref().map(|r| format!(" named `{r}`")).unwrap_or_default())]
    NoTools {
        /// The runner asked for, if one was.
        runner: Option<String>,
    },
    /// The HTTP address cannot be listened on.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A non-loopback address without a bearer token, or a token file that cannot be used.
    #[error("{0}")]
    Token(String),
    /// The async runtime could not start.
    #[error("cannot start the server's threads: {0}")]
    Start(#[source] std::io::Error),
}
