//! An invoke request as the session works on it, and the failure a malformed request gets.

use crate::wire::failure::{Failure, FailureCode};
use crate::wire::message::PageLayout;
use runx_rules::Limits;
use std::collections::BTreeMap;

/// An invoke request: what the host asked for, apart from its bundle.
pub(super) struct Invoke {
    /// The call id the host used.
    pub(super) id: u64,
    pub(super) export: Option<String>,
    pub(super) environment: BTreeMap<String, String>,
    pub(super) limits: Limits,
    pub(super) input_len: u32,
    pub(super) page: Option<PageLayout>,
    /// The paged run of a call that is not a page (a fold); a page names its run itself.
    pub(super) run: Option<u64>,
    /// Whether the call is the next page of the run the worker's last call belonged to.
    pub(super) continues: bool,
    /// Load and check the export only; no call.
    pub(super) probe: bool,
    /// The module instance lives for the run's calls on this worker (a paged runner's
    /// `module: partition`), not for this call alone.
    pub(super) keep_module: bool,
}

/// The failure of a request the worker cannot read or will not take.
pub(super) fn invalid(message: impl Into<String>) -> Failure {
    Failure::new(FailureCode::InvalidRequest, message)
}
