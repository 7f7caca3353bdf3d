// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors
//! Context::prefill_logits / logits_at on the real model: each requested position's
//! logits equal that prefix's own last-position logits, bit for bit; bad positions and
//! unrequested reads are errors with the C status.
#![cfg(feature = "runtime")]

use kvrt::{Context, ContextOptions, ErrorKind, Model, TokenizeFlags};

mod support;
#[allow(unused_imports)]
use support::{model, model_path};

#[test]
fn logits_at_positions_equal_each_prefix_alone() {
    let p = model_path();
    let m = Model::load(&p).unwrap_or_else(|e| panic!("{}: {e} (run scripts/setup.sh)", p.display()));
    let mut ctx = Context::new(&m, &ContextOptions { n_ctx: 128, n_batch: 3, n_threads: 2, ..Default::default() }).unwrap();
    let mut alone = Context::new(&m, &ContextOptions { n_ctx: 128, n_threads: 2, ..Default::default() }).unwrap();
    let toks = m.tokenize("The quick brown fox jumps over the lazy dog, then rests in the shade.", TokenizeFlags::default()).unwrap();
    let pos = [1u32, 4, toks.len() as u32 - 1];
    let s = ctx.prefill_logits(0, &toks, &pos).unwrap();
    assert_eq!(s.computed_tokens as usize, toks.len());
    for &q in &pos {
        let got = ctx.logits_at(0, q as usize).unwrap();
        alone.prefill(0, &toks[..q as usize + 1]).unwrap();
        let want = alone.logits(0).unwrap();
        assert_eq!(got.len(), want.len());
        assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "position {q}");
        alone.seq_release(0).unwrap();
    }
    assert_eq!(ctx.logits_at(0, 2).unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(ctx.prefill_logits(0, &toks, &[3, 3]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(ctx.prefill_logits(0, &toks, &[toks.len() as u32]).unwrap_err().kind(), ErrorKind::OutOfRange);
    assert_eq!(ctx.prefill_logits(0, &toks, &[]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert!(ctx.logits_at(0, 4).is_ok(), "the failed calls changed nothing");
}
