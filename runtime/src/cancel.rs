//! Cancellation of runs: every [`crate::RunRequest`] carries its own [`CancelToken`], linked
//! under its runtime's, so one run can be cancelled (its worker or process group is killed and
//! it ends `interrupted`) and [`crate::Runtime::interrupt`] still stops them all.

pub use runx_worker::cancel::CancelToken;
