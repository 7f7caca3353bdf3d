// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Finds libkvrt at run time where kvrt-sys found it at build time (rpath),
// so the example runs from a non-system prefix without LD_LIBRARY_PATH.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_KVRT_LIBDIR");
    if let Ok(dir) = std::env::var("DEP_KVRT_LIBDIR") {
        println!("cargo:rustc-link-arg-bins=-Wl,-rpath,{dir}");
    }
}
