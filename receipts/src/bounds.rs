//! The bounds on the files this crate reads. The limits catalogue of `runx-profile` lists them
//! with every other limit, from these values.

/// A bound on the size of a file read whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileBound {
    /// The stable snake_case name, as the limits catalogue and error messages give it.
    pub name: &'static str,
    /// The most bytes read; a larger file is refused.
    pub max: u64,
}

/// Size of a receipt file `runx receipt verify` and `show` read.
pub const RECEIPT_BYTES: FileBound = FileBound {
    name: "receipt_bytes",
    max: 64 * 1024 * 1024,
};

/// Size of a receipt key file.
pub const KEY_FILE_BYTES: FileBound = FileBound {
    name: "key_file_bytes",
    max: 4 * 1024,
};
