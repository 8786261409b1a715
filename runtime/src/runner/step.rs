//! What a runner is given and what it gives back: the [`Step`] to run, the [`RunContext`] the
//! runtime lends it, and what it [`Ran`].

use crate::environment::EnvSource;
use crate::failure::RunError;
use crate::pools::Workers;
use crate::progress::ProgressSink;
use crate::subprocess::Capture;
use runx_profile::{AppliedLimits, PageSource, Profile, Runner};
use runx_receipts::{ArtifactProvenance, ProcessRecord};
use runx_worker::{CancelToken, ConsoleLog};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// A runner about to run: its package and declaration, and the inputs and environment values
/// it was given (defaults applied, declared names only).
pub(crate) struct Step<'a> {
    pub profile: &'a Profile,
    pub runner: &'a Runner,
    pub inputs: Map<String, Value>,
    pub environment: BTreeMap<String, String>,
    /// Where the values came from; a cli-tool's baseline names are read from it too.
    pub env: &'a EnvSource,
    /// The workspace root (`RUNX_CWD`).
    pub workspace: &'a Path,
    /// Called after each page of a paged run.
    pub progress: Option<&'a ProgressSink>,
    /// The artifact path and scope of a paged runner, read from the inputs.
    pub page_source: Option<PageSource>,
    /// Runtime variables a cli-tool child receives besides its inputs (`RUNX_RECEIPT_DIR`, the
    /// receipt verification key).
    pub transport: Vec<(String, String)>,
}

/// What the runtime lends a runner: its workers, the run's cancellation and its identity.
pub(crate) struct RunContext<'a> {
    pub workers: &'a Workers,
    /// Profiles and module closures kept between runs.
    pub packages: &'a crate::packages::Packages,
    /// This run's token (linked under the runtime's).
    pub cancel: &'a CancelToken,
    /// The runtime instance id (part of every `artifact_ref`).
    pub instance: &'a str,
}

/// What a runner produced before the output contract is checked.
pub(crate) struct Produced {
    pub output: Value,
}

/// What a runner records about a run, succeeded or not.
#[derive(Default)]
pub(crate) struct Provenance {
    /// Canonical digest of the inputs the code saw.
    pub input_digest: Option<String>,
    /// Digest of the module bundle of a javascript runner.
    pub bundle_digest: Option<String>,
    /// The engine a javascript runner ran on.
    pub engine: Option<String>,
    /// Every limit that applied.
    pub limits: AppliedLimits,
    /// Where the records of a paged run came from.
    pub artifact: Option<ArtifactProvenance>,
    /// What the supervisor saw of a cli-tool process.
    pub process: Option<ProcessRecord>,
    /// Console output of javascript calls.
    pub log: ConsoleLog,
    /// What a cli-tool wrote to stderr (its kept prefix and full count).
    pub stderr: Option<Capture>,
}

/// What a runner did: its result and its provenance.
pub(crate) struct Ran {
    pub result: Result<Produced, RunError>,
    pub provenance: Provenance,
}

impl Provenance {
    /// The provenance of a run of `runner` before anything ran: the limits that apply to it.
    pub(crate) fn of(runner: &Runner) -> Provenance {
        Provenance {
            limits: runx_profile::limits_for(runner),
            ..Provenance::default()
        }
    }
}

impl Ran {
    /// A run that failed before the runner started.
    pub(crate) fn failed(error: RunError) -> Ran {
        Ran {
            result: Err(error),
            provenance: Provenance::default(),
        }
    }
}
