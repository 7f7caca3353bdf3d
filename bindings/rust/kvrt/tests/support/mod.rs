// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! What the runtime tests share: the real model's path and one loaded copy per test binary.
#![allow(dead_code)]
use std::path::PathBuf;
use std::sync::OnceLock;

use kvrt::Model;

/// $KVRT_MODEL, else ~/.cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf (scripts/setup.sh).
pub fn model_path() -> PathBuf {
    if let Some(p) = std::env::var_os("KVRT_MODEL") {
        return p.into();
    }
    let home = std::env::var_os("HOME").expect("HOME or KVRT_MODEL must be set");
    PathBuf::from(home).join(".cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf")
}

/// The model, loaded once per test binary.
pub fn model() -> &'static Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL.get_or_init(|| {
        let p = model_path();
        Model::load(&p).unwrap_or_else(|e| panic!("{}: {e} (run scripts/setup.sh)", p.display()))
    })
}
