# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""A Redis tier whose server is down only costs counted misses: the prefill computes
and equals a cold one bit for bit; a malformed URL is refused."""
import socket

import pytest

import kvrt


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_redis_tier_down_is_a_counted_miss(model):
    doc = [(i * 53) % 800 + 30 for i in range(100)]
    url = f"redis://127.0.0.1:{closed_port()}"
    with kvrt.Context(model, n_ctx=512, n_threads=2, cache_redis=url) as ctx:
        with pytest.raises(kvrt.KvrtError):
            ctx.cache_add_tier(kvrt.TIER_REDIS, "redis://cache:notaport")
        ctx.cache_add_tier(kvrt.TIER_REDIS, url, budget_bytes=1 << 20, timeout_ms=100, key_prefix="kvrt-py-test:")
        st = ctx.prefill(0, doc)
        assert st.computed_tokens == 100 and st.reused_from_remote == 0
        ctx.cache_persist()
        stats = ctx.cache_tier_stats()
        assert len(stats) == 2
        for s in stats:
            assert s["kind"] == kvrt.TIER_REDIS
            assert s["errors"] + s["timeouts"] >= 1
            assert s["hits"] == 0 and s["puts"] == 0 and s["put_failures"] >= 1
        warm = list(ctx.logits(0))
    with kvrt.Context(model, n_ctx=512, n_threads=2, prefix_caching=False) as cold:
        cold.prefill(0, doc)
        assert list(cold.logits(0)) == warm
