//! What a process that holds receipt keys does about them: whether it must sign, and keeping
//! other processes out of its memory.

use crate::keys::KeyError;
use crate::names::REQUIRE_SIGNED_ENV;

/// Whether `RUNX_RECEIPT_REQUIRE_SIGNED` asks for signed receipts (`1`/`true`/`yes`; unset,
/// empty, `0`/`false`/`no` do not).
pub fn require_signed_from_env() -> Result<bool, KeyError> {
    let Some(value) = std::env::var_os(REQUIRE_SIGNED_ENV) else {
        return Ok(false);
    };
    match value
        .to_str()
        .map(|v| v.trim().to_ascii_lowercase())
        .as_deref()
    {
        Some("" | "0" | "false" | "no") => Ok(false),
        Some("1" | "true" | "yes") => Ok(true),
        _ => Err(KeyError::Malformed {
            name: REQUIRE_SIGNED_ENV,
            problem: "is neither `1`/`true`/`yes` nor `0`/`false`/`no`".to_string(),
        }),
    }
}

/// Makes this process non-dumpable (Linux), so that processes of the same user, the cli-tool
/// children among them, cannot read its environment or memory through `/proc` or `ptrace`,
/// where a signing key given in the environment would be visible. A process with
/// `CAP_SYS_PTRACE` (root) still can. Called once a signing key is loaded; failure is logged
/// and not fatal (the key is never *given* to a child either way).
pub fn guard_process() {
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        tracing::warn!("cannot make runx non-dumpable: {e}");
    }
}
