// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! Conversions shared by the wrappers: C strings, paths, the
//! (dst, capacity, written) buffer convention, and callbacks that never
//! unwind into C.
use std::any::Any;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use kvrt_sys as sys;

use crate::error::{check, Error, ErrorKind, Result};

pub(crate) fn cstring(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("{what} contains a NUL byte")))
}

pub(crate) fn cpath(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("path {:?} contains a NUL byte", path)))
}

/// Calls `f(dst, capacity, written)` following kvrt's buffer convention: a
/// size query first, then the real call (repeated if the size grew).
pub(crate) fn read_buffer<T: Copy + Default>(
    mut f: impl FnMut(*mut T, usize, *mut usize) -> sys::kvrt_status,
) -> Result<Vec<T>> {
    let mut written = 0usize;
    check(f(std::ptr::null_mut(), 0, &mut written))?;
    let mut buf: Vec<T> = Vec::new();
    loop {
        buf.resize(written.max(1), T::default());
        let status = f(buf.as_mut_ptr(), buf.len(), &mut written);
        if status == sys::KVRT_ERR_BUFFER_TOO_SMALL && written > buf.len() {
            continue;
        }
        check(status)?;
        buf.truncate(written);
        return Ok(buf);
    }
}

/// `read_buffer` for kvrt's text buffers: NUL-terminated, `written` counting the
/// NUL (kvrt/model.h); returns the text without its terminator.
pub(crate) fn read_text(
    f: impl FnMut(*mut std::os::raw::c_char, usize, *mut usize) -> sys::kvrt_status,
) -> Result<Vec<std::os::raw::c_char>> {
    let mut buf = read_buffer::<std::os::raw::c_char>(f)?;
    buf.pop();
    Ok(buf)
}

/// The state a C callback trampoline reaches through `user_data`: the Rust
/// closure and the panic it raised, if any (resumed once the C call has
/// returned, so no unwinding crosses the C frames).
pub(crate) struct Callback<'a, F: ?Sized> {
    pub f: &'a mut F,
    pub panic: Option<Box<dyn Any + Send + 'static>>,
}

impl<'a, F: ?Sized> Callback<'a, F> {
    pub fn new(f: &'a mut F) -> Self {
        Callback { f, panic: None }
    }

    /// Runs the closure, catching a panic. Returns the C return value:
    /// 0 to continue, 1 to stop (the closure said stop, or it panicked).
    pub fn call(&mut self, run: impl FnOnce(&mut F) -> bool) -> i32 {
        if self.panic.is_some() {
            return 1;
        }
        let f = &mut *self.f;
        match catch_unwind(AssertUnwindSafe(|| run(f))) {
            Ok(true) => 0,
            Ok(false) => 1,
            Err(payload) => {
                self.panic = Some(payload);
                1
            }
        }
    }

    /// Re-raises a panic caught in the callback, now that C is off the stack.
    pub fn resume(self) {
        if let Some(payload) = self.panic {
            std::panic::resume_unwind(payload);
        }
    }
}
