// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! A conversation saved and restored (restored == never stopped, with another
//! process saving), fork, truncate, tokens, a refused mismatch, and a prefix
//! reloaded from a disk tier by a fresh context (bit-identical to cold).
#![cfg(feature = "runtime")]
use std::path::PathBuf;
use std::process::Command;

use kvrt::{Context, ContextOptions};

mod support;
#[allow(unused_imports)]
use support::{model, model_path};


fn ctx(n_seq_max: u32, block_tokens: u32, prefix_caching: bool) -> Context {
    Context::new(model(), &ContextOptions { n_ctx: 512, n_seq_max, n_threads: 2, block_tokens, prefix_caching,
                                            ..Default::default() })
        .unwrap()
}

fn prompt() -> Vec<i32> { (0..40).map(|i| ((i * 7919 + 13) % 1000 + 1) as i32).collect() }

fn argmax(l: &[f32]) -> i32 {
    let mut best = 0;
    for i in 0..l.len() {
        if l[i] > l[best] {
            best = i;
        }
    }
    best as i32
}

fn steps(c: &mut Context, seq: i32, n: usize) -> Vec<Vec<f32>> {
    let mut out = Vec::new();
    for _ in 0..n {
        let l = c.logits(seq).unwrap();
        c.decode(&[seq], &[argmax(&l)]).unwrap();
        out.push(l);
    }
    out
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kvrt-rust-state-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The saving process: runs only when the parent test sets KVRT_RUST_SAVE_TO.
#[test]
fn save_child() {
    let Some(path) = std::env::var_os("KVRT_RUST_SAVE_TO") else { return };
    let mut c = ctx(2, 16, true);
    c.prefill(1, &prompt()).unwrap();
    steps(&mut c, 1, 4);
    c.seq_save(1, path.to_str().unwrap()).unwrap();
}

#[test]
fn restored_equals_never_stopped() {
    let dir = temp("restore");
    let path = dir.join("conv.kvrt");
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe).args(["save_child", "--exact", "--test-threads=1"])
                               .env("KVRT_RUST_SAVE_TO", &path).output().unwrap();
    assert!(out.status.success(), "saving process: {}", String::from_utf8_lossy(&out.stderr));
    assert!(path.exists(), "the saving process wrote no file");
    let mut c = ctx(3, 16, true);
    c.seq_load(2, path.to_str().unwrap()).unwrap();
    let toks = c.seq_tokens(2).unwrap();
    assert_eq!(toks.len(), 44);
    assert_eq!(&toks[..40], &prompt()[..]);
    let restored = steps(&mut c, 2, 32);
    c.prefill(0, &prompt()).unwrap();
    steps(&mut c, 0, 4);
    let reference = steps(&mut c, 0, 32);
    assert!(restored == reference, "32 decode steps after save, exit, load differ from the uninterrupted run");
    c.seq_fork(0, 1).unwrap();
    c.seq_truncate(1, 10).unwrap();
    assert_eq!(c.seq_tokens(1).unwrap(), prompt()[..10].to_vec());
    assert!(c.seq_truncate(1, 1000).is_err());
    assert!(c.seq_load(0, dir.join("missing").to_str().unwrap()).is_err());
    assert_eq!(c.seq_length(0).unwrap(), 40 + 4 + 32);
    let mut other = ctx(1, 32, true);
    assert!(other.seq_load(0, path.to_str().unwrap()).is_err(), "another block size must be refused");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn restore_loads_or_recomputes() {
    let dir = temp("restore-any");
    let path = dir.join("conv.kvrt");
    let p = path.to_str().unwrap();
    let mut a = ctx(2, 16, true);
    a.prefill(0, &prompt()).unwrap();
    let saved_logits = a.logits(0).unwrap();
    a.seq_save(0, p).unwrap();
    // The rows fit: loaded as saved.
    let (st, recomputed) = a.seq_restore(1, p).unwrap();
    assert!(!recomputed);
    assert_eq!((st.prompt_tokens, st.reused_tokens, st.computed_tokens), (40, 40, 0));
    assert!(a.logits(1).unwrap() == saved_logits);
    // Another block size: seq_load refuses, seq_restore recomputes (a prefill's logits).
    let mut b = ctx(2, 32, true);
    assert!(b.seq_load(0, p).is_err());
    let (st, recomputed) = b.seq_restore(0, p).unwrap();
    assert!(recomputed);
    assert_eq!((st.prompt_tokens, st.computed_tokens), (40, 40));
    assert_eq!(b.seq_tokens(0).unwrap(), prompt());
    let restored = b.logits(0).unwrap();
    b.prefill(1, &prompt()).unwrap();
    assert!(restored == b.logits(1).unwrap());
    // Failures leave the sequence as it was.
    assert!(b.seq_restore(0, dir.join("missing").to_str().unwrap()).is_err());
    assert!(b.seq_restore(5, p).is_err());
    assert_eq!(b.seq_tokens(0).unwrap(), prompt());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn disk_tier_prefix_survives_the_context() {
    let dir = temp("tier");
    let d = dir.to_str().unwrap();
    let doc: Vec<i32> = (0..200).map(|i| (i * 37 % 900 + 20) as i32).collect();
    {
        let mut a = ctx(1, 16, true);
        a.cache_add_tier(kvrt::sys::KVRT_TIER_DISK, d, 0).unwrap();
        a.prefill(0, &doc).unwrap();
        assert_eq!(a.cache_persist().unwrap(), 12);
    }
    let mut b = ctx(1, 16, true);
    b.cache_add_tier(kvrt::sys::KVRT_TIER_DISK, d, 0).unwrap();
    let st = b.prefill(0, &doc).unwrap();
    assert_eq!((st.reused_from_disk, st.reused_from_ram), (192, 0));
    let ts = b.cache_tier_stats().unwrap();
    assert_eq!(ts.len(), 1);
    assert_eq!(ts[0].loaded_blocks, 12);
    let warm = b.logits(0).unwrap();
    let mut cold = ctx(1, 16, false);
    cold.prefill(0, &doc).unwrap();
    assert!(cold.logits(0).unwrap() == warm, "a disk-tier hit must equal a cold prefill bit for bit");
    assert!(b.cache_add_tier(9, d, 0).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}
