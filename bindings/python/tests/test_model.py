# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

import array

import pytest

import kvrt
from conftest import model_path


def test_bad_model_path_raises_with_kvrt_message():
    with pytest.raises(kvrt.KvrtError) as ei:
        kvrt.Model("/nonexistent/model.gguf")
    assert ei.value.status in (kvrt.Status.IO, kvrt.Status.NOT_FOUND)
    assert "nonexistent" in ei.value.message


def test_not_a_gguf_file(tmp_path):
    p = tmp_path / "bad.gguf"
    p.write_bytes(b"definitely not a GGUF file, just some bytes")
    with pytest.raises(kvrt.KvrtError) as ei:
        kvrt.Model(p)
    assert ei.value.status is kvrt.Status.BAD_FORMAT


def test_progress_cancel_and_exception():
    seen = []
    with pytest.raises(kvrt.KvrtError) as ei:
        kvrt.Model(model_path(), progress=lambda f, stage: seen.append((f, stage)) or False)
    assert ei.value.status is kvrt.Status.CANCELLED and seen

    def boom(f, stage):
        raise ValueError("boom in progress")

    with pytest.raises(ValueError, match="boom in progress"):
        kvrt.Model(model_path(), progress=boom)


def test_info_tokenizer_chat(model):
    info = model.info()
    assert info["architecture"] == "llama" and info["n_vocab"] == 49152 and info["n_layers"] == 30
    assert len(info["fingerprint"]) == 16 and any(info["fingerprint"])
    toks = model.tokenize("The sky is")
    assert toks == [504, 6376, 314]
    assert model.detokenize(toks) == "The sky is"
    with pytest.raises(kvrt.KvrtError) as ei:
        model.detokenize([1 << 30])
    assert ei.value.status is kvrt.Status.OUT_OF_RANGE
    assert model.is_eog(info["eos_token"]) and not model.is_eog(504)
    assert model.meta("general.architecture") == "llama"
    with pytest.raises(kvrt.KvrtError) as ei:
        model.meta("no.such.key")
    assert ei.value.status is kvrt.Status.NOT_FOUND
    assert "general.architecture" in model.meta_keys()
    assert any(t[0] == "token_embd.weight" for t in model.tensors())
    text = model.chat_apply([("user", "Hi")])
    assert "<|im_start|>user\nHi<|im_end|>" in text and text.endswith("<|im_start|>assistant\n")


def test_prefill_batch_matches_prefill_alone(model):
    a = model.tokenize("The capital of France is")
    b = model.tokenize("def add(a, b):\n    return")
    with kvrt.Context(model, n_ctx=512, n_seq_max=2, n_threads=2) as ctx:
        stats = ctx.prefill_batch([(0, a), (1, b)])
        assert len(stats) == 2 and stats[1].prompt_tokens == len(b)
        batched = ctx.logits(1)
        with kvrt.Context(model, n_ctx=512, n_threads=2) as alone:
            alone.prefill(0, b)
            assert alone.logits(0).tobytes() == batched.tobytes()
        with pytest.raises(kvrt.KvrtError) as ei:
            ctx.prefill_batch([(0, b), (0, a)])
        assert ei.value.status is kvrt.Status.INVALID_ARGUMENT
        assert ctx.seq_length(0) == len(a)
        with pytest.raises(kvrt.KvrtError) as ei:
            ctx.prefill_batch([])
        assert ei.value.status is kvrt.Status.INVALID_ARGUMENT


def test_prefill_logits_reuse(model):
    doc = "Lighthouses guide ships along dangerous coasts. " * 8
    a = model.tokenize(doc + "Question one?")
    b = model.tokenize(doc + "Question two?")
    with kvrt.Context(model, n_ctx=512, n_seq_max=2, n_threads=2) as ctx:
        s = ctx.prefill(0, a)
        assert s.prompt_tokens == len(a) and s.computed_tokens == len(a)
        logits = ctx.logits(0)
        assert isinstance(logits, array.array) and logits.typecode == "f" and len(logits) == 49152
        view = memoryview(logits)
        assert view.format == "f" and view.nbytes == 4 * 49152
        buf = array.array("f", bytes(4 * 49152))
        assert ctx.logits_into(buf, 0) == 49152 and buf == logits
        with pytest.raises(kvrt.KvrtError) as ei:
            ctx.logits_into(bytearray(8), 0)
        assert ei.value.status is kvrt.Status.BUFFER_TOO_SMALL
        s = ctx.prefill(1, b)
        assert s.reused_from_cache >= 16 and s.reused_tokens + s.computed_tokens == len(b)
        assert ctx.seq_kv_bytes(1) > 0
        nxt = max(range(len(logits)), key=logits.__getitem__)
        ctx.decode([0], [nxt])
        assert ctx.seq_length(0) == len(a) + 1
        ctx.seq_release(0)
        with pytest.raises(kvrt.KvrtError) as ei:
            ctx.logits(0)
        assert ei.value.status is kvrt.Status.INVALID_STATE
        with pytest.raises(kvrt.KvrtError) as ei:
            ctx.prefill(5, a)
        assert ei.value.status is kvrt.Status.OUT_OF_RANGE
        with pytest.raises(kvrt.KvrtError) as ei:
            ctx.prefill(0, [-1])
        assert ei.value.status is kvrt.Status.OUT_OF_RANGE
        assert ctx.cache_stats()["hit_tokens"] >= 16
        with kvrt.Context(model, n_ctx=512, n_threads=2, share_cache_with=ctx) as other:
            assert other.prefill(0, a).reused_from_cache >= 16
    with pytest.raises(kvrt.ClosedError):
        ctx.prefill(0, a)
    ctx.close()


def test_generate_streams_and_callback_exceptions(model):
    prompt = model.tokenize(model.chat_apply([("user", "What is the capital of France?")]), parse_special=True)
    with kvrt.Context(model, n_ctx=512, n_seq_max=2, n_threads=2) as ctx:
        pieces, streamed = [], []

        def on_token(t, text):
            pieces.append(text)
            if t >= 0:  # -1: a final flush of held-back text
                streamed.append(t)

        s = ctx.generate(0, prompt, max_tokens=8, on_token=on_token)
        assert 1 <= s.generated_tokens <= 8 and len(streamed) == s.generated_tokens
        assert 0 < s.sample_s and s.sample_s + s.decode_s < 60  # the sampler's time (0.5), outside decode_s
        assert "".join(pieces) == model.detokenize(streamed)
        assert s.stop_reason in (kvrt.STOP_MAX_TOKENS, kvrt.STOP_EOG)
        n = []
        s = ctx.generate(0, prompt, max_tokens=8, on_token=lambda t, text: n.append(t) or len(n) < 2)
        assert s.stop_reason == kvrt.STOP_CALLBACK

        def boom(t, text):
            raise RuntimeError("boom in on_token")

        with pytest.raises(RuntimeError, match="boom in on_token"):
            ctx.generate(0, prompt, max_tokens=8, on_token=boom)
        with kvrt.Sampler(temperature=0.8, top_k=40, seed=3) as sampler:
            assert ctx.generate(1, prompt, max_tokens=4, sampler=sampler).generated_tokens >= 1
            tok = sampler.sample(ctx.logits(1))
            assert 0 <= tok < 49152
        with pytest.raises(kvrt.ClosedError):
            sampler.sample([1.0, 2.0])
        with pytest.raises(kvrt.KvrtError) as ei:
            kvrt.Sampler(temperature=1.0, top_p=2.0)
        assert ei.value.status is kvrt.Status.INVALID_ARGUMENT


def test_model_close_while_context_lives():
    m = kvrt.Model(model_path())
    ctx = kvrt.Context(m, n_ctx=128, n_threads=2)
    m.close()
    m.close()
    with pytest.raises(kvrt.ClosedError):
        m.tokenize("x")
    with pytest.raises(kvrt.ClosedError):
        kvrt.Context(m)
    assert ctx.prefill(0, [504, 6376, 314]).computed_tokens == 3
    ctx.close()


def test_ced_memory_of_a_dense_model_is_unsupported(model):
    with pytest.raises(kvrt.KvrtError) as ei:
        model.ced_memory(kvrt.DTYPE_F32)
    assert ei.value.status is kvrt.Status.UNSUPPORTED
