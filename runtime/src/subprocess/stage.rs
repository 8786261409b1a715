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
/// The start of a staging directory's name.
const STAGING_PREFIX: &str = "runx-inputs-";

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

/// The staging of one input object, computed before anything is written: the text of
/// `inputs.json` and of every input's file, and which of them are also passed inline. A run
/// writes it ([`Staging::write`]); a dry run only reports it ([`Staging::files`],
/// [`Staging::env`]).
#[derive(Debug)]
pub struct Staging {
    /// The whole input object as JSON (`inputs.json`).
    whole: String,
    /// One file per input, in input order.
    inputs: Vec<StagedInput>,
}

/// One input's file and variables.
#[derive(Debug)]
struct StagedInput {
    /// The normalised name (`THREAD_TITLE`).
    name: String,
    /// The value as written: a string as its raw text, anything else as JSON.
    text: String,
}

/// A file a run stages: its name in the staging directory and its size.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StagedFile {
    /// The file's name inside the staging directory (`inputs.json`, `input_THREAD_TITLE`).
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Computes the staging of `inputs` without touching the filesystem; every name is checked
/// here, so a refusal comes before any file is written.
pub fn plan_staging(
    inputs: &serde_json::Map<String, serde_json::Value>,
) -> Result<Staging, SubprocessError> {
    let entries = normalized_names(inputs)?;
    let whole = serde_json::to_string(inputs).map_err(|e| {
        SubprocessError::io("cannot serialize the input object", io::Error::other(e))
    })?;
    let mut staged = Vec::with_capacity(entries.len());
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
        staged.push(StagedInput { name, text });
    }
    Ok(Staging {
        whole,
        inputs: staged,
    })
}

impl Staging {
    /// The files a run writes, `inputs.json` first.
    pub fn files(&self) -> Vec<StagedFile> {
        let file = |name: String, text: &str| StagedFile {
            name,
            bytes: text.len() as u64,
        };
        std::iter::once(file(INPUTS_FILE.to_string(), &self.whole))
            .chain(self.inputs.iter().map(|i| file(i.file_name(), &i.text)))
            .collect()
    }

    /// The environment pairs that deliver the inputs from the staging directory `dir`:
    ///
    /// * `RUNX_INPUTS_PATH` – always; the whole object as JSON.
    /// * `RUNX_INPUTS_JSON` – when that JSON is at most 48 KiB.
    /// * `RUNX_INPUT_<NAME>_PATH` – always, one file per input; a string value is
    ///   written as its raw text, anything else as serialized JSON.
    /// * `RUNX_INPUT_<NAME>` – when the value text is at most 8 KiB (and contains
    ///   no NUL, which an environment value cannot carry).
    pub fn env(&self, dir: &str) -> Vec<(String, String)> {
        let mut env = Vec::with_capacity(2 + 2 * self.inputs.len());
        env.push((
            "RUNX_INPUTS_PATH".to_string(),
            format!("{dir}/{INPUTS_FILE}"),
        ));
        if self.whole.len() as u64 <= INPUTS_JSON_INLINE.max {
            env.push(("RUNX_INPUTS_JSON".to_string(), self.whole.clone()));
        }
        for input in &self.inputs {
            env.push((
                format!("RUNX_INPUT_{}_PATH", input.name),
                format!("{dir}/{}", input.file_name()),
            ));
            if input.text.len() as u64 <= INPUT_INLINE.max && !input.text.contains('\0') {
                env.push((format!("RUNX_INPUT_{}", input.name), input.text.clone()));
            }
        }
        env
    }

    /// Writes the files to a fresh private directory and returns it with the environment
    /// pairs that deliver them ([`Staging::env`]).
    pub fn write(&self) -> Result<(InputFiles, Vec<(String, String)>), SubprocessError> {
        let dir = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
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
        write_private_file(&dir.path().join(INPUTS_FILE), self.whole.as_bytes())?;
        for input in &self.inputs {
            write_private_file(&dir.path().join(input.file_name()), input.text.as_bytes())?;
        }
        Ok((InputFiles { dir }, self.env(&dir_str)))
    }
}

impl StagedInput {
    fn file_name(&self) -> String {
        format!("input_{}", self.name)
    }
}

/// The name a staging directory would have (`$TMPDIR/runx-inputs-XXXXXX`), for a dry run to
/// size the environment with: the same length as a real one.
pub fn staging_dir_example() -> String {
    std::env::temp_dir()
        .join(format!("{STAGING_PREFIX}XXXXXX"))
        .display()
        .to_string()
}

/// Writes the input object to a fresh private directory and returns the environment pairs
/// that deliver it ([`plan_staging`], then [`Staging::write`]).
pub fn stage_inputs(
    inputs: &serde_json::Map<String, serde_json::Value>,
) -> Result<(InputFiles, Vec<(String, String)>), SubprocessError> {
    plan_staging(inputs)?.write()
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
