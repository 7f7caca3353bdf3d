#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""Continuous batching through kvrt_context_prefill_batch: decoding sequences and a new prompt in
ONE forward per round, against the same work as two calls (a decode step of the sequences, then a
prefill of the prompt), in the same run.

Each round appends one token to each of --seqs sequences (held at about --ctx tokens of context)
and computes a new prompt of --prompt tokens on another sequence. "mixed": one prefill_batch call
whose steps are the sequences' single new rows and the prompt's chunk (the runtime's one-region
team forward, src/model/arch/decoder_forward.cpp). "split": kvrt_context_decode of the sequences,
then kvrt_context_prefill of the prompt. Rounds alternate mixed / split; prefix caching is off
so every prompt is computed. Prints JSON lines like bench/bench_json.hpp: the median round time
of each and the ratio split / mixed (above 1: one call is faster).

  KVRT_LIBRARY=build/release/libkvrt.so python3 bench/mixed_rounds.py --model M [--threads 2]
      [--seqs 4] [--ctx 1000] [--prompt 12,124] [--rounds 30]

With --seqs 4, --prompt 12 makes rounds of 16 rows (the short-batch size), 124 rounds of 128.
"""

import argparse
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
import kvrt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seqs", type=int, default=4)
    ap.add_argument("--ctx", type=int, default=1000)
    ap.add_argument("--prompt", default="12,124")
    ap.add_argument("--rounds", type=int, default=30)
    a = ap.parse_args()
    if a.seqs < 1 or a.ctx < 1 or a.rounds < 1:
        ap.error("--seqs, --ctx and --rounds must be positive")
    prompts = [int(x) for x in a.prompt.split(",") if x]
    if not prompts or min(prompts) < 2:
        ap.error("--prompt: token counts of at least 2")

    model = kvrt.Model(a.model, n_threads=a.threads)
    vocab = model.info()["n_vocab"]
    rng = random.Random(1)
    tok = lambda: rng.randrange(100, vocab - 1)  # noqa: E731
    n_ctx = a.ctx + 2 * a.rounds + max(prompts) + 16
    for p in prompts:
        ctx = kvrt.Context(model, n_ctx=n_ctx, n_seq_max=a.seqs + 1, n_batch=512, n_threads=a.threads,
                           prefix_caching=False)
        seqs = {i: [tok() for _ in range(a.ctx)] for i in range(a.seqs)}
        ctx.prefill_batch(list(seqs.items()))
        times = {"mixed": [], "split": []}
        for r in range(2 * a.rounds):
            new = {i: tok() for i in seqs}
            prompt = [tok() for _ in range(p)]
            kind = "mixed" if r % 2 == 0 else "split"
            t0 = time.perf_counter()
            if kind == "mixed":
                for i in seqs:
                    seqs[i].append(new[i])
                ctx.prefill_batch(list(seqs.items()) + [(a.seqs, prompt)])
            else:
                ctx.decode(list(new.keys()), list(new.values()))
                ctx.prefill(a.seqs, prompt)
                for i in seqs:
                    seqs[i].append(new[i])
            times[kind].append(time.perf_counter() - t0)
        mixed, split = statistics.median(times["mixed"]), statistics.median(times["split"])
        common = {"threads": a.threads, "seqs": a.seqs, "context": a.ctx, "prompt": p, "rows": a.seqs + p,
                  "rounds": a.rounds, "model": os.path.basename(a.model)}
        print(json.dumps(dict(bench="mixed_rounds", metric="round_split_ms", value=round(1e3 * split, 3), unit="ms",
                              **common)))
        print(json.dumps(dict(bench="mixed_rounds", metric="round_mixed_ms", value=round(1e3 * mixed, 3), unit="ms",
                              baseline="round_split_ms", baseline_value=round(1e3 * split, 3),
                              ratio=round(split / mixed, 4), **common)))
        ctx.close()
    model.close()


if __name__ == "__main__":
    main()
