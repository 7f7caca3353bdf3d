# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""A CED model (causal encoder-decoder) through the one Model and Context: a
tiny random-weight model written by the installed `kvrt ced-init` ($KVRT_CLI,
else $KVRT_PREFIX/bin/kvrt), run on token ids. An empty $KVRT_CLI (kvrt built
without its program) skips these tests."""
import array
import os
import subprocess

import pytest

import kvrt

TOKENS = [(i * 37 + 11) % 256 for i in range(64)]


def kvrt_cli():
    if "KVRT_CLI" in os.environ:
        if not os.environ["KVRT_CLI"]:
            pytest.skip("KVRT_CLI is empty: kvrt was built without its program")
        return os.environ["KVRT_CLI"]
    prefix = os.environ.get("KVRT_PREFIX")
    assert prefix, "set KVRT_CLI or KVRT_PREFIX (ctest sets them)"
    return os.path.join(prefix, "bin", "kvrt")


@pytest.fixture(scope="module")
def ced_model(tmp_path_factory):
    """The tiny preset: 6 layers, vocab 256, 2 banks, window 8, no vocabulary."""
    path = tmp_path_factory.mktemp("ced") / "ced_tiny.gguf"
    r = subprocess.run([kvrt_cli(), "ced-init", "--preset", "tiny", "-o", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, "kvrt ced-init failed: " + r.stderr
    m = kvrt.Model(path)
    yield m
    m.close()


def ced_context(model, mode, resume, prefix_caching):
    return kvrt.Context(model, n_ctx=256, n_seq_max=2, n_threads=2, block_tokens=4, kv_dtype=kvrt.KV_F32,
                        prefix_caching=prefix_caching, ced_prefill_mode=mode, ced_resume=resume)


def test_info_and_memory_report(ced_model):
    info = ced_model.info()
    assert info["architecture"] == "ced" and info["n_layers"] == 6 and info["n_vocab"] == 256
    with pytest.raises(kvrt.KvrtError) as ei:
        ced_model.tokenize("hi")
    assert ei.value.status is kvrt.Status.UNSUPPORTED
    mem = ced_model.ced_memory(kvrt.DTYPE_F32)
    assert (mem["n_layers"], mem["n_sources"], mem["window"], mem["elem_bytes"]) == (6, 2, 8, 4)
    assert mem["global_bytes_per_token"] == mem["main_bytes_per_token"] + mem["indexer_bytes_per_token"]
    assert mem["global_bytes_per_token"] < mem["dense_bytes_per_token"]
    assert ced_model.ced_memory(kvrt.DTYPE_BF16)["elem_bytes"] == 2
    src = ced_model.ced_source(0, kvrt.DTYPE_F32)
    assert (src["layer"], src["ratio"], src["main_bytes_per_token"]) == (1, 2, 32 * 4 / 2)
    with pytest.raises(kvrt.KvrtError) as ei:
        ced_model.ced_source(mem["n_sources"], kvrt.DTYPE_F32)
    assert ei.value.status is kvrt.Status.OUT_OF_RANGE
    with pytest.raises(kvrt.KvrtError) as ei:
        ced_model.ced_memory(7)
    assert ei.value.status is kvrt.Status.INVALID_ARGUMENT


def test_exact_prefill_equals_decode_bit_for_bit(ced_model):
    with ced_context(ced_model, kvrt.CED_PREFILL_EXACT, kvrt.CED_RESUME_AUTO, False) as ctx:
        st = ctx.prefill(0, TOKENS[:30])
        assert (st.prompt_tokens, st.computed_tokens, st.reused_from_cache) == (30, 30, 0) and st.kv_bytes > 0
        prefilled = ctx.logits(0)
        assert len(prefilled) == 256
        ctx.prefill(1, TOKENS[:1])
        for t in TOKENS[1:30]:
            ctx.decode([1], [t])
        assert ctx.seq_length(1) == 30
        decoded = ctx.logits(1)
        # compare the bytes: bit for bit, not merely ==
        assert array.array("f", prefilled).tobytes() == array.array("f", decoded).tobytes()
        with pytest.raises(kvrt.KvrtError) as ei:
            ctx.decode([0], [999])
        assert ei.value.status is kvrt.Status.OUT_OF_RANGE


def test_shared_prefix_is_reused(ced_model):
    with ced_context(ced_model, kvrt.CED_PREFILL_EXACT, kvrt.CED_RESUME_AUTO, True) as ctx:
        ctx.prefill(0, TOKENS[:30])
        st = ctx.prefill(1, TOKENS[:35])
        assert st.reused_tokens > 0 and st.reused_from_cache > 0 and st.computed_tokens < 35, st
    # CED prefill with bounded replay: the bank hit is the 28 tokens of whole blocks of 4
    with ced_context(ced_model, kvrt.CED_PREFILL_CED, kvrt.CED_RESUME_BOUNDED_REPLAY, True) as ctx:
        assert ctx.prefill(0, TOKENS[:30]).computed_tokens == 30
        assert ctx.prefill(1, TOKENS[:35]).reused_from_cache == 28


def test_bad_ced_option_is_refused(ced_model):
    with pytest.raises(kvrt.KvrtError) as ei:
        kvrt.Context(ced_model, ced_prefill_mode=7)
    assert ei.value.status is kvrt.Status.INVALID_ARGUMENT and "ced_prefill_mode" in ei.value.message


@pytest.fixture(scope="module")
def ced_model32(tmp_path_factory):
    """The tiny preset with 32-wide indexer keys, which 4-bit (FP4) keys need."""
    path = tmp_path_factory.mktemp("ced32") / "ced_tiny32.gguf"
    r = subprocess.run([kvrt_cli(), "ced-init", "--preset", "tiny", "--idx-dim", "32", "-o", str(path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, "kvrt ced-init failed: " + r.stderr
    m = kvrt.Model(path)
    yield m
    m.close()


def test_fp4_banks(ced_model32, ced_model):
    # 4-bit banks: bank rows of 32 are 16 + 2 B, indexer keys 16 + 1 B; r = 2 and r = 1 sources
    assert ced_model32.ced_memory(kvrt.DTYPE_FP4)["global_bytes_per_token"] == (18 + 17) / 2 + (18 + 17)
    logits = []
    for n_batch in (512, 3):  # chunked prefill == one pass, bit for bit
        with kvrt.Context(ced_model32, n_ctx=256, n_threads=2, block_tokens=4, n_batch=n_batch,
                          kv_dtype=kvrt.DTYPE_F32, bank_dtype=kvrt.DTYPE_FP4) as ctx:
            ctx.prefill(0, TOKENS[:40])
            logits.append(array.array("f", ctx.logits(0)).tobytes())
    assert logits[0] == logits[1]
    with kvrt.Context(ced_model32, n_ctx=256, n_threads=2, block_tokens=4, kv_dtype=kvrt.DTYPE_F32) as ctx:
        ctx.prefill(0, TOKENS[:40])
        assert array.array("f", ctx.logits(0)).tobytes() != logits[0]  # f32 banks: other logits
    for bad, model in ((kvrt.DTYPE_I8, ced_model32), (kvrt.DTYPE_FP4, ced_model)):  # a type banks cannot hold,
        with pytest.raises(kvrt.KvrtError) as ei:  # 16-wide indexer keys as 4-bit
            kvrt.Context(model, n_ctx=64, block_tokens=4, bank_dtype=bad)
        assert ei.value.status is kvrt.Status.INVALID_ARGUMENT
