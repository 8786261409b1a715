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

/// A bound on the values of a JSON document ([`count_values`](crate::count_values)), checked
/// before the document is parsed: the memory of a parsed tree follows its values, not its
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueBound {
    /// The stable snake_case name, as the limits catalogue and error messages give it.
    pub name: &'static str,
    /// The most values (object keys included); a document with more is refused unparsed.
    pub max: u64,
}

impl ValueBound {
    /// Whether `bytes` hold at most [`ValueBound::max`] values. One pass, no allocation; it
    /// stops at the first value past the bound.
    pub fn admits(&self, bytes: &[u8]) -> bool {
        crate::values::count_values(bytes, self.max) <= self.max
    }
}

/// Size of a receipt file `runx receipt verify` and `show` read. A run receipt holds digests,
/// the limits, a failure message of at most 16 KiB and names from its package's `X.yaml` (at
/// most 1 MiB, at most six bytes a character once JSON escapes it): under 8 MiB. A harness
/// receipt grows by about 280 bytes a case as runx writes it, so this holds about 60,000
/// cases.
pub const RECEIPT_BYTES: FileBound = FileBound {
    name: "receipt_bytes",
    max: 16 * 1024 * 1024,
};

/// Values in a receipt file, checked before it is parsed. A run receipt holds about a hundred;
/// a harness receipt 13 a case, so this is about 80,000 cases: the byte bound above binds
/// first for receipts runx writes. A parsed value costs from 32 bytes (a number) to about 230
/// (a member of a one-member object), so a receipt within both bounds parses into at most
/// about 240 MiB whatever its shape (a 60,000-case harness receipt into about 80 MiB), where
/// 64 MiB of `[0,0,...]` took a gigabyte before this bound.
pub const RECEIPT_VALUES: ValueBound = ValueBound {
    name: "receipt_values",
    max: 1024 * 1024,
};

/// Size of a receipt key file.
pub const KEY_FILE_BYTES: FileBound = FileBound {
    name: "key_file_bytes",
    max: 4 * 1024,
};
