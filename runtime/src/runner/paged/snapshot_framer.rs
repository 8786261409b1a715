//! The framer over a snapshot whose admission goes on while pages are framed.

use super::page::Unframed;
use crate::artifact::Artifact;
use crate::failure::RunError;
use crate::framing::{Framer, Page, PageBudget};
use runx_worker::CancelToken;

/// Bytes of the snapshot framing waits to have written past the start of the next page,
/// beyond two pages: the scan of the record after a page needs a little of what follows.
const FILL_SLACK: usize = 1 << 20;

/// The framer over a snapshot whose admission goes on while pages are framed: before each
/// page it waits for the written part to reach a little past where the page can end, and
/// frames from what is written ([`Framer::next_page_from`]); when that cannot settle the
/// page, it waits for twice as much. Pages never wait for more of the snapshot than they
/// cover. An interrupted run stops waiting within
/// [`CANCEL_PATIENCE`](crate::artifact::CANCEL_PATIENCE).
pub(super) struct SnapshotFramer<'a> {
    artifact: &'a Artifact,
    cancel: &'a CancelToken,
    /// Made once the head of the file (up to the opening `[`) is written.
    framer: Option<Framer<'a>>,
}

impl<'a> SnapshotFramer<'a> {
    /// A framer over `artifact` that stops when `cancel` is.
    pub(super) fn new(artifact: &'a Artifact, cancel: &'a CancelToken) -> SnapshotFramer<'a> {
        SnapshotFramer {
            artifact,
            cancel,
            framer: None,
        }
    }

    /// The next page, or why there is none.
    pub(super) fn next_page(&mut self, budget: &PageBudget) -> Result<Option<Page>, Unframed> {
        let total = self.artifact.size();
        let mut ahead = budget
            .page_bytes
            .saturating_mul(2)
            .saturating_add(FILL_SLACK);
        loop {
            let start = self.framer.as_ref().map_or(0, Framer::offset);
            let Some(written) = self
                .artifact
                .filled_unless(start.saturating_add(ahead), self.cancel)
                .map_err(|e| Unframed::Run(e.into()))?
            else {
                return Err(Unframed::Run(RunError::interrupted()));
            };
            let whole = written.len() >= total;
            let framed = match &mut self.framer {
                Some(framer) => framer.next_page_from(written, whole, budget),
                None => match Framer::from_prefix(written, whole) {
                    Some(Ok(framer)) => {
                        self.framer = Some(framer);
                        continue;
                    }
                    Some(Err(e)) => Some(Err(e)),
                    None => None,
                },
            };
            match framed {
                Some(framed) => return framed.map_err(Unframed::Framing),
                None => ahead = ahead.saturating_mul(2),
            }
        }
    }
}
