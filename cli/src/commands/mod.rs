//! One file per command, each with its own flags (uv keeps its commands so).

pub mod bench;
pub mod check;
pub mod dry_run;
pub mod harness;
pub mod history;
pub mod hosted;
pub mod inspect;
pub mod mcp;
pub mod receipt;
pub mod serve;
pub mod skill;
pub mod verify;
