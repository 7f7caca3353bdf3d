#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""Float64 logits along llama.cpp's reference continuations (tests/data/exact_top1.json).

For each prompt of tests/data/llamacpp_reference.json, runs exact_forward.py's float64
forward (the GGUF's weights dequantised, no activation quantisation, f64 KV) over the
prompt followed by llama.cpp's 32-token greedy continuation, and records at each step the
float64 logit of llama.cpp's top-1 token there. The test "runtime: greedy continuations and
top-1 logits agree with llama.cpp's reference" measures kvrt against these, and llama.cpp
against them, so that a step where llama.cpp itself is far from exact math (0.9 at
chat_capital's step 5) is not taken for a kvrt error.

  pip install gguf==0.19.0 numpy
  OPENBLAS_NUM_THREADS=1 python3 scripts/reference/gen_exact_top1.py [--model PATH]

Output: {"generator", "model": {"file", "sha256"}, "prompts": [{"name", "exact_top1":
[float64 logit of steps[s].top1[0], s = 0..32]}]} in the reference's prompt order.
"""
import argparse
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exact_forward import ExactDecoder  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.expanduser("~/.cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--reference", default=os.path.join(ROOT, "tests/data/llamacpp_reference.json"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests/data/exact_top1.json"))
    a = ap.parse_args()
    ref = json.load(open(a.reference))
    with open(a.model, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    if sha != ref["model"]["sha256"]:
        sys.exit(f"{a.model} is not the reference's model (sha256 {sha})")
    dec = ExactDecoder(a.model)
    out = {"generator": "scripts/reference/gen_exact_top1.py (float64 forward of exact_forward.py)",
           "model": {"file": ref["model"]["file"], "sha256": sha}, "prompts": []}
    for p in ref["prompts"]:
        dec.reset()
        toks, cont = p["tokens"], p["continuation"]
        logits = dec.eval(toks + cont)
        n = len(toks)
        row = []
        for s, step in enumerate(p["steps"]):
            row.append(round(float(logits[n - 1 + s][int(step["top1"][0])]), 5))
        out["prompts"].append({"name": p["name"], "exact_top1": row})
        print(p["name"], "max |llama.cpp - float64| =",
              round(max(abs(r - st["top1"][1]) for r, st in zip(row, p["steps"])), 4), file=sys.stderr)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
