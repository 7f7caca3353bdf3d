#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""llama.cpp baseline for kvrt's benchmarks, on the same GGUF, through llama-cpp-python.

Prints JSON lines like bench/bench_json.hpp:
  {"bench":"llamacpp","metric":...,"value":...,"unit":...,"threads":N,"flash_attn":bool,...}

Run (llama-cpp-python is not installed by scripts/setup.sh; see bench/README.md):
  CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_OPENMP=ON" CMAKE_BUILD_PARALLEL_LEVEL=2 \\
      pip install --no-binary llama-cpp-python llama-cpp-python==0.3.36
  python3 bench/llamacpp_baseline.py [--model PATH] [--threads 2,1] [--flash-attn off,on]
                                     [--reps 3] [--only prefill,decode,ttft,docs]

Metrics, per thread count and attention path (llama.cpp has two on the CPU: the plain
KQ-softmax-V graph, flash_attn=false, and its fused flash-attention kernel, flash_attn=true;
llama-bench's default "auto" picks the fused one on the CPU). After each pair, a line with
"flash_attn":"best" repeats the faster of the two: that is the baseline kvrt's ratios use.

  model_load (ms): the construction of the Llama object (it maps the GGUF, prepares its
      buffers and creates its context), once per thread count and attention path, after a
      first load (the probe) has put the file in the page cache. Lower is better.

  prefill_2048 (tokens/s): a fresh sequence of exactly 2,048 prompt tokens evaluated as one
      llama_decode call (n_batch=2048, n_ubatch=512, llama-bench's defaults), logits of the
      last position only. One untimed warm-up run, then --reps timed runs; value = median.
  decode_at_4096 (tokens/s): the 4,096-token prompt is prefilled (untimed; its own rate is
      reported as prefill_4096), then 64 greedy decode steps are timed: each step evaluates
      one token and takes the argmax of its logits (the next step's input). 4 untimed
      warm-up steps first; between repetitions the KV cache is cut back to 4,096 positions,
      so every repetition decodes positions 4096..4159. value = median of --reps.
  ttft_A1, ttft_B1, ttft_A2, ttft_B2 (ms): the demo's request sequence A, B, A, B on ONE
      llama.cpp context (one server slot with prompt caching): each request goes through
      Llama.generate(), which keeps the longest common token prefix with what the context
      holds, drops the rest of the KV cache and evaluates only the suffix; TTFT = from the
      call (prompt token ids in hand) until the first greedy token is returned. Each
      request then generates up to 32 more tokens (untimed, stopping at EOS), like a
      server answering. Then ttft_C (the edited document after B2: the common prefix ends
      at the budget figure), and ttft_cold_A / ttft_cold_B (empty cache). Extra fields:
      prompt_tokens, reused_tokens, computed_tokens.
  ttft_docs_round1_median, ttft_docs_round2_median (ms): more documents than the slot holds.
      Requests on documents 1, 2, 3 (kvrt_prompts.archive_requests: the demo document under
      three title lines, + "List the deadlines."), then 1, 2, 3 again, on ONE context as above;
      each request's prefix match ends at the title line, so the second round recomputes what
      the first did. Median TTFT of each round; ttft_docs_R{round}_D{k} per request.

prefill and decode lines also carry tokens_per_cpu_s: tokens per second of process CPU time
(all threads). On a shared, loaded machine wall-clock figures collapse (OpenMP threads
spin at barriers while their partner is descheduled); with threads=1 the CPU-time rate is
close to what a quiet machine gives. Compare like with like.

Prompt construction (deterministic; scripts/reference/kvrt_prompts.py; bench/README.md):
  - bench prompts: tools/kvrt/demo_document.txt read as UTF-8, the trailing newline
    stripped, tokenized as plain text (no template, no BOS, special tokens not parsed),
    then repeated end to end and truncated to exactly 2,048 (prefill) or 4,096 (decode)
    tokens. kvrt must feed the same token ids.
  - demo requests: ChatML with the default system prompt, user turn = document + "\\n\\n" +
    question; tokenized with special tokens parsed, no BOS.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Dict, List

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "reference"))
import kvrt_prompts as kp  # noqa: E402

DEFAULT_MODEL = os.path.join(
    os.environ.get("KVRT_MODEL_DIR", os.path.expanduser("~/.cache/kvrt/models")),
    "SmolLM2-135M-Instruct.Q4_1.gguf",
)
PREFILL_TOKENS = 2048
DECODE_CONTEXT = 4096
DECODE_STEPS = 64
DECODE_WARMUP_STEPS = 4
ANSWER_TOKENS = 32
N_CTX = 8192


def emit(metric: str, value: float, unit: str, **extra) -> None:
    rec = {"bench": "llamacpp", "metric": metric, "value": round(value, 4), "unit": unit}
    rec.update(extra)
    rec["load1"] = round(os.getloadavg()[0], 2)  # the machine is shared: keep its load beside each figure
    print(json.dumps(rec), flush=True)


def make_llama(model: str, threads: int, flash_attn: bool):
    import llama_cpp

    return llama_cpp.Llama(
        model_path=model,
        n_ctx=N_CTX,
        n_batch=2048,
        n_ubatch=512,
        n_threads=threads,
        n_threads_batch=threads,
        logits_all=False,
        flash_attn=flash_attn,
        seed=0,
        verbose=False,
    )


CPU_SECONDS: List[float] = []  # process CPU time of the last timed region(s)


def cold_prefill(llm, tokens: List[int]) -> float:
    """Evaluates tokens on an empty cache; returns wall seconds (CPU seconds in CPU_SECONDS)."""
    llm.reset()
    llm._ctx.kv_cache_clear()
    c0 = time.process_time()
    t0 = time.perf_counter()
    llm.eval(tokens)
    t = time.perf_counter() - t0
    CPU_SECONDS.append(time.process_time() - c0)
    return t


def last_logits(llm) -> np.ndarray:
    import llama_cpp

    ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),))


def bench_prefill(llm, tokens: List[int], reps: int, tags: Dict) -> float:
    cold_prefill(llm, tokens)  # warm-up
    CPU_SECONDS.clear()
    secs = [cold_prefill(llm, tokens) for _ in range(reps)]
    rates = [len(tokens) / s for s in secs]
    med = statistics.median(rates)
    emit(f"prefill_{len(tokens)}", med, "tokens/s", min=round(min(rates), 2), max=round(max(rates), 2),
         reps=reps, tokens_per_cpu_s=round(len(tokens) / statistics.median(CPU_SECONDS), 2), **tags)
    return med


def bench_decode(llm, tokens: List[int], reps: int, tags: Dict) -> float:
    s = cold_prefill(llm, tokens)
    emit(f"prefill_{len(tokens)}", len(tokens) / s, "tokens/s", reps=1, **tags)
    n0 = llm.n_tokens
    first = int(np.argmax(last_logits(llm)))  # greedy token after the 4,096-token prompt

    def run(steps: int) -> float:
        """Cuts the cache back to the prompt, then decodes `steps` greedy tokens."""
        llm._ctx.kv_cache_seq_rm(-1, n0, -1)
        llm.n_tokens = n0
        tok = first
        c0 = time.process_time()
        t0 = time.perf_counter()
        for _ in range(steps):
            llm.eval([tok])
            tok = int(np.argmax(last_logits(llm)))
        t = time.perf_counter() - t0
        CPU_SECONDS.append(time.process_time() - c0)
        return t

    run(DECODE_WARMUP_STEPS)
    CPU_SECONDS.clear()
    rates = [DECODE_STEPS / run(DECODE_STEPS) for _ in range(reps)]
    med = statistics.median(rates)
    emit(f"decode_at_{len(tokens)}", med, "tokens/s", steps=DECODE_STEPS, min=round(min(rates), 2),
         max=round(max(rates), 2), reps=reps, tokens_per_cpu_s=round(DECODE_STEPS / statistics.median(CPU_SECONDS), 2),
         **tags)
    return med


def request(llm, tokens: List[int], eos: int) -> Dict:
    """One server-style request on the context's single slot; returns TTFT and reuse."""
    cached = list(llm._input_ids)
    reused = kp.common_prefix_len(cached, tokens)
    if reused == len(tokens):  # Llama.generate re-evaluates one token to get fresh logits
        reused -= 1
    t0 = time.perf_counter()
    gen = llm.generate(tokens, temp=0.0, top_k=1, top_p=1.0, min_p=0.0, repeat_penalty=1.0)
    first = next(gen)
    ttft = time.perf_counter() - t0
    out = [first]
    while len(out) < ANSWER_TOKENS and out[-1] != eos:
        out.append(next(gen))
    gen.close()
    return {"ttft": ttft, "reused": reused, "computed": len(tokens) - reused, "answer": out}


def warm_empty_slot(llm) -> None:
    """Warm-up on an unrelated prompt (so the first request does not pay one-time costs), then
    an empty slot."""
    llm.reset()
    llm._ctx.kv_cache_clear()
    warm = llm.tokenize(b"Warm-up.", add_bos=False, special=False)
    next(llm.generate(warm, temp=0.0))
    llm.reset()
    llm._ctx.kv_cache_clear()


def bench_ttft(llm, reqs: Dict[str, List[int]], tags: Dict, cold: bool = True) -> Dict[str, float]:
    eos = llm.token_eos()
    res = {}
    warm_empty_slot(llm)
    for label, key in (("A1", "A"), ("B1", "B"), ("A2", "A"), ("B2", "B"), ("C", "C")):
        r = request(llm, reqs[key], eos)
        res[label] = r["ttft"]
        emit(f"ttft_{label}", r["ttft"] * 1e3, "ms", request=key, prompt_tokens=len(reqs[key]),
             reused_tokens=r["reused"], computed_tokens=r["computed"], **tags)
    for key in ("A", "B") if cold else ():
        llm.reset()
        llm._ctx.kv_cache_clear()
        r = request(llm, reqs[key], eos)
        res[f"cold_{key}"] = r["ttft"]
        emit(f"ttft_cold_{key}", r["ttft"] * 1e3, "ms", request=key, prompt_tokens=len(reqs[key]),
             reused_tokens=0, computed_tokens=len(reqs[key]), **tags)
    return res


def bench_ttft_docs(llm, reqs: List[List[int]], tags: Dict) -> Dict[str, float]:
    eos = llm.token_eos()
    warm_empty_slot(llm)
    res = {}
    for rnd in (1, 2):
        times = []
        for k, toks in enumerate(reqs, start=1):
            r = request(llm, toks, eos)
            times.append(r["ttft"])
            emit(f"ttft_docs_R{rnd}_D{k}", r["ttft"] * 1e3, "ms", prompt_tokens=len(toks),
                 reused_tokens=r["reused"], computed_tokens=r["computed"], **tags)
        res[f"docs_round{rnd}_median"] = statistics.median(times)
        emit(f"ttft_docs_round{rnd}_median", res[f"docs_round{rnd}_median"] * 1e3, "ms", documents=len(reqs), **tags)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description="llama.cpp baseline for kvrt (JSON lines)")
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--threads", default="2,1", help="comma-separated thread counts")
    ap.add_argument("--flash-attn", default="off,on", help="off, on or off,on")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="prefill,decode,ttft,docs")
    ap.add_argument("--no-cold", action="store_true", help="skip ttft_cold_A/B (A1 is cold anyway)")
    args = ap.parse_args()

    import llama_cpp

    threads = [int(t) for t in args.threads.split(",")]
    fas = [{"off": False, "on": True}[f] for f in args.flash_attn.split(",")]
    only = set(args.only.split(","))

    doc = kp.load_demo_document()
    probe = make_llama(args.model, threads[0], False)
    doc_tokens = probe.tokenize(doc.encode("utf-8"), add_bos=False, special=False)
    reqs = {k: probe.tokenize(v.encode("utf-8"), add_bos=False, special=True)
            for k, v in kp.demo_requests(doc).items()}
    docs = [probe.tokenize(v.encode("utf-8"), add_bos=False, special=True) for v in kp.archive_requests(doc)]
    probe.close()
    emit("demo_document_tokens", len(doc_tokens), "tokens", llama_cpp_python=llama_cpp.__version__)
    for k in ("A", "B", "C"):
        emit(f"request_{k}_tokens", len(reqs[k]), "tokens")
    emit("common_prefix_A_B", kp.common_prefix_len(reqs["A"], reqs["B"]), "tokens")
    emit("common_prefix_B_C", kp.common_prefix_len(reqs["B"], reqs["C"]), "tokens")

    prefill_prompt = kp.repeat_to_length(doc_tokens, PREFILL_TOKENS)
    decode_prompt = kp.repeat_to_length(doc_tokens, DECODE_CONTEXT)

    for t in threads:
        best: Dict[str, tuple] = {}
        for fa in fas:
            tags = {"threads": t, "flash_attn": fa}
            t0 = time.perf_counter()
            llm = make_llama(args.model, t, fa)
            figs = {"model_load": ((time.perf_counter() - t0) * 1e3, "ms", False)}
            if "prefill" in only:
                figs["prefill_2048"] = (bench_prefill(llm, prefill_prompt, args.reps, tags), "tokens/s", True)
            if "decode" in only:
                figs["decode_at_4096"] = (bench_decode(llm, decode_prompt, args.reps, tags), "tokens/s", True)
            if "ttft" in only:
                for k, v in bench_ttft(llm, reqs, tags, not args.no_cold).items():
                    figs[f"ttft_{k}"] = (v * 1e3, "ms", False)
            if "docs" in only:
                for k, v in bench_ttft_docs(llm, docs, tags).items():
                    figs[f"ttft_{k}"] = (v * 1e3, "ms", False)
            llm.close()
            for m, (v, unit, higher) in figs.items():
                if m not in best or (v > best[m][0] if higher else v < best[m][0]):
                    best[m] = (v, unit, higher, fa)
        if len(fas) > 1:
            for m, (v, unit, _, fa) in best.items():
                emit(m, v, unit, threads=t, flash_attn="best", best_is_flash_attn=fa)


if __name__ == "__main__":
    main()
