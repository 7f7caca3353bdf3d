// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! Finds libkvrt: $KVRT_LIB_DIR if set, else the `pkg-config` program
//! (`pkg-config --libs kvrt`, honouring PKG_CONFIG_PATH), else the linker's
//! default search path. Dependents read the directory as DEP_KVRT_LIBDIR
//! (e.g. to set an rpath for their binaries).
use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=KVRT_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");

    let mut dirs: Vec<String> = Vec::new();
    if let Some(dir) = env::var_os("KVRT_LIB_DIR") {
        dirs.push(dir.to_string_lossy().into_owned());
    } else {
        let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
        match Command::new(&pkg_config).args(["--libs", "kvrt"]).output() {
            Ok(out) if out.status.success() => {
                let libs = String::from_utf8_lossy(&out.stdout).into_owned();
                for flag in libs.split_whitespace() {
                    if let Some(dir) = flag.strip_prefix("-L") {
                        dirs.push(dir.to_string());
                    }
                }
            }
            Ok(out) => println!(
                "cargo:warning=`{pkg_config} --libs kvrt` failed ({}); set PKG_CONFIG_PATH or KVRT_LIB_DIR. Trying the default linker path.",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            Err(e) => println!(
                "cargo:warning=cannot run `{pkg_config}` ({e}); set KVRT_LIB_DIR. Trying the default linker path."
            ),
        }
    }
    for dir in &dirs {
        println!("cargo:rustc-link-search=native={dir}");
    }
    if let Some(first) = dirs.first() {
        println!("cargo:libdir={first}");
    }
    println!("cargo:rustc-link-lib=dylib=kvrt");
}
