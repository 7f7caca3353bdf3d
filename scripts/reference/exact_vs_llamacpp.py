#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""How far is llama.cpp's reference from plain float math on the same dequantised weights?

Runs SmolLM2 (llama architecture) in numpy from the GGUF's weights dequantised to float
(gguf-py's dequantiser), with NO activation quantisation and no fp16 rounding (float64
everywhere), a KV cache of float64 rows, and greedy decoding (the forward is
exact_forward.ExactDecoder, which also runs qwen2 and gemma3; kl_vs_exact.py measures
kvrt and a live llama.cpp against it on all three models), on the prompts of
tests/data/llamacpp_reference.json; then prints, per prompt, how its prompt top-1 logits
and its 32-token greedy continuation compare with llama.cpp's.

Why: llama.cpp's CPU path quantises every activation to Q8_1/Q8_0 blocks (fp16 scales)
before each quantised matmul, keeps K/V (and Q in the KQ product, and the softmax
probabilities in the KQV product) in fp16. A kvrt that computes in float32/bf16 from the
same weights differs from llama.cpp by that rounding, not by a bug. This script measures
the size of that gap, so kvrt's tolerances against llama.cpp can be set from data.

Run:  pip install gguf==0.19.0 numpy
      python3 scripts/reference/exact_vs_llamacpp.py [--model PATH] [--prompts 0,1,2]
Needs no llama.cpp (it reads the committed JSON). Takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exact_forward as ef  # noqa: E402
import kvrt_prompts as kp  # noqa: E402

DEFAULT_MODEL = os.path.join(
    os.environ.get("KVRT_MODEL_DIR", os.path.expanduser("~/.cache/kvrt/models")),
    "SmolLM2-135M-Instruct.Q4_1.gguf",
)
REF = os.path.join(kp.REPO_ROOT, "tests", "data", "llamacpp_reference.json")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--prompts", default="", help="comma-separated indices (default: all)")
    args = ap.parse_args()
    ref = json.load(open(REF, encoding="utf-8"))
    m = ef.ExactDecoder(args.model)
    idx = [int(i) for i in args.prompts.split(",")] if args.prompts else range(len(ref["prompts"]))
    n_match = 0
    worst = 0.0
    for i in idx:
        pr = ref["prompts"][i]
        m.reset()
        lg = m.eval(pr["tokens"])
        lc_id = np.array([a for a, _ in pr["prompt_top1"]])
        lc_v = np.array([b for _, b in pr["prompt_top1"]])
        d_prompt = np.abs(lg[np.arange(len(lc_id)), lc_id] - lc_v)
        agree = float((lg.argmax(1) == lc_id).mean())
        cont = []
        step_d = []
        row = lg[-1]
        for k in range(32):
            t = int(row.argmax())
            cont.append(t)
            lt = pr["steps"][k]["top1"]
            if cont == pr["continuation"][: k + 1]:
                step_d.append(abs(row[lt[0]] - lt[1]))
            row = m.eval([t])[-1]
        same = next((k for k in range(32) if cont[k] != pr["continuation"][k]), 32)
        n_match += same == 32
        worst = max(worst, float(d_prompt.max()))
        print(f"{pr['name']:15s} {len(pr['tokens']):4d} tok  prompt: argmax agree {agree:.3f}, "
              f"|d top1 logit| max {d_prompt.max():.3f} median {np.median(d_prompt):.3f}; "
              f"greedy: same for {same}/32 steps, |d top1 logit| max on the shared steps "
              f"{max(step_d) if step_d else float('nan'):.3f}", flush=True)
    print(f"{n_match}/{len(list(idx))} continuations identical to llama.cpp's; "
          f"worst prompt top-1 logit gap {worst:.3f}")


if __name__ == "__main__":
    main()
