# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""A conversation saved and restored through the Python binding, and the disk tier:
restored == never stopped (another process saves, this one loads and runs 32
greedy decode steps: bit-identical logits), fork, truncate, tokens, a refused
mismatch, and a document prefix reloaded from a disk tier by a fresh context."""
import os
import subprocess
import sys

import pytest

import kvrt

from conftest import model_path

PROMPT = [(i * 7919 + 13) % 1000 + 1 for i in range(40)]
WARM, STEPS = 4, 32

SAVER = r"""
import sys, kvrt
m = kvrt.Model(sys.argv[1])
ctx = kvrt.Context(m, n_ctx=512, n_seq_max=2, n_threads=2)
ctx.prefill(1, [int(t) for t in sys.argv[3].split(",")])
for _ in range(%d):
    l = ctx.logits(1)
    ctx.decode([1], [max(range(len(l)), key=l.__getitem__)])
ctx.seq_save(1, sys.argv[2])
""" % WARM


def argmax(l):
    return max(range(len(l)), key=l.__getitem__)


def steps(ctx, seq, n):
    out = []
    for _ in range(n):
        l = ctx.logits(seq)
        out.append(list(l))
        ctx.decode([seq], [argmax(l)])
    return out


def test_restored_equals_never_stopped(model, tmp_path):
    path = tmp_path / "conv.kvrt"
    env = dict(os.environ)
    # The child imports this very kvrt package (pytest put it on sys.path, not in the environment).
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(kvrt.__file__)), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", SAVER, model_path(), str(path), ",".join(map(str, PROMPT))],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    with kvrt.Context(model, n_ctx=512, n_seq_max=3, n_threads=2) as ctx:
        ctx.seq_load(2, path)
        assert ctx.seq_tokens(2)[:40] == PROMPT and len(ctx.seq_tokens(2)) == 40 + WARM
        restored = steps(ctx, 2, STEPS)
        ctx.prefill(0, PROMPT)
        steps(ctx, 0, WARM)
        reference = steps(ctx, 0, STEPS)
        assert restored == reference
        # fork and truncate
        ctx.seq_fork(0, 1)
        assert ctx.seq_tokens(1) == ctx.seq_tokens(0)
        ctx.seq_truncate(1, 10)
        assert ctx.seq_tokens(1) == PROMPT[:10]
        with pytest.raises(kvrt.KvrtError):
            ctx.seq_truncate(1, 1000)
        with pytest.raises(kvrt.KvrtError):
            ctx.seq_load(0, tmp_path / "missing.kvrt")
        assert len(ctx.seq_tokens(0)) == 40 + WARM + STEPS  # unchanged by the failed load
    with kvrt.Context(model, n_ctx=512, n_threads=2, block_tokens=32) as other:
        with pytest.raises(kvrt.KvrtError):
            other.seq_load(0, path)  # another block size


def test_seq_restore_loads_or_recomputes(model, tmp_path):
    path = tmp_path / "conv.kvrt"
    with kvrt.Context(model, n_ctx=512, n_seq_max=2, n_threads=2, block_tokens=16) as a:
        a.prefill(0, PROMPT)
        saved = list(a.logits(0))
        a.seq_save(0, path)
        st, recomputed = a.seq_restore(1, path)  # the rows fit: loaded as saved
        assert not recomputed
        assert (st.prompt_tokens, st.reused_tokens, st.computed_tokens) == (40, 40, 0)
        assert list(a.logits(1)) == saved
    with kvrt.Context(model, n_ctx=512, n_seq_max=2, n_threads=2, block_tokens=32) as b:
        with pytest.raises(kvrt.KvrtError):
            b.seq_load(0, path)  # another block size
        st, recomputed = b.seq_restore(0, path)
        assert recomputed and st.prompt_tokens == 40 and st.computed_tokens == 40
        assert b.seq_tokens(0) == PROMPT
        restored = list(b.logits(0))
        b.prefill(1, PROMPT)
        assert list(b.logits(1)) == restored  # a prefill's logits, bit for bit
        with pytest.raises(kvrt.KvrtError):
            b.seq_restore(0, tmp_path / "missing.kvrt")
        with pytest.raises(kvrt.KvrtError):
            b.seq_restore(7, path)
        assert b.seq_tokens(0) == PROMPT  # unchanged by the failed restores


def test_disk_tier_prefix_survives_the_context(model, tmp_path):
    doc = [(i * 37) % 900 + 20 for i in range(200)]
    with kvrt.Context(model, n_ctx=512, n_threads=2, cache_dir=tmp_path / "tier") as ctx:
        ctx.prefill(0, doc)
        assert ctx.cache_persist() == 3  # whole blocks of 64 (the default); the tail block stays in RAM
        assert ctx.cache_tier_stats()[0]["puts"] == 3
    with kvrt.Context(model, n_ctx=512, n_threads=2, cache_dir=tmp_path / "tier") as ctx:
        st = ctx.prefill(0, doc)
        assert st.reused_from_disk == 192 and st.reused_from_ram == 0
        warm = list(ctx.logits(0))
        assert ctx.cache_stats()["tier_loaded_tokens_disk"] == 192
    with kvrt.Context(model, n_ctx=512, n_threads=2, prefix_caching=False) as cold:
        cold.prefill(0, doc)
        assert list(cold.logits(0)) == warm
