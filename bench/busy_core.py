#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""Decode speed while another program keeps one core busy: the desktop case, where kvrt shares
the machine with whatever else runs. Every phase of a decode step waits for its slowest thread,
and the thread that shares its core with the other program runs only part of the time, so a
fixed team of every core can fall below one thread. With n_threads 0 the runtime chooses each
step's count from measured step times (src/runtime/thread_governor.hpp).

For each scenario ("quiet": nothing else running; "busy": a spinning process pinned to the last
CPU) runs `kvrt bench --only decode` with -t 0 (governed), -t N (every core, fixed) and -t 1,
alternating, and prints JSON lines like bench/bench_json.hpp: the governed decode rate against
the fixed N-thread rate of the same scenario (ratio above 1: governed is faster) and against the
better of the two fixed counts.

  python3 bench/busy_core.py [--kvrt build/release/tools/kvrt] [--model M] [--rounds 2]
      [--reps 3] [--decode-ctx 4096]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys


def decode_rate(kvrt, model, threads, reps, ctx):
    out = subprocess.run([kvrt, "bench", "-m", model, "-t", str(threads), "--reps", str(reps), "--only", "decode",
                          "--decode-ctx", str(ctx), "--json"], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        j = json.loads(line)
        if j.get("metric") == f"decode_at_{ctx}":
            return float(j["value"])
    raise RuntimeError("kvrt bench printed no decode_at figure")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kvrt", default="build/release/tools/kvrt")
    ap.add_argument("--model", default=os.path.join(os.environ.get("KVRT_MODEL_DIR", os.path.expanduser("~/.cache/kvrt/models")),
                                                    "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--decode-ctx", type=int, default=4096)
    a = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        print("# busy_core.py: one CPU, nothing to compare", file=sys.stderr)
        return 0
    n = len(cpus)
    for scenario in ("quiet", "busy"):
        spinner = None
        if scenario == "busy":
            spinner = subprocess.Popen([sys.executable, "-c",
                                        f"import os\nos.sched_setaffinity(0, {{{cpus[-1]}}})\nwhile True: pass"])
        try:
            rates = {0: [], n: [], 1: []}
            for _ in range(a.rounds):
                for t in (0, n, 1):
                    rates[t].append(decode_rate(a.kvrt, a.model, t, a.reps, a.decode_ctx))
        finally:
            if spinner:
                spinner.kill()
                spinner.wait()
        med = {t: statistics.median(v) for t, v in rates.items()}
        extra = {"scenario": scenario, "cpus": n, "decode_ctx": a.decode_ctx, "rounds": a.rounds,
                 "governed_runs": rates[0], f"fixed_{n}_runs": rates[n], "fixed_1_runs": rates[1]}
        best = max(med[n], med[1])
        for base, value in ((f"fixed_{n}_threads", med[n]), ("best_fixed", best)):
            print(json.dumps({"bench": "busy_core", "metric": "decode_tokens_per_s_governed", "value": round(med[0], 2),
                              "unit": "tokens/s", "baseline": base, "baseline_value": round(value, 2),
                              "ratio": round(med[0] / value, 3), **extra}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
