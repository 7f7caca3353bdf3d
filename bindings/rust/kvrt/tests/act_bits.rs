// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors
//! ContextOptions::act_bits: the default (0, the same computation as ACT_BITS_OUTLIERS), 8 and
//! 16 are three different computations; 16 and 9 are deterministic and keep prefix hit == cold;
//! a value other than 0, 8, 9 or 16 is InvalidArgument.
#![cfg(feature = "runtime")]

use kvrt::{Context, ContextOptions, ErrorKind, Model, TokenizeFlags};

mod support;
#[allow(unused_imports)]
use support::{model, model_path};

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn act_bits_16_is_its_own_deterministic_mode() {
    let p = model_path();
    let m = Model::load(&p).unwrap_or_else(|e| panic!("{}: {e} (run scripts/setup.sh)", p.display()));
    let toks = m.tokenize("The lighthouse keeper climbed the stairs and looked out over the sea.", TokenizeFlags::default()).unwrap();
    let o = |act_bits, n_threads, prefix_caching| ContextOptions {
        n_ctx: 128, n_threads, block_tokens: 4, prefix_caching, act_bits, ..Default::default()
    };
    let mut c8 = Context::new(&m, &o(8, 2, false)).unwrap();
    let mut c16 = Context::new(&m, &o(16, 2, false)).unwrap();
    let mut cd = Context::new(&m, &ContextOptions { n_ctx: 128, n_threads: 2, prefix_caching: false, ..Default::default() }).unwrap();
    let mut hit = Context::new(&m, &o(16, 1, true)).unwrap();
    c8.prefill(0, &toks).unwrap();
    c16.prefill(0, &toks).unwrap();
    cd.prefill(0, &toks).unwrap();
    assert_ne!(bits(&c8.logits(0).unwrap()), bits(&c16.logits(0).unwrap()));
    let d = bits(&cd.logits(0).unwrap());
    assert_ne!(d, bits(&c8.logits(0).unwrap()));
    assert_ne!(d, bits(&c16.logits(0).unwrap()));
    hit.prefill(0, &toks[..9]).unwrap();
    hit.seq_release(0).unwrap();
    let s = hit.prefill(0, &toks).unwrap();
    assert!(s.reused_tokens >= 8, "reused {}", s.reused_tokens);
    assert_eq!(bits(&hit.logits(0).unwrap()), bits(&c16.logits(0).unwrap()));
    // The outlier residuals: the default's computation (since 0.3.3), and a prefix hit under it
    // equals its cold run.
    let mut c9 = Context::new(&m, &o(kvrt::ACT_BITS_OUTLIERS, 2, false)).unwrap();
    let mut hit9 = Context::new(&m, &o(kvrt::ACT_BITS_OUTLIERS, 1, true)).unwrap();
    c9.prefill(0, &toks).unwrap();
    assert_eq!(bits(&c9.logits(0).unwrap()), d);
    hit9.prefill(0, &toks[..9]).unwrap();
    hit9.seq_release(0).unwrap();
    assert!(hit9.prefill(0, &toks).unwrap().reused_tokens >= 8);
    assert_eq!(bits(&hit9.logits(0).unwrap()), bits(&c9.logits(0).unwrap()));
    for bad in [1, 4, 10, 12, 32, -8] {
        let e = Context::new(&m, &o(bad, 1, true)).err().expect("act_bits must be 0, 8, 9 or 16");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }
}
