//! The crate's one error type. Every fallible public function returns
//! [`Result`]; the Python boundary maps [`Error`] to a `ValueError` subclass in
//! a single place (`python.rs`).

/// Everything that can go wrong when growing, using or loading a forest.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum Error {
    /// A parameter value is outside its valid range.
    #[error("invalid parameter {name}: {reason}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    /// The input matrix or targets are unusable.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// Prediction input does not have the number of features the model was fitted with.
    #[error("X has {got} features, but the model was fitted with {expected} features")]
    FeatureMismatch {
        /// Features at fit time.
        expected: usize,
        /// Features given now.
        got: usize,
    },
    /// A serialized model could not be read.
    #[error("corrupt model data: {0}")]
    CorruptModel(String),
    /// A serialized model comes from a format version this library does not read.
    #[error("model format version {found} is {} the supported version {supported}; {}",
        if found > supported { "newer than" } else { "older than" },
        if found > supported { "upgrade obliqueforest" } else { "refit the model" })]
    UnsupportedVersion {
        /// The model's version.
        found: u32,
        /// The version this library writes.
        supported: u32,
    },
    /// A file could not be read or written (a missing path, a missing permission, a full
    /// disk): the operating system's error, with the path.
    #[error("cannot {action} {path}: {message}")]
    Io {
        /// "read" or "write".
        action: &'static str,
        /// The path as given.
        path: String,
        /// The operating system's error kind.
        kind: std::io::ErrorKind,
        /// The operating system's error number, when it gave one.
        errno: Option<i32>,
        /// The operating system's message.
        message: String,
    },
    /// A fit would exceed the memory limit ([`crate::limits`]).
    #[error("memory limit: {0}")]
    ResourceLimit(String),
    /// Memory for a result or a working buffer could not be allocated (the request is
    /// refused before anything aborts).
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    /// The computation was stopped through its [`crate::Cancel`] token (or Ctrl-C from Python).
    #[error("cancelled")]
    Cancelled,
    /// An internal invariant was broken (a bug); reported instead of panicking.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Shorthand for `std::result::Result<T, obliqueforest::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

/// [`Error::Io`] of `e`, met trying to `action` ("read" or "write") `path`.
pub(crate) fn io_error(action: &'static str, path: &std::path::Path, e: &std::io::Error) -> Error {
    Error::Io {
        action,
        path: path.display().to_string(),
        kind: e.kind(),
        errno: e.raw_os_error(),
        message: e.to_string(),
    }
}

pub(crate) fn invalid(name: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidParameter {
        name,
        reason: reason.into(),
    }
}

/// `Ok` when `value` is a probability (in [0, 1]), else the error naming `name`.
pub(crate) fn check_probability(name: &'static str, value: f64) -> Result<()> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(invalid(name, format!("must be in [0, 1], got {value}")))
    }
}
