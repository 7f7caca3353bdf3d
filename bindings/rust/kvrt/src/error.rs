// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! kvrt's errors: the status code of the failed call and the message
//! kvrt_last_error() gave for it on the calling thread.
use std::ffi::CStr;
use std::fmt;

use kvrt_sys as sys;

/// The error codes of `kvrt_status` (common.h). `Other` keeps codes a newer
/// library may add.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    InvalidArgument,
    OutOfMemory,
    CacheFull,
    NotFound,
    OutOfRange,
    BadHandle,
    Io,
    BadFormat,
    Unsupported,
    BufferTooSmall,
    InvalidState,
    Overflow,
    Mismatch,
    Cancelled,
    Internal,
    Other(i32),
}

impl ErrorKind {
    pub fn from_status(status: sys::kvrt_status) -> ErrorKind {
        match status {
            sys::KVRT_ERR_INVALID_ARGUMENT => ErrorKind::InvalidArgument,
            sys::KVRT_ERR_OUT_OF_MEMORY => ErrorKind::OutOfMemory,
            sys::KVRT_ERR_CACHE_FULL => ErrorKind::CacheFull,
            sys::KVRT_ERR_NOT_FOUND => ErrorKind::NotFound,
            sys::KVRT_ERR_OUT_OF_RANGE => ErrorKind::OutOfRange,
            sys::KVRT_ERR_BAD_HANDLE => ErrorKind::BadHandle,
            sys::KVRT_ERR_IO => ErrorKind::Io,
            sys::KVRT_ERR_BAD_FORMAT => ErrorKind::BadFormat,
            sys::KVRT_ERR_UNSUPPORTED => ErrorKind::Unsupported,
            sys::KVRT_ERR_BUFFER_TOO_SMALL => ErrorKind::BufferTooSmall,
            sys::KVRT_ERR_INVALID_STATE => ErrorKind::InvalidState,
            sys::KVRT_ERR_OVERFLOW => ErrorKind::Overflow,
            sys::KVRT_ERR_MISMATCH => ErrorKind::Mismatch,
            sys::KVRT_ERR_CANCELLED => ErrorKind::Cancelled,
            sys::KVRT_ERR_INTERNAL => ErrorKind::Internal,
            other => ErrorKind::Other(other),
        }
    }

    /// The C status code.
    pub fn status(self) -> sys::kvrt_status {
        match self {
            ErrorKind::InvalidArgument => sys::KVRT_ERR_INVALID_ARGUMENT,
            ErrorKind::OutOfMemory => sys::KVRT_ERR_OUT_OF_MEMORY,
            ErrorKind::CacheFull => sys::KVRT_ERR_CACHE_FULL,
            ErrorKind::NotFound => sys::KVRT_ERR_NOT_FOUND,
            ErrorKind::OutOfRange => sys::KVRT_ERR_OUT_OF_RANGE,
            ErrorKind::BadHandle => sys::KVRT_ERR_BAD_HANDLE,
            ErrorKind::Io => sys::KVRT_ERR_IO,
            ErrorKind::BadFormat => sys::KVRT_ERR_BAD_FORMAT,
            ErrorKind::Unsupported => sys::KVRT_ERR_UNSUPPORTED,
            ErrorKind::BufferTooSmall => sys::KVRT_ERR_BUFFER_TOO_SMALL,
            ErrorKind::InvalidState => sys::KVRT_ERR_INVALID_STATE,
            ErrorKind::Overflow => sys::KVRT_ERR_OVERFLOW,
            ErrorKind::Mismatch => sys::KVRT_ERR_MISMATCH,
            ErrorKind::Cancelled => sys::KVRT_ERR_CANCELLED,
            ErrorKind::Internal => sys::KVRT_ERR_INTERNAL,
            ErrorKind::Other(code) => code,
        }
    }
}

/// A failed kvrt call: its status and kvrt's message naming the problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// Builds the error of a failed call from the thread's last error.
    pub(crate) fn from_last(status: sys::kvrt_status) -> Error {
        // SAFETY: kvrt_last_error never returns NULL; the string is valid until
        // the next kvrt call on this thread and is copied at once.
        let message = unsafe { CStr::from_ptr(sys::kvrt_last_error()) }.to_string_lossy().into_owned();
        Error { kind: ErrorKind::from_status(status), message }
    }

    /// An error the binding raises itself before calling kvrt (e.g. a string
    /// holding a NUL byte).
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into() }
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The C status code (negative).
    pub fn status(&self) -> i32 {
        self.kind.status()
    }
    /// kvrt's name for the status, e.g. "KVRT_ERR_NOT_FOUND".
    pub fn status_name(&self) -> &'static str {
        status_name(self.kind.status())
    }
    /// kvrt's detailed message (kvrt_last_error()).
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// kvrt_status_string(status).
pub fn status_name(status: i32) -> &'static str {
    // SAFETY: the result is a static NUL-terminated string.
    unsafe { CStr::from_ptr(sys::kvrt_status_string(status)) }.to_str().unwrap_or("KVRT_ERR_UNKNOWN")
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status_name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Turns a status into a Result, reading the message on failure.
#[inline]
pub(crate) fn check(status: sys::kvrt_status) -> Result<()> {
    if status == sys::KVRT_OK {
        Ok(())
    } else {
        Err(Error::from_last(status))
    }
}
