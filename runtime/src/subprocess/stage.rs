//! Delivering the input object to a cli-tool as files and inline mirrors.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::error::SubprocessError;
use runx_profile::{INPUT_INLINE, INPUTS_JSON_INLINE};

/// Name of the complete input object inside the staging directory.
const INPUTS_FILE: &str = "inputs.json";

/// Normalises an input key for `RUNX_INPUT_<NAME>`: every run of characters
/// other than ASCII letters/digits becomes one `_`, separators at either end
/// are dropped, letters are uppercased. `None` when nothing remains.
pub fn normalize_input_name(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    let mut separator_pending = false;
    for ch in name.chars() {
        if ch.is_ascii_alphanumeric() {
            if separator_pending && !out.is_empty() {
                out.push('_');
            }
            separator_pending = false;
            out.push(ch.to_ascii_uppercase());
        } else {
            separator_pending = true;
        }
    }
    if out.is_empty() { None } else { Some(out) }
}

/// Private staging directory (mode `0700`) holding `inputs.json` and one file
/// per input value. Dropping it removes the directory and its contents.
#[derive(Debug)]
pub struct InputFiles {
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "held so the directory lives as long as the files")
    )]
    dir: tempfile::TempDir,
}

impl InputFiles {
    /// The staging directory.
    #[cfg(test)]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Writes the input object to a fresh private directory and returns the
/// environment pairs that deliver it:
///
/// * `RUNX_INPUTS_PATH` – always; the whole object as JSON.
/// * `RUNX_INPUTS_JSON` – when that JSON is at most 48 KiB.
/// * `RUNX_INPUT_<NAME>_PATH` – always, one file per input; a string value is
///   written as its raw text, anything else as serialized JSON.
/// * `RUNX_INPUT_<NAME>` – when the value text is at most 8 KiB (and contains
///   no NUL, which an environment value cannot carry).
pub fn stage_inputs(
    inputs: &serde_json::Map<String, serde_json::Value>,
) -> Result<(InputFiles, Vec<(String, String)>), SubprocessError> {
    // Every name is checked before anything touches the filesystem.
    let entries = normalized_names(inputs)?;
    let dir = tempfile::Builder::new()
        .prefix("runx-inputs-")
        .tempdir()
        .map_err(|e| SubprocessError::io("cannot create a temporary input directory", e))?;
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).map_err(|e| {
        SubprocessError::io(
            format!(
                "cannot restrict input directory `{}` to mode 0700",
                dir.path().display()
            ),
            e,
        )
    })?;
    let dir_str = dir
        .path()
        .to_str()
        .ok_or_else(|| {
            SubprocessError::io(
                format!(
                    "temporary directory `{}` is not valid UTF-8; set TMPDIR to a UTF-8 path",
                    dir.path().display()
                ),
                io::Error::from(io::ErrorKind::InvalidData),
            )
        })?
        .to_string();

    let mut env = Vec::with_capacity(2 + 2 * entries.len());

    let whole = serde_json::to_string(inputs).map_err(|e| {
        SubprocessError::io("cannot serialize the input object", io::Error::other(e))
    })?;
    let inputs_path = dir.path().join(INPUTS_FILE);
    write_private_file(&inputs_path, whole.as_bytes())?;
    env.push((
        "RUNX_INPUTS_PATH".to_string(),
        format!("{dir_str}/{INPUTS_FILE}"),
    ));
    if whole.len() as u64 <= INPUTS_JSON_INLINE.max {
        env.push(("RUNX_INPUTS_JSON".to_string(), whole));
    }

    for (name, value) in entries {
        let text = match value {
            serde_json::Value::String(s) => s.clone(),
            other => serde_json::to_string(other).map_err(|e| {
                SubprocessError::io(
                    format!("cannot serialize input `{name}`"),
                    io::Error::other(e),
                )
            })?,
        };
        let file_name = format!("input_{name}");
        write_private_file(&dir.path().join(&file_name), text.as_bytes())?;
        env.push((
            format!("RUNX_INPUT_{name}_PATH"),
            format!("{dir_str}/{file_name}"),
        ));
        if text.len() as u64 <= INPUT_INLINE.max && !text.contains('\0') {
            env.push((format!("RUNX_INPUT_{name}"), text));
        }
    }

    Ok((InputFiles { dir }, env))
}

/// Each input with its normalised name. Refused: a key with no name, and any two keys whose
/// variables would meet: the same name (`doc`, `Doc`), or one key's inline variable on
/// another's path variable (`doc_path` sets `RUNX_INPUT_DOC_PATH`, which `doc`'s file path
/// owns). Either way one value would silently replace the other, letting a caller point the
/// tool at a file of its choosing.
fn normalized_names(
    inputs: &serde_json::Map<String, serde_json::Value>,
) -> Result<Vec<(String, &serde_json::Value)>, SubprocessError> {
    let mut by_name: BTreeMap<String, &str> = BTreeMap::new();
    let mut entries = Vec::with_capacity(inputs.len());
    for (key, value) in inputs {
        let name = normalize_input_name(key)
            .ok_or_else(|| SubprocessError::InvalidInputName { key: key.clone() })?;
        if let Some(first) = by_name.get(&name) {
            return Err(SubprocessError::InputNameCollision {
                first: (*first).to_string(),
                second: key.clone(),
                name,
            });
        }
        by_name.insert(name.clone(), key.as_str());
        entries.push((name, value));
    }
    for (name, key) in &by_name {
        let path_var = format!("{name}_PATH");
        if let Some(other) = by_name.get(&path_var) {
            return Err(SubprocessError::InputNameCollision {
                first: (*key).to_string(),
                second: (*other).to_string(),
                name: path_var,
            });
        }
    }
    Ok(entries)
}

fn write_private_file(path: &Path, bytes: &[u8]) -> Result<(), SubprocessError> {
    let context = || format!("cannot write input file `{}`", path.display());
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| SubprocessError::io(context(), e))?;
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .map_err(|e| SubprocessError::io(context(), e))
}
