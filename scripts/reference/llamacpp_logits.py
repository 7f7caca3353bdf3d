#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors
"""llama.cpp's next-token distributions at llama-perplexity's scored positions, written as
kvrt's saved-logits file (logits_file.py), so `kvrt perplexity --kl FILE` compares kvrt with
llama.cpp and `kvrt perplexity --kl EXACT --compare FILE` compares llama.cpp with the float64
reference (exact_forward.py --save-logits).

Each window is evaluated as llama-perplexity does: a fresh KV cache, the window's tokens
(first one replaced by BOS when the model adds one) in batches of n_batch with the logits
of every row (llama-cpp-python: logits_all=True), F16 KV, flash attention off. The printed
perplexity is llama-perplexity's figure for the same text, context and stride.

    python3 scripts/reference/llamacpp_logits.py -m MODEL.gguf -f TEXT -o llamacpp.klg \\
        [--ctx 512] [--stride 0] [--threads 2]
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import logits_file  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("-f", "--file", required=True)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--stride", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=512)
    args = ap.parse_args()

    import llama_cpp

    kw = dict(logits_all=True, n_ctx=args.ctx, n_batch=args.batch, n_threads=args.threads,
              n_threads_batch=args.threads, verbose=False)
    if "flash_attn" in inspect.signature(llama_cpp.Llama.__init__).parameters:
        kw["flash_attn"] = False
    llm = llama_cpp.Llama(args.model, **kw)
    text = open(args.file, encoding="utf-8").read()
    bos = logits_file.bos_of(args.model)
    ids = llm.tokenize(text.encode("utf-8"), add_bos=bos >= 0, special=False)

    def window(win, first, last):
        llm.reset()
        llm.eval(win)
        return np.array(llm.scores[first:last + 1], dtype=np.float32)

    t0 = time.time()
    producer = f"llama.cpp (llama-cpp-python {llama_cpp.__version__}, F16 KV, no flash attention, {args.threads} threads)"
    ppl = logits_file.run_windows(args.out, args.model, producer, ids, args.ctx, args.stride, bos, window)
    print(f"{os.path.basename(args.model)}: {len(ids)} tokens, llama.cpp perplexity {ppl:.4f} "
          f"({time.time() - t0:.0f} s); wrote {args.out}", flush=True)


if __name__ == "__main__":
    main()
