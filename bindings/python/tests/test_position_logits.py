# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors
"""kvrt_context_prefill_logits / kvrt_context_get_logits_at through the Python binding:
each requested position's logits equal that prefix's own last-position logits, bit for
bit; bad positions and unrequested reads raise KvrtError with the C status."""
import os

import pytest

import kvrt

pytestmark = pytest.mark.skipif(os.environ.get("KVRT_TEST_RUNTIME") == "0", reason="no runtime API")


def test_logits_at_positions_equal_each_prefix_alone(model):
    toks = model.tokenize("The quick brown fox jumps over the lazy dog, then rests in the shade.")
    pos = [1, 4, len(toks) - 1]
    with kvrt.Context(model, n_ctx=128, n_batch=3, n_threads=2) as ctx, \
            kvrt.Context(model, n_ctx=128, n_threads=2, prefix_caching=False) as alone:
        ctx.prefill(0, toks)
        st = ctx.prefill_logits(0, toks, pos)
        assert st.reused_tokens == 1 and st.computed_tokens == len(toks) - 1
        for p in pos:
            alone.prefill(0, toks[:p + 1])
            assert ctx.logits_at(0, p).tobytes() == alone.logits(0).tobytes()
            alone.seq_release(0)
        assert ctx.logits_at(0, len(toks) - 1).tobytes() == ctx.logits(0).tobytes()
        with pytest.raises(kvrt.KvrtError) as ei:
            ctx.logits_at(0, 2)
        assert ei.value.status is kvrt.Status.NOT_FOUND
        with pytest.raises(kvrt.KvrtError) as ei:
            ctx.prefill_logits(0, toks, [3, 3])
        assert ei.value.status is kvrt.Status.INVALID_ARGUMENT
        with pytest.raises(kvrt.KvrtError) as ei:
            ctx.prefill_logits(0, toks, [len(toks)])
        assert ei.value.status is kvrt.Status.OUT_OF_RANGE
        with pytest.raises(kvrt.KvrtError) as ei:
            ctx.prefill_logits(0, toks, [])
        assert ei.value.status is kvrt.Status.INVALID_ARGUMENT
        assert ctx.logits_at(0, 4).tobytes()  # the failed calls changed nothing
