// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! A Redis tier whose server is down only costs counted misses: the prefill
//! computes and equals a cold one bit for bit; a malformed URL is refused.
#![cfg(feature = "runtime")]
use std::net::TcpListener;

use kvrt::{Context, ContextOptions};

mod support;
#[allow(unused_imports)]
use support::{model, model_path};


fn ctx(prefix_caching: bool) -> Context {
    Context::new(model(), &ContextOptions { n_ctx: 512, n_threads: 2, block_tokens: 16, prefix_caching,
                                            ..Default::default() })
        .unwrap()
}

#[test]
fn redis_tier_down_is_a_counted_miss() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port(); // closed again
    let url = format!("redis://127.0.0.1:{port}");
    let doc: Vec<i32> = (0..100).map(|i| (i * 53 % 800 + 30) as i32).collect();
    let mut a = ctx(true);
    assert!(a.cache_add_redis_tier("redis://cache:notaport", 0, 100, None).is_err());
    a.cache_add_redis_tier(&url, 1 << 20, 100, Some("kvrt-rust-test:")).unwrap();
    let st = a.prefill(0, &doc).unwrap();
    assert_eq!((st.computed_tokens, st.reused_from_remote), (100, 0));
    a.cache_persist().unwrap();
    let ts = a.cache_tier_stats().unwrap();
    assert_eq!(ts.len(), 1);
    assert_eq!(ts[0].kind, kvrt::sys::KVRT_TIER_REDIS);
    assert!(ts[0].errors + ts[0].timeouts >= 1);
    assert_eq!((ts[0].hits, ts[0].puts), (0, 0));
    assert!(ts[0].put_failures >= 1);
    let warm = a.logits(0).unwrap();
    let mut cold = ctx(false);
    cold.prefill(0, &doc).unwrap();
    assert!(cold.logits(0).unwrap() == warm, "a prefill with Redis down must equal a cold one bit for bit");
}
