// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! A CED model (causal encoder-decoder) through the one Model and Context:
//! a tiny random-weight model written by the installed `kvrt ced-init`
//! ($KVRT_CLI, else $KVRT_PREFIX/bin/kvrt), run on token ids. An empty
//! $KVRT_CLI (a build without the kvrt program) skips the CED test.
#![cfg(feature = "runtime")]
use std::path::PathBuf;
use std::process::Command;

use kvrt::{CedPrefillMode, CedResume, Context, ContextOptions, DType, ErrorKind, KvType, Model, TokenizeFlags};

fn kvrt_cli() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KVRT_CLI") {
        return if p.is_empty() { None } else { Some(p.into()) };
    }
    let prefix = std::env::var_os("KVRT_PREFIX").expect("set KVRT_CLI or KVRT_PREFIX (ctest sets them)");
    Some(PathBuf::from(prefix).join("bin/kvrt"))
}

/// Writes the tiny preset (6 layers, vocab 256, 2 banks, window 8) and loads
/// it; None (skip) without the kvrt program.
fn tiny_ced_model() -> Option<Model> {
    let Some(cli) = kvrt_cli() else {
        eprintln!("KVRT_CLI is empty (kvrt built without its program): CED test skipped");
        return None;
    };
    let path = std::env::temp_dir().join(format!("kvrt-rust-ced-{}.gguf", std::process::id()));
    let out = Command::new(&cli)
        .args(["ced-init", "--preset", "tiny", "-o"])
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", cli.display()));
    assert!(out.status.success(), "kvrt ced-init failed: {}", String::from_utf8_lossy(&out.stderr));
    let model = Model::load(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    Some(model)
}

fn options(mode: CedPrefillMode, resume: CedResume, prefix_caching: bool) -> ContextOptions {
    ContextOptions {
        n_ctx: 256,
        n_seq_max: 2,
        n_threads: 2,
        block_tokens: 4,
        kv_type: KvType::F32,
        prefix_caching,
        ced_prefill_mode: mode,
        ced_resume: resume,
        ..Default::default()
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn ced_model_through_model_and_context() {
    let Some(model) = tiny_ced_model() else { return };
    let info = model.info().unwrap();
    assert_eq!(info.architecture, "ced");
    assert_eq!((info.n_layers, info.n_vocab), (6, 256));
    // no vocabulary in the file: text calls say so, token ids work
    let e = model.tokenize("hi", TokenizeFlags::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");

    // memory report per element type
    let mem = model.ced_memory(DType::F32).unwrap();
    assert_eq!((mem.n_layers, mem.n_sources, mem.window, mem.elem_bytes), (6, 2, 8, 4));
    assert_eq!(mem.global_bytes_per_token, mem.main_bytes_per_token + mem.indexer_bytes_per_token);
    assert!(mem.global_bytes_per_token < mem.dense_bytes_per_token);
    assert_eq!(model.ced_memory(DType::Bf16).unwrap().elem_bytes, 2);
    let src = model.ced_source(0, DType::F32).unwrap();
    assert_eq!((src.layer, src.ratio), (1, 2));
    assert_eq!(src.main_bytes_per_token, 32.0 * 4.0 / 2.0);
    assert_eq!(model.ced_source(mem.n_sources, DType::F32).unwrap_err().kind(), ErrorKind::OutOfRange);

    let tokens: Vec<i32> = (0..64).map(|i| (i * 37 + 11) % 256).collect();

    // exact prefill == token-by-token decode, bit for bit
    let mut ctx = Context::new(&model, &options(CedPrefillMode::Exact, CedResume::Auto, false)).unwrap();
    let st = ctx.prefill(0, &tokens[..30]).unwrap();
    assert_eq!((st.prompt_tokens, st.computed_tokens, st.reused_from_cache), (30, 30, 0));
    assert!(st.kv_bytes > 0);
    let prefilled = ctx.logits(0).unwrap();
    assert_eq!(prefilled.len(), 256);
    assert!(prefilled.iter().all(|x| x.is_finite()));
    ctx.prefill(1, &tokens[..1]).unwrap();
    for &t in &tokens[1..30] {
        ctx.decode(&[1], &[t]).unwrap();
    }
    assert_eq!(ctx.seq_length(1).unwrap(), 30);
    assert_eq!(bits(&ctx.logits(1).unwrap()), bits(&prefilled), "exact prefill vs decode");
    // both sequences in one decode step: each as alone
    ctx.decode(&[0, 1], &[5, 5]).unwrap();
    assert_eq!(bits(&ctx.logits(0).unwrap()), bits(&ctx.logits(1).unwrap()));
    assert_eq!(ctx.decode(&[0], &[999]).unwrap_err().kind(), ErrorKind::OutOfRange);
    drop(ctx);

    // a second prefill sharing a 30-token prefix reuses it from the prefix cache
    let mut ctx = Context::new(&model, &options(CedPrefillMode::Exact, CedResume::Auto, true)).unwrap();
    ctx.prefill(0, &tokens[..30]).unwrap();
    let st = ctx.prefill(1, &tokens[..35]).unwrap();
    assert!(st.reused_tokens > 0 && st.reused_from_cache > 0, "{st:?}");
    assert!(st.computed_tokens < 35, "{st:?}");
    // the CED options: CED prefill with bounded replay also reuses the prefix
    let mut ced = Context::new(&model, &options(CedPrefillMode::Ced, CedResume::BoundedReplay, true)).unwrap();
    let st = ced.prefill(0, &tokens[..30]).unwrap();
    assert_eq!((st.computed_tokens, st.reused_from_cache), (30, 0));
    let st = ced.prefill(1, &tokens[..35]).unwrap();
    assert_eq!(st.reused_from_cache, 28, "{st:?}");
}

#[test]
fn ced_memory_of_another_architecture_is_unsupported() {
    let Some(path) = std::env::var_os("KVRT_MODEL").map(PathBuf::from).or_else(|| {
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    }) else {
        panic!("HOME or KVRT_MODEL must be set")
    };
    let model = Model::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(model.ced_memory(DType::F32).unwrap_err().kind(), ErrorKind::Unsupported);
    assert_eq!(model.ced_source(0, DType::F32).unwrap_err().kind(), ErrorKind::Unsupported);
}

#[test]
fn ced_fp4_banks() {
    let Some(cli) = kvrt_cli() else { return };
    let path = std::env::temp_dir().join(format!("kvrt-rust-ced32-{}.gguf", std::process::id()));
    let out = Command::new(&cli)
        .args(["ced-init", "--preset", "tiny", "--idx-dim", "32", "-o"])
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", cli.display()));
    assert!(out.status.success(), "kvrt ced-init failed: {}", String::from_utf8_lossy(&out.stderr));
    let model = Model::load(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    // 4-bit banks: rows of 32 are 16 + 2 B, indexer keys 16 + 1 B; r = 2 and r = 1 sources.
    assert_eq!(model.ced_memory(DType::Fp4).unwrap().global_bytes_per_token, (18.0 + 17.0) / 2.0 + 35.0);
    let tokens: Vec<i32> = (0..40).map(|i| (i * 53 + 7) % 256).collect();
    let run = |n_batch: u32| {
        let o = ContextOptions {
            n_batch,
            bank_type: Some(KvType::Fp4),
            ..options(CedPrefillMode::Exact, CedResume::Auto, false)
        };
        let mut ctx = Context::new(&model, &o).unwrap();
        ctx.prefill(0, &tokens).unwrap();
        bits(&ctx.logits(0).unwrap())
    };
    assert_eq!(run(512), run(3), "4-bit banks: chunked prefill vs one pass");
    let bad = ContextOptions { bank_type: Some(KvType::I8), ..options(CedPrefillMode::Exact, CedResume::Auto, false) };
    match Context::new(&model, &bad) {
        Err(e) => assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}"),
        Ok(_) => panic!("int8 banks were accepted"),
    }
}
