#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""llama.cpp's quantised K/V on the same text and models as bench_kv_quant_kl (issue 15).

For each real model: the text tools/kvrt/demo_document.txt, llama.cpp's tokenisation, the
first --tokens tokens (default 2048; the text repeated without BOS if shorter), evaluated
teacher-forced in one llama_cpp.Llama per K/V type (logits_all, flash attention on for all
of them: llama.cpp needs it for a quantised V cache, n_batch 256, n_threads 2). Per position
KL(p_f16 || p_type) of the next-token distributions (softmax in float64), against llama.cpp's
own f16 K/V run; mean, p99, max and top-1 agreement, as bench_kv_quant_kl prints for kvrt.

    python3 bench/kv_quant_llamacpp_kl.py [--tokens 2048] [--models llama,qwen2,gemma3]
Prints JSON lines.
"""
import argparse
import gc
import json
import os
import platform

import numpy as np
import llama_cpp

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = {
    "llama": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "qwen2": "qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf",
    "gemma3": "gemma-3-270m-Q4_K_M.gguf",
}
# ggml_type values (ggml.h): F16 = 1, Q4_0 = 2, Q8_0 = 8.
TYPES = [("f16", 1, 1), ("q8_0", 8, 8), ("q4_0", 2, 2), ("q8_0K/f16V", 8, 1)]


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def run(path, toks, type_k, type_v):
    llm = llama_cpp.Llama(model_path=path, n_ctx=len(toks) + 16, n_batch=256, n_threads=2, logits_all=True,
                          type_k=type_k, type_v=type_v, flash_attn=True, verbose=False)
    llm.eval(toks)
    scores = np.array(llm.scores[: len(toks)], dtype=np.float32, copy=True)
    del llm
    gc.collect()
    return scores


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--models", default="llama,qwen2,gemma3")
    args = ap.parse_args()
    mdir = os.environ.get("KVRT_MODEL_DIR", os.path.expanduser("~/.cache/kvrt/models"))
    text = open(os.path.join(HERE, "..", "tools", "kvrt", "demo_document.txt"), encoding="utf-8").read()
    for arch in args.models.split(","):
        path = os.path.join(mdir, MODELS[arch])
        tok = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        toks = tok.tokenize(text.encode(), add_bos=True)
        body = toks[1:] if toks and toks[0] == tok.token_bos() else toks
        while len(toks) < args.tokens:
            toks = toks + body
        toks = toks[: args.tokens]
        del tok
        ref = run(path, toks, 1, 1)
        ref_top = ref.argmax(axis=-1)
        for name, tk, tv in TYPES[1:]:
            x = run(path, toks, tk, tv)
            kl = np.empty(len(toks))
            for a in range(0, len(toks), 128):
                lr, lx = log_softmax(ref[a:a + 128]), log_softmax(x[a:a + 128])
                kl[a:a + 128] = np.maximum(0.0, (np.exp(lr) * (lr - lx)).sum(axis=-1))
            agree = float((x.argmax(axis=-1) == ref_top).mean())
            print(json.dumps({"bench": "kv_quant_llamacpp_kl", "metric": "mean_kl_vs_f16_kv", "model": arch,
                              "kv": name, "tokens": len(toks), "mean_kl": float(kl.mean()),
                              "p99_kl": float(np.quantile(kl, 0.99)), "max_kl": float(kl.max()),
                              "top1_agree": agree, "llama_cpp_python": llama_cpp.__version__,
                              "machine": platform.processor() or platform.machine()}), flush=True)
            del x
            gc.collect()
        del ref


if __name__ == "__main__":
    main()
