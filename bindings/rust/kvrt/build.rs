// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Tests and examples of this crate run against the library kvrt-sys found:
// give them an rpath to its directory so they start without LD_LIBRARY_PATH.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_KVRT_LIBDIR");
    if let Ok(dir) = std::env::var("DEP_KVRT_LIBDIR") {
        println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{dir}");
    }
}
