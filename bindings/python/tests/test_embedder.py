# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""The embedder's API through the binding: cancellation from another thread,
activity, the per-context lock, generate into buffers and as a generator,
sampler chains, the chat template override, memory control, logging and ISA."""
import threading

import pytest

import kvrt


def _prompt(model, text="The capital of France is"):
    return model.tokenize(text)


def test_generate_result_and_stream(model):
    with kvrt.Context(model, n_ctx=256) as ctx:
        prompt = _prompt(model)
        pieces, toks = [], []
        ctx.generate(0, prompt, max_tokens=8, stop_at_eog=False,
                     on_token=lambda t, text: (pieces.append(text), t >= 0 and toks.append(t)) and None)
        res = {}
        s = ctx.generate(0, prompt, max_tokens=8, stop_at_eog=False, result=res)  # no callback
        assert s.generated_tokens == 8 and res["tokens"] == toks and res["text"] == "".join(pieces)
        gen = ctx.stream(0, prompt, max_tokens=8, stop_at_eog=False)
        got = list(gen)
        assert [t for t, _ in got if t >= 0] == toks and "".join(x for _, x in got) == "".join(pieces)
        # Stopping early cancels the worker; the context is usable right after.
        first = []
        for t, text in ctx.stream(0, prompt, max_tokens=200, stop_at_eog=False):
            first.append(t)
            if len(first) == 2:
                break
        assert first == toks[:2]
        assert ctx.activity().phase == kvrt.PHASE_IDLE
        assert ctx.generate(0, prompt, max_tokens=2).generated_tokens == 2


def test_cancel_from_another_thread(model):
    with kvrt.Context(model, n_ctx=256) as ctx:
        prompt = _prompt(model)
        seen = {}
        go, done = threading.Event(), threading.Event()

        def ui():
            go.wait()
            seen["activity"] = ctx.activity()
            ctx.cancel()
            done.set()

        t = threading.Thread(target=ui)
        t.start()
        n = []

        def on_token(tok, text):
            n.append(tok)
            if len(n) == 3:
                go.set()
                done.wait()

        with pytest.raises(kvrt.KvrtError) as ei:
            ctx.generate(0, prompt, max_tokens=50, stop_at_eog=False, on_token=on_token)
        t.join()
        assert ei.value.status is kvrt.Status.CANCELLED
        assert len(n) == 3 and seen["activity"].phase == kvrt.PHASE_DECODE
        assert seen["activity"].generated_tokens == 3
        assert ctx.seq_length(0) == len(prompt) + 2


def test_context_lock_serialises_threads(model):
    with kvrt.Context(model, n_ctx=256, n_seq_max=2) as ctx:
        prompt = _prompt(model)
        ref = ctx.generate(0, prompt, max_tokens=4, stop_at_eog=False, result={})
        errors, outs = [], [None, None]

        def work(i):
            try:
                r = {}
                ctx.generate(i, prompt, max_tokens=4, stop_at_eog=False, result=r)
                outs[i] = r["tokens"]
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors and outs[0] == outs[1] and len(outs[0]) == 4
        assert ref.generated_tokens == 4


def test_sampler_chain(model):
    with kvrt.Sampler.chain(seed=1).penalties(repeat=2.0).greedy() as s:
        assert s.sample([1.0, 3.0, 2.5]) == 1
        s.accept(1)
        assert s.sample([1.0, 3.0, 2.5]) == 2  # 3 / 2 < 2.5
        s.reset()
        assert s.sample([1.0, 3.0, 2.5]) == 1
    with kvrt.Sampler.chain().logit_bias({2: 5.0}) as s:
        assert s.sample([0.0, 1.0, 0.0]) == 2
    with pytest.raises(kvrt.KvrtError) as ei:
        kvrt.Sampler.chain().greedy().top_k(3)
    assert ei.value.status is kvrt.Status.INVALID_STATE
    with pytest.raises(kvrt.KvrtError):
        kvrt.Sampler.chain().top_p(0.0)
    # In generate: a strong penalty over the whole history makes every token new.
    with kvrt.Context(model, n_ctx=128) as ctx, kvrt.Sampler.chain().penalties(repeat=1000.0, last_n=-1).greedy() as s:
        prompt = _prompt(model, "one two three one two three one two three one two")
        res = {}
        ctx.generate(0, prompt, max_tokens=10, stop_at_eog=False, sampler=s, result=res)
        toks = res["tokens"]
        assert len(toks) == 10 and len(set(toks)) == 10 and not set(toks) & set(prompt)


def test_chat_template_override(model):
    msgs = [("user", "Hi")]
    with model.retain() as m2:  # a second handle of the same weights
        assert m2.info()["n_vocab"] == model.info()["n_vocab"] and m2.chat_apply(msgs) == model.chat_apply(msgs)
    assert model.chat_apply(msgs, template=None) == model.chat_apply(msgs)
    assert model.chat_apply(msgs, add_assistant=False, template="chatml") == "<|im_start|>user\nHi<|im_end|>\n"
    assert "<start_of_turn>user\nHi<end_of_turn>" in model.chat_apply(msgs, template="gemma")
    with pytest.raises(kvrt.KvrtError) as ei:
        model.chat_apply(msgs, template="{{ nothing known }}")
    assert ei.value.status is kvrt.Status.UNSUPPORTED


def test_memory_control(model):
    with kvrt.Context(model, n_ctx=256) as ctx:
        prompt = _prompt(model, "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi "
                                "rho sigma tau upsilon phi chi psi omega")
        ctx.prefill(0, prompt)
        ctx.seq_release(0)
        cached = ctx.cache_stats()["bytes_cached"]
        assert cached > 0
        assert ctx.cache_trim() == cached and ctx.cache_stats()["bytes_cached"] == 0
        assert ctx.prefill(0, prompt).reused_from_cache == 0
        used = ctx.cache_stats()["bytes_in_use"]
        with pytest.raises(kvrt.KvrtError) as ei:
            ctx.cache_set_budget(used - 1)
        assert ei.value.status is kvrt.Status.INVALID_STATE
        ctx.cache_set_budget(used)
        assert ctx.cache_stats()["budget_bytes"] == used


def test_logging_and_isa(model):
    lines = []
    kvrt.set_log_callback(lambda level, msg: lines.append((level, msg)), kvrt.LOG_DEBUG)
    try:
        with kvrt.Context(model, n_ctx=128):
            pass
        assert any("cache: budget" in m for _, m in lines)
        with pytest.raises(kvrt.KvrtError):
            kvrt.isa_set(99)
        assert any(lvl == kvrt.LOG_DEBUG and "99" in m for lvl, m in lines)
    finally:
        kvrt.set_log_callback(None)
    n = len(lines)
    with pytest.raises(kvrt.KvrtError):
        kvrt.isa_set(99)
    assert len(lines) == n
    active, detected = kvrt.isa_get()
    assert active == detected and kvrt.isa_name(kvrt.ISA_AVX2) == "avx2"
    assert kvrt.isa_name(kvrt.ISA_AMX) == "amx" and detected <= kvrt.ISA_AMX
    kvrt.isa_set(kvrt.ISA_SCALAR)
    try:
        assert kvrt.isa_get()[0] == kvrt.ISA_SCALAR
    finally:
        kvrt.isa_set(kvrt.ISA_AMX)
    assert kvrt.isa_get()[0] == detected
