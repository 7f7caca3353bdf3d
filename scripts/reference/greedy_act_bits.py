#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""Greedy continuations (32 tokens from kl_vs_exact.py's 10 prompts) of kvrt with each activation
code setting (kvrt_context_config.act_bits 8, 0 = the default, 9 = outlier residuals, 16) against the float64 forward's and
llama.cpp's, which kl_vs_exact.py keeps in its --work directory (<model>_greedy_exact.json,
<model>_greedy_llamacpp.json, the prompt ids in <model>_tokens.json: run it first).

    KVRT_LIBRARY=build/h-kl/libkvrt.so python3 scripts/reference/greedy_act_bits.py [--work /tmp/kvrt_kl]

Prints per model how many continuations equal the float64 one in full and the mean number of
leading tokens that do, for kvrt under each setting and llama.cpp; --out appends JSON lines.
kvrt runs as kl_vs_exact.py runs it: the Python binding, F16 KV, 2 threads, the prompt in one
call then one token per decode call.
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import exact_forward as ef  # noqa: E402
import kl_vs_exact as kx  # noqa: E402

sys.path.insert(0, os.path.join(ef.REPO_ROOT, "bindings", "python"))


def greedy(ctx, prompt, n):
    ctx.seq_release(0)
    ctx.prefill(0, prompt)
    out = []
    for _ in range(n):
        t = int(np.argmax(np.frombuffer(ctx.logits(0), dtype=np.float32)))
        out.append(t)
        ctx.decode([0], [t])
    ctx.seq_release(0)
    return out


def leading(a, b):
    return next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="llama,qwen2,gemma3")
    ap.add_argument("--work", default="/tmp/kvrt_kl")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    import kvrt

    for name in args.models.split(","):
        toks = json.load(open(os.path.join(args.work, f"{name}_tokens.json")))
        prompts = [toks[f"prompt{i}"] for i in range(len(kx.PROMPTS))]
        sides = {s: json.load(open(os.path.join(args.work, f"{name}_greedy_{s}.json"))) for s in ("exact", "llamacpp")}
        model = kvrt.Model(ef.MODELS[name], n_threads=2)
        for bits in (8, 0, 9, 16):
            ctx = kvrt.Context(model, n_ctx=512, n_threads=2, prefix_caching=False, act_bits=bits)
            sides[f"kvrt_act{bits}"] = [greedy(ctx, p, kx.N_GREEDY) for p in prompts]
            ctx.close()
        model.close()
        rec = {"model": name, "kind": "greedy", "prompts": len(prompts), "steps": kx.N_GREEDY}
        for s in ("kvrt_act8", "kvrt_act0", "kvrt_act9", "kvrt_act16", "llamacpp"):
            lead = [leading(a, b) for a, b in zip(sides[s], sides["exact"])]
            rec[f"{s}_full_match"] = sum(1 for x in lead if x == kx.N_GREEDY)
            rec[f"{s}_mean_leading_match"] = float(np.mean(lead))
            rec[f"{s}_leading_match"] = lead
        print(json.dumps(rec))
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
