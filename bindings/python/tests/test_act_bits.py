# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors
"""Context(act_bits=...) through the Python binding: the default (0, the same computation as
ACT_BITS_OUTLIERS), 8 and 16 are three different computations; 16 and 9 are deterministic and
keep prefix hit == cold; a value other than 0, 8, 9 or 16 raises KvrtError(INVALID_ARGUMENT)."""
import os

import pytest

import kvrt

pytestmark = pytest.mark.skipif(os.environ.get("KVRT_TEST_RUNTIME") == "0", reason="no runtime API")


def test_act_bits_16_is_its_own_deterministic_mode(model):
    toks = model.tokenize("The lighthouse keeper climbed the stairs and looked out over the sea.")
    with kvrt.Context(model, n_ctx=128, n_threads=2, prefix_caching=False, act_bits=8) as c8, \
            kvrt.Context(model, n_ctx=128, n_threads=2, prefix_caching=False) as cd, \
            kvrt.Context(model, n_ctx=128, n_threads=2, prefix_caching=False, act_bits=16) as c16, \
            kvrt.Context(model, n_ctx=128, n_threads=1, block_tokens=4, act_bits=16) as hit:
        c8.prefill(0, toks)
        c16.prefill(0, toks)
        cd.prefill(0, toks)
        assert c8.logits(0).tobytes() != c16.logits(0).tobytes()
        assert cd.logits(0).tobytes() not in (c8.logits(0).tobytes(), c16.logits(0).tobytes())
        hit.prefill(0, toks[:9])  # publishes blocks of 4, then a hit on them
        hit.seq_release(0)
        st = hit.prefill(0, toks)
        assert st.reused_tokens >= 8
        assert hit.logits(0).tobytes() == c16.logits(0).tobytes()


def test_act_bits_outliers_is_the_default_and_deterministic(model):
    toks = model.tokenize("The lighthouse keeper climbed the stairs and looked out over the sea.")
    with kvrt.Context(model, n_ctx=128, n_threads=2, prefix_caching=False) as cd, \
            kvrt.Context(model, n_ctx=128, n_threads=2, prefix_caching=False, act_bits=kvrt.ACT_BITS_OUTLIERS) as c9, \
            kvrt.Context(model, n_ctx=128, n_threads=1, block_tokens=4, act_bits=kvrt.ACT_BITS_OUTLIERS) as hit:
        cd.prefill(0, toks)
        c9.prefill(0, toks)
        assert c9.logits(0).tobytes() == cd.logits(0).tobytes()
        hit.prefill(0, toks[:9])
        hit.seq_release(0)
        assert hit.prefill(0, toks).reused_tokens >= 8
        assert hit.logits(0).tobytes() == c9.logits(0).tobytes()


def test_act_bits_bad_value_raises(model):
    for bad in (1, 4, 10, 12, 32, -8):
        with pytest.raises(kvrt.KvrtError) as ei:
            kvrt.Context(model, n_ctx=64, act_bits=bad)
        assert ei.value.status is kvrt.Status.INVALID_ARGUMENT
