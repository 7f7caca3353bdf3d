#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""How far are kvrt and llama.cpp from exact math? KL(exact || runtime), per model.

For each model (SmolLM2-135M Q4_1 `llama`, Qwen2.5-Coder-0.5B Q4_K_M `qwen2`, Gemma 3
270M Q4_K_M `gemma3`) and each of two English texts:
  - tokens: llama.cpp's tokenisation of the text (BOS only where the GGUF's
    tokenizer.ggml.add_bos_token says so, special tokens not parsed); the SAME ids go
    to all three sides;
  - exact: exact_forward.ExactDecoder (float64 on the GGUF's dequantised weights, float64
    K/V), teacher-forced, logits of every position;
  - llama.cpp: llama_cpp.Llama(logits_all=True, n_threads=2, flash_attn off, F16 KV
    cache, n_batch 512), the text in one eval(), llm.scores of every position;
  - kvrt: the Python binding (bindings/python, $KVRT_LIBRARY), one sequence, F16 KV,
    teacher-forced by prefill(0, ids[:i+1]) for i = 0..T-1: kvrt keeps the common prefix,
    so every call computes exactly one token (checked: computed_tokens == 1), and its
    last-position logits are those of position i (bit-identical to a one-shot prefill's
    by kvrt's design; checked at the last position).
Per position i: KL_i = sum_v p_exact(v) (log p_exact(v) - log p_rt(v)) of the next-token
distributions (softmax of the logits, computed in float64). Reported over all T positions:
mean, p99, max, and top-1 agreement (argmax runtime == argmax exact), plus each side's
perplexity of the text.

Greedy: 10 short plain-text prompts per model, 32 argmax steps (lowest id on ties, EOS not
special) from the prompt evaluated in one call, then one token per call; counted: how
many of the 10 continuations equal the float64 one in full, and the mean number of
leading tokens that agree.

Options add attribution runs: --kvrt-kv f16,f32 (kvrt with f32 K/V; the C API has no
switch for f32 weights, ModelLoadOptions::f32_weights is C++-only), --sims kvrt,llamacpp,... (the
float64 forward with kvrt's or llama.cpp's roundings, or one of them alone, simulated:
exact_forward.SIMS).

Run (llama-cpp-python 0.3.36 built from source, see bench/README.md; a Release build of
kvrt):
    KVRT_LIBRARY=build/h-kl/libkvrt.so python3 scripts/reference/kl_vs_exact.py \\
        [--models llama,qwen2,gemma3] [--work /tmp/kvrt_kl] [--out results.jsonl]
Logits are cached in --work as float32 .npy (re-runs only recompute what is missing;
--fresh ignores the cache). Prints JSON lines, then a markdown table.
"""

from __future__ import annotations

import argparse
import gc
import glob
import inspect
import json
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import exact_forward as ef  # noqa: E402

REPO = ef.REPO_ROOT
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))

DEMO = os.path.join(REPO, "tools", "kvrt", "demo_document.txt")
KL_TEXT = os.path.join(REPO, "tests", "data", "kl_text.txt")
DEMO_CHARS = 2775  # the title and the first sections (ends at a paragraph break)

PROMPTS = [
    "The sky is",
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "To make a good cup of tea, you should first",
    "Water boils at",
    'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n    if n < 2:\n        return n\n',
    "Here is a list of five fruits:\n1. Apple\n2. Banana\n3.",
    "1, 1, 2, 3, 5, 8, 13, 21,",
    '{"name": "Alice", "age": 30, "languages": ["English", ',
    "The most important invention of the nineteenth century was",
]
N_GREEDY = 32


def texts():
    demo = open(DEMO, encoding="utf-8").read()[:DEMO_CHARS].rstrip()
    own = open(KL_TEXT, encoding="utf-8").read().strip()
    return {"demo_document": demo, "kl_text": own}


# ---------------------------------------------------------------------------


def kl_stats(logits_exact, logits_rt, ids, rows=64):
    """Per-position KL(exact || runtime), top-1 agreement, and the log-probabilities of the
    text's next tokens under each side (rows at a time: a 262K vocabulary is large)."""
    kl, agree, nll_e, nll_r = [], [], [], []
    ids = np.asarray(ids)
    for i in range(0, len(logits_exact), rows):
        lp = ef.log_softmax(logits_exact[i:i + rows])
        lq = ef.log_softmax(logits_rt[i:i + rows])
        kl.append(np.maximum((np.exp(lp) * (lp - lq)).sum(-1), 0.0))
        agree.append(lp.argmax(-1) == lq.argmax(-1))
        nxt = ids[i + 1:i + 1 + len(lp)]
        nll_e.append(-lp[np.arange(len(nxt)), nxt])
        nll_r.append(-lq[np.arange(len(nxt)), nxt])
    return (np.concatenate(kl), np.concatenate(agree), float(np.exp(np.concatenate(nll_e).mean())),
            float(np.exp(np.concatenate(nll_r).mean())))


class Greedy:
    """Greedy continuations, one JSON file per side (several processes may run the sides
    of one model at once)."""

    def __init__(self, cache, name):
        self.cache, self.name = cache, name

    def _p(self, side):
        return self.cache.path(self.name, "greedy", side).replace(".npy", ".json")

    def __contains__(self, side):
        return not self.cache.fresh and os.path.exists(self._p(side))

    def __getitem__(self, side):
        return json.load(open(self._p(side)))

    def __setitem__(self, side, v):
        json.dump(v, open(self._p(side), "w"))

    def sides(self):
        pre = os.path.join(self.cache.work, self.name + "_greedy_")
        return sorted(f[len(pre):-5] for f in glob.glob(pre + "*.json"))


class Cache:
    def __init__(self, work, fresh):
        self.work, self.fresh = work, fresh
        os.makedirs(work, exist_ok=True)

    def path(self, *parts):
        return os.path.join(self.work, "_".join(parts) + ".npy")

    def get(self, *parts):
        p = self.path(*parts)
        if not self.fresh and os.path.exists(p):
            return np.load(p)
        return None

    def put(self, arr, *parts):
        np.save(self.path(*parts), np.asarray(arr, dtype=np.float32) if arr.dtype.kind == "f" else arr)


# ---------------------------------------------------------------------------
# Runtimes.


def llamacpp_open(path, n_ctx):
    import llama_cpp

    kw = dict(logits_all=True, n_ctx=n_ctx, n_threads=2, n_threads_batch=2, n_batch=512, verbose=False)
    params = inspect.signature(llama_cpp.Llama.__init__).parameters
    if "flash_attn" in params:
        kw["flash_attn"] = False
    return llama_cpp.Llama(path, **kw)


def llamacpp_logits(llm, ids):
    llm.reset()
    llm.eval(ids)
    return np.array(llm.scores[: len(ids)], dtype=np.float32)


def llamacpp_greedy(llm, prompt, n):
    llm.reset()
    llm.eval(prompt)
    out = []
    for _ in range(n):
        t = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        out.append(t)
        llm.eval([t])
    return out


def kvrt_open(path, kv):
    import kvrt

    model = kvrt.Model(path, n_threads=2)
    ctx = kvrt.Context(model, n_ctx=4096, n_threads=2, kv_dtype={"f16": kvrt.KV_F16, "f32": kvrt.KV_F32}[kv])
    return model, ctx


def kvrt_logits(ctx, ids):
    """Teacher-forced: prefill the growing prefix, one new token per call."""
    rows = []
    ctx.seq_release(0)
    for i in range(len(ids)):
        st = ctx.prefill(0, ids[: i + 1])
        if st.computed_tokens != 1:
            raise SystemExit(f"kvrt computed {st.computed_tokens} tokens for prefix {i + 1} (expected 1)")
        rows.append(np.frombuffer(ctx.logits(0), dtype=np.float32).copy())
    ctx.seq_release(0)
    return np.stack(rows)


def kvrt_one_shot_last(model, kv, ids):
    import kvrt

    ctx = kvrt.Context(model, n_ctx=4096, n_threads=2, prefix_caching=False,
                       kv_dtype={"f16": kvrt.KV_F16, "f32": kvrt.KV_F32}[kv])
    ctx.prefill(0, ids)
    row = np.frombuffer(ctx.logits(0), dtype=np.float32).copy()
    ctx.close()
    return row


def kvrt_greedy(ctx, prompt, n):
    ctx.seq_release(0)
    ctx.prefill(0, prompt)
    out = []
    for _ in range(n):
        t = int(np.argmax(np.frombuffer(ctx.logits(0), dtype=np.float32)))
        out.append(t)
        ctx.decode([0], [t])
    ctx.seq_release(0)
    return out


# ---------------------------------------------------------------------------


def run_model(name, args, cache, emit):
    path = ef.MODELS[name]
    tx = texts()
    # 1. llama.cpp: tokens, logits, greedy.
    ids = {}
    greedy = {}
    tok_path = cache.path(name, "tokens").replace(".npy", ".json")
    llm = None
    if cache.fresh or not os.path.exists(tok_path):
        import llama_cpp

        voc = llama_cpp.Llama(path, vocab_only=True, verbose=False)
        toks = {t: voc.tokenize(s.encode(), add_bos=True, special=False) for t, s in tx.items()}
        toks.update({f"prompt{i}": voc.tokenize(p.encode(), add_bos=True, special=False)
                     for i, p in enumerate(PROMPTS)})
        json.dump(toks, open(tok_path, "w"))
        del voc
    toks = json.load(open(tok_path))
    for t in tx:
        ids[t] = toks[t]
    prompts = [toks[f"prompt{i}"] for i in range(len(PROMPTS))]

    lc_logits = {}
    for t in tx:
        a = cache.get(name, t, "llamacpp")
        if a is None and "llamacpp" in args.sides:
            llm = llm or llamacpp_open(path, args.n_ctx)
            t0 = time.time()
            a = llamacpp_logits(llm, ids[t])
            cache.put(a, name, t, "llamacpp")
            print(f"# {name} {t}: llama.cpp {len(ids[t])} tokens in {time.time() - t0:.1f} s", file=sys.stderr)
        lc_logits[t] = a
    gall = Greedy(cache, name)
    if "llamacpp" not in gall and "llamacpp" in args.sides:
        llm = llm or llamacpp_open(path, args.n_ctx)
        gall["llamacpp"] = [llamacpp_greedy(llm, p, N_GREEDY) for p in prompts]
    if llm is not None:
        if hasattr(llm, "close"):
            llm.close()
        del llm
        gc.collect()

    # 2. kvrt (F16 KV, and the attribution runs).
    kv_logits = {}
    extra = {}
    for kv in args.kvrt_kv.split(","):
        side = "kvrt" if kv == "f16" else f"kvrt_kv{kv}"
        need = any(cache.get(name, t, side) is None for t in tx) or side not in gall
        if need and "kvrt" in args.sides:
            model, ctx = kvrt_open(path, kv)
            for t, s in tx.items():
                extra[(t, "kvrt_tokenizer_same")] = model.tokenize(s, add_bos=gguf_meta(path)[1]) == ids[t]
            for t in tx:
                if cache.get(name, t, side) is None:
                    t0 = time.time()
                    a = kvrt_logits(ctx, ids[t])
                    one = kvrt_one_shot_last(model, kv, ids[t])
                    extra[(t, f"{side}_oneshot_last_identical")] = bool(np.array_equal(one, a[-1]))
                    cache.put(a, name, t, side)
                    print(f"# {name} {t}: {side} {len(ids[t])} tokens in {time.time() - t0:.1f} s; one-shot "
                          f"last row identical: {np.array_equal(one, a[-1])}", file=sys.stderr)
            if side not in gall:
                gall[side] = [kvrt_greedy(ctx, p, N_GREEDY) for p in prompts]
            ctx.close()
            model.close()
        for t in tx:
            kv_logits[(side, t)] = cache.get(name, t, side)

    # 3. exact (and the simulations), then the metrics.
    m = None
    sims = [("exact", None)] + [("sim_" + n, ef.SIMS[n]) for n in args.sims.split(",") if n]
    sim_logits = {}
    for sname, sim in sims:
        for t in tx:
            a = cache.get(name, t, sname)
            if a is None and "exact" in args.sides:
                if m is None:
                    m = ef.ExactDecoder(path, verbose=True)
                m.sim = sim or ef.Sim()
                m.reset()
                t0 = time.time()
                a = m.eval_chunked(ids[t]).astype(np.float32)
                cache.put(a, name, t, sname)
                print(f"# {name} {t}: {sname} forward {len(ids[t])} tokens in {time.time() - t0:.1f} s",
                      file=sys.stderr)
            sim_logits[(sname, t)] = a
    if "exact" not in gall and "exact" in args.sides and not args.skip_greedy:
        if m is None:
            m = ef.ExactDecoder(path, verbose=True)
        m.sim = ef.Sim()
        t0 = time.time()
        gall["exact"] = [m.greedy(p, N_GREEDY) for p in prompts]
        print(f"# {name}: exact greedy in {time.time() - t0:.1f} s", file=sys.stderr)
    del m
    gc.collect()

    have = [lc_logits[t] is not None and sim_logits[("exact", t)] is not None and
            kv_logits[("kvrt", t)] is not None for t in tx]
    if not all(have) or not all(k in gall for k in ("exact", "llamacpp", "kvrt")):
        print(f"# {name}: not every side has run yet (--sides); no metrics", file=sys.stderr)
        return [], None, gall
    rows = []
    for t in tx:
        ex = sim_logits[("exact", t)]
        rec = {"model": name, "file": os.path.basename(path), "text": t, "tokens": len(ids[t]),
               "bos": bool(ids[t][0] == gguf_meta(path)[0])}
        sides = [("llamacpp", lc_logits[t])] + [(s, a) for (s, tt), a in kv_logits.items() if tt == t] + \
                [(s, a) for (s, tt), a in sim_logits.items() if tt == t and s != "exact" and a is not None]
        for s, a in sides:
            kl, agree, rec["ppl_exact"], rec[f"{s}_ppl"] = kl_stats(ex, a, ids[t])
            rec[f"{s}_kl_mean"] = float(kl.mean())
            rec[f"{s}_kl_p99"] = float(np.percentile(kl, 99))
            rec[f"{s}_kl_max"] = float(kl.max())
            rec[f"{s}_kl_argmax_pos"] = int(kl.argmax())
            rec[f"{s}_top1_agree"] = float(agree.mean())
            if name == "gemma3" and len(ids[t]) > 512:
                rec[f"{s}_kl_mean_pos_ge_512"] = float(kl[512:].mean())
            np.save(cache.path(name, t, s, "kl"), kl)
        rec["ratio_kvrt_over_llamacpp"] = rec["kvrt_kl_mean"] / rec["llamacpp_kl_mean"]
        rec.update({k: v for (tt, k), v in extra.items() if tt == t})
        emit(rec)
        rows.append(rec)
    ex = gall["exact"]
    g = {"model": name, "kind": "greedy", "prompts": len(prompts), "steps": N_GREEDY}
    for s in [k for k in gall.sides() if k != "exact"]:
        full = [a == b for a, b in zip(gall[s], ex)]
        lead = [next((k for k in range(N_GREEDY) if a[k] != b[k]), N_GREEDY) for a, b in zip(gall[s], ex)]
        g[f"{s}_full_match"] = int(sum(full))
        g[f"{s}_mean_leading_match"] = float(np.mean(lead))
        g[f"{s}_leading_match"] = lead
    emit(g)
    return rows, g, gall


_META = {}


def gguf_meta(path):
    """(bos id, add_bos) as the GGUF says."""
    if path not in _META:
        import gguf

        r = gguf.GGUFReader(path)
        f = r.fields.get("tokenizer.ggml.bos_token_id")
        a = r.fields.get("tokenizer.ggml.add_bos_token")
        _META[path] = (int(f.parts[f.data[0]][0]) if f is not None else -1,
                       bool(a.parts[a.data[0]][0]) if a is not None else False)
    return _META[path]


def table(rows, greedy):
    out = ["| model | text | tokens | kvrt KL mean / p99 / max | llama.cpp KL mean / p99 / max | "
           "top-1 = exact: kvrt / llama.cpp | KL ratio kvrt / llama.cpp |",
           "| --- | --- | ---: | --- | --- | --- | ---: |"]
    for r in rows:
        out.append(f"| {r['model']} | {r['text']} | {r['tokens']} | "
                   f"{r['kvrt_kl_mean']:.2e} / {r['kvrt_kl_p99']:.2e} / {r['kvrt_kl_max']:.2e} | "
                   f"{r['llamacpp_kl_mean']:.2e} / {r['llamacpp_kl_p99']:.2e} / {r['llamacpp_kl_max']:.2e} | "
                   f"{100 * r['kvrt_top1_agree']:.1f}% / {100 * r['llamacpp_top1_agree']:.1f}% | "
                   f"{r['ratio_kvrt_over_llamacpp']:.2f} |")
    out += ["", "| model | greedy 32 tokens = float64, of 10: kvrt / llama.cpp | mean leading tokens equal: kvrt / llama.cpp |",
            "| --- | --- | --- |"]
    for g in greedy:
        out.append(f"| {g['model']} | {g['kvrt_full_match']} / {g['llamacpp_full_match']} | "
                   f"{g['kvrt_mean_leading_match']:.1f} / {g['llamacpp_mean_leading_match']:.1f} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="llama,qwen2,gemma3")
    ap.add_argument("--work", default="/tmp/kvrt_kl")
    ap.add_argument("--out", default="", help="also append the JSON lines to this file")
    ap.add_argument("--n-ctx", type=int, default=2048)
    ap.add_argument("--kvrt-kv", default="f16", help="kvrt K/V types to run: f16 (the default), f32")
    ap.add_argument("--sims", default="", help="also the float64 forward with these simulated roundings "
                    "(comma-separated names of exact_forward.SIMS: " + ",".join(ef.SIMS) + ")")
    ap.add_argument("--sides", default="llamacpp,kvrt,exact",
                    help="which sides to compute now (the others must be in --work already; "
                    "'report' computes nothing)")
    ap.add_argument("--skip-greedy", action="store_true", help="no float64 greedy run (e.g. a --sims run beside one)")
    ap.add_argument("--fresh", action="store_true", help="recompute everything (ignore --work)")
    args = ap.parse_args()
    args.sides = set(args.sides.split(","))
    cache = Cache(args.work, args.fresh)
    outf = open(args.out, "a") if args.out else None

    def emit(rec):
        rec = dict(rec, machine=platform.processor() or platform.machine())
        s = json.dumps(rec)
        print(s, flush=True)
        if outf:
            outf.write(s + "\n")
            outf.flush()

    rows, greedy = [], []
    for name in args.models.split(","):
        r, g, _ = run_model(name, args, cache, emit)
        rows += r
        if g:
            greedy.append(g)
    if rows:
        print()
        print(table(rows, greedy))


if __name__ == "__main__":
    main()
