#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""Generates kvrt's llama.cpp reference data for SmolLM2-135M-Instruct (Q4_1 GGUF).

Writes (both committed; kvrt's tests read them, nothing runs llama.cpp at test time):
  tests/data/llamacpp_reference.json   tokens, greedy continuations, per-step top-10 logits
  tests/data/llamacpp_last_logits.bin  full logit vectors of the last prompt position of
                                       two prompts (format below), for debugging

How to run (llama.cpp is a reference/benchmark tool only; scripts/setup.sh does not
install it because building it takes ~15 minutes on 2 cores):

  CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_OPENMP=ON" CMAKE_BUILD_PARALLEL_LEVEL=2 \\
      pip install --no-binary llama-cpp-python llama-cpp-python==0.3.36
  python3 scripts/reference/gen_llamacpp_reference.py [--model PATH] [--check-variance]

The committed data was produced with llama-cpp-python 0.3.36 (the llama.cpp it vendors),
built from source with GGML_NATIVE=ON on an AMD Zen 5 (AVX-512), n_threads=2. The JSON
records the version and llama.cpp's system info; regenerating with another version may
move logits by a few 1e-3 and can flip near-ties (see "top1_margin").

What is computed, for each of the prompts in PROMPTS:
  - tokens: llama.cpp's tokenization of "text", special tokens parsed (so "<|im_start|>"
    is one token), BOS added only if the GGUF says so (tokenizer.ggml.add_bos_token is
    false for this model: no BOS).
  - The prompt is evaluated in one batch with logits for every position
    (logits_all=True, n_ctx=1024, n_batch=n_ubatch=512, flash attention off, F16 KV cache).
  - prompt_top1[i] = [argmax id, max logit] of the logits at prompt position i.
  - 32 greedy steps: continuation[k] = argmax of the logits at the current last position
    (lowest id on exact ties), then that token is evaluated as a one-token batch. EOS is
    NOT treated as a stop: the continuation is the raw forward pass, always 32 tokens;
    first_eos_step says where the model would have stopped.
  - steps[k] for k = 0..32 (33 entries): the logits that predict continuation[k]; step 0
    is the last prompt position, step k > 0 is the position of continuation[k-1], step 32
    is the position of continuation[31] (its argmax is "next_after_continuation").
    Each entry: pos (0-based position in the sequence), top1 [id, logit], top1_margin
    (top-1 minus top-2 logit: small margins are where an exact-but-different kernel may
    legitimately pick another token), top10 [[id, logit], ...] by decreasing logit,
    mean and std (population) of the whole logit vector.
  Logits are float32 from llama.cpp, written rounded to 5 decimals.

llamacpp_last_logits.bin (little-endian):
  offset 0   char[8]  magic "KVRTLOGT"
  offset 8   u32      version = 1
  offset 12  u32      n_entries
  offset 16  u32      n_vocab
  offset 20  u32      reserved = 0
  then n_entries records of:
             u32      prompt index (into the JSON's "prompts")
             u32      position (0-based, = n_prompt_tokens - 1)
             f32[n_vocab] the logits at that position, exactly as llama.cpp returned them

--check-variance re-runs every prompt with n_threads=1, with flash attention on, and with
the prompt fed one token per batch (pure decode steps), and prints how far llama.cpp
moves against itself (max |delta| of top-1 logits, continuation mismatches): the noise
floor that kvrt's tolerances must sit above. It writes nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import sys
from typing import Dict, List

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvrt_prompts as kp  # noqa: E402

DEFAULT_MODEL = os.path.join(
    os.environ.get("KVRT_MODEL_DIR", os.path.expanduser("~/.cache/kvrt/models")),
    "SmolLM2-135M-Instruct.Q4_1.gguf",
)
OUT_JSON = os.path.join(kp.REPO_ROOT, "tests", "data", "llamacpp_reference.json")
OUT_BIN = os.path.join(kp.REPO_ROOT, "tests", "data", "llamacpp_last_logits.bin")

N_STEPS = 32
TOP_K = 10
N_THREADS = 2
N_CTX = 1024
LAST_LOGITS_PROMPTS = ("sky", "chat_capital")

LONG_PARAGRAPH = (
    "Lighthouses have guided sailors along dangerous coasts for more than two thousand years. "
    "The most famous of the ancient towers stood on the island of Pharos, at the entrance to the "
    "harbour of Alexandria, and was counted among the wonders of the world. Its keepers burned "
    "wood and oil in an open fire at the top, and a polished metal mirror is said to have thrown "
    "the light far out to sea. For many centuries after it fell, most lights were simple coal or "
    "candle fires, and ships still ran aground on nights of fog and storm. Everything changed in "
    "1822, when the French physicist Augustin Fresnel designed a lens made of concentric rings of "
    "glass prisms. The lens bent the light of a single lamp into a narrow, powerful beam that could "
    "be seen more than twenty miles away, and it was lighter and cheaper than the huge mirrors it "
    "replaced. Within a few decades, Fresnel lenses were installed in lighthouses around the world. "
    "Keepers lived in small cottages beside the towers with their families, trimming the wicks, "
    "winding the clockwork that turned the lens, and writing the weather in the log book every few "
    "hours. In the twentieth century electric lamps, automatic switches and radio beacons made the "
    "keepers unnecessary, and the last staffed lighthouses in many countries were automated in the "
    "1980s and 1990s. Today satellite navigation tells a ship its position to within a few metres, "
    "yet the old towers still shine, because a light that can be seen with the naked eye does not "
    "depend on electronics that may fail. In the end, the lighthouse"
)

# (name, kind, text). The texts are final: chat prompts are rendered here with
# kvrt_prompts.chatml, which main() checks against the GGUF's own template.
PROMPTS = [
    ("sky", "continuation", "The sky is"),
    ("chat_capital", "chat", kp.chatml([("user", "What is the capital of France?")])),
    ("code_python", "code",
     'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n    if n < 2:\n        return n\n'),
    ("list_fruits", "list", "Here is a list of five fruits:\n1. Apple\n2. Banana\n3."),
    ("long_paragraph", "long", LONG_PARAGRAPH),
    ("chat_poem", "chat", kp.chatml([("user", "Write a short poem about the sea.")])),
    ("numbers", "continuation", "1, 1, 2, 3, 5, 8, 13, 21,"),
    ("unicode", "continuation",
     "Zürich, São Paulo, Kraków and 東京 are big cities. The café next to the station in Zürich serves"),
    ("json", "code", '{"name": "Alice", "age": 30, "languages": ["English", '),
    ("chat_multiturn", "chat", kp.chatml([
        ("user", "Hi! My name is Sam and I live in Lisbon."),
        ("assistant", "Hello Sam! How can I help you today?"),
        ("user", "Which city do I live in?"),
    ])),
]


def r5(x: float) -> float:
    return round(float(x), 5)


def make_llama(model: str, n_threads: int, flash_attn: bool):
    import llama_cpp

    return llama_cpp.Llama(
        model_path=model,
        n_ctx=N_CTX,
        n_batch=512,
        n_ubatch=512,
        n_threads=n_threads,
        n_threads_batch=n_threads,
        logits_all=True,
        flash_attn=flash_attn,
        seed=0,
        verbose=False,
    )


def check_template(llm) -> None:
    """kvrt_prompts.chatml must render exactly what the GGUF's Jinja template renders."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    tmpl = llm.metadata.get("tokenizer.chat_template")
    if not tmpl:
        raise SystemExit("the GGUF has no tokenizer.chat_template")
    env = ImmutableSandboxedEnvironment(loader=jinja2.BaseLoader(), trim_blocks=True, lstrip_blocks=True)
    t = env.from_string(tmpl)
    cases = [
        [("user", "What is the capital of France?")],
        [("user", "a"), ("assistant", "b"), ("user", "c")],
        [("system", "Custom system."), ("user", "x")],
    ]
    for msgs in cases:
        want = t.render(messages=[{"role": r, "content": c} for r, c in msgs], add_generation_prompt=True,
                        bos_token="", eos_token="")
        got = kp.chatml(msgs)
        if want != got:
            raise SystemExit(f"kvrt_prompts.chatml disagrees with the GGUF template:\n{want!r}\n{got!r}")


def run_prompt(llm, text: str, add_bos: bool, chunk: int = 0) -> Dict:
    """chunk = 0: the prompt in one batch; chunk = c > 0: in batches of c tokens."""
    tokens = llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)
    if len(tokens) + N_STEPS + 1 > N_CTX:
        raise SystemExit(f"prompt too long for n_ctx={N_CTX}: {len(tokens)} tokens")
    llm.reset()
    if chunk <= 0:
        llm.eval(tokens)
    else:
        for i in range(0, len(tokens), chunk):
            llm.eval(tokens[i:i + chunk])
    n = len(tokens)
    scores = llm.scores  # [n_ctx, n_vocab], rows 0..n_tokens-1 are valid (logits_all)
    prompt_top1 = [[int(np.argmax(scores[i])), r5(np.max(scores[i]))] for i in range(n)]

    steps: List[Dict] = []
    continuation: List[int] = []
    last_logits = np.array(scores[n - 1], dtype=np.float32, copy=True)
    for k in range(N_STEPS + 1):
        pos = llm.n_tokens - 1
        row = np.asarray(scores[pos], dtype=np.float32)
        order = np.argsort(-row, kind="stable")[:TOP_K]
        top1 = int(order[0])
        steps.append({
            "pos": pos,
            "top1": [top1, r5(row[top1])],
            "top1_margin": r5(row[order[0]] - row[order[1]]),
            "top10": [[int(i), r5(row[i])] for i in order],
            "mean": round(float(row.mean(dtype=np.float64)), 6),
            "std": round(float(row.std(dtype=np.float64)), 6),
        })
        if k < N_STEPS:
            continuation.append(top1)
            llm.eval([top1])
    return {"tokens": tokens, "continuation": continuation, "steps": steps, "prompt_top1": prompt_top1,
            "last_logits": last_logits}


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_variance(model: str, base: List[Dict], add_bos: bool) -> None:
    variants = (("n_threads=1", 1, False, 0), ("flash_attn=on", N_THREADS, True, 0),
                ("prompt 1 token/batch", N_THREADS, False, 1))
    for label, threads, fa, chunk in variants:
        llm = make_llama(model, threads, fa)
        worst = 0.0
        mism = 0
        for (name, _, text), ref in zip(PROMPTS, base):
            got = run_prompt(llm, text, add_bos, chunk)
            d = max(abs(a["top1"][1] - b["top1"][1]) for a, b in zip(ref["steps"], got["steps"])
                    if a["top1"][0] == b["top1"][0]) if got["continuation"] == ref["continuation"] else float("nan")
            dp = max(abs(a[1] - b[1]) for a, b in zip(ref["prompt_top1"], got["prompt_top1"]))
            same = got["continuation"] == ref["continuation"]
            mism += 0 if same else 1
            if same:
                worst = max(worst, d)
            print(f"  {label:14s} {name:15s} continuation {'same' if same else 'DIFFERS'}"
                  f"  max|d top1 logit| steps={d:.2e} prompt={dp:.2e}")
        print(f"{label}: {mism} continuation(s) differ; worst top-1 logit delta on matching ones {worst:.2e}")
        llm.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--check-variance", action="store_true",
                    help="compare against n_threads=1 and flash attention on; write nothing")
    args = ap.parse_args()

    import llama_cpp

    llm = make_llama(args.model, N_THREADS, False)
    check_template(llm)
    add_bos = bool(llm._model.add_bos_token())
    meta_bos = llm.metadata.get("tokenizer.ggml.add_bos_token")
    eos = int(llm.token_eos())
    n_vocab = int(llm.n_vocab())

    results = []
    for name, kind, text in PROMPTS:
        res = run_prompt(llm, text, add_bos)
        results.append(res)
        first_eos = next((i for i, t in enumerate(res["continuation"]) if t == eos), None)
        print(f"{name:15s} {len(res['tokens']):4d} tokens -> "
              f"{llm.detokenize(res['continuation'], special=True).decode('utf-8', 'replace')!r}"
              f" (min margin {min(s['top1_margin'] for s in res['steps'][:N_STEPS]):.4f})")
        res["first_eos"] = first_eos

    if args.check_variance:
        check_variance(args.model, results, add_bos)
        return

    doc = {
        "generator": "scripts/reference/gen_llamacpp_reference.py",
        "llama_cpp_python_version": llama_cpp.__version__,
        "llama_cpp_system_info": llama_cpp.llama_print_system_info().decode().strip(),
        "model": {
            "file": os.path.basename(args.model),
            "sha256": sha256_file(args.model),
            "n_vocab": n_vocab,
            "add_bos": add_bos,
            "gguf_add_bos_token": meta_bos,
            "bos_token_id": int(llm.token_bos()),
            "eos_token_id": eos,
        },
        "settings": {
            "n_threads": N_THREADS,
            "n_ctx": N_CTX,
            "n_batch": 512,
            "n_ubatch": 512,
            "flash_attn": False,
            "kv_cache_type": "f16",
            "prompt_eval": "one batch, logits for every position",
            "decode": "one token per batch, greedy argmax (lowest id on ties), EOS not a stop",
            "tokenize": "special tokens parsed; BOS only if the GGUF says so",
            "n_steps": N_STEPS,
            "top_k_recorded": TOP_K,
            "logit_rounding": "5 decimals",
        },
        "prompts": [],
    }
    for i, ((name, kind, text), res) in enumerate(zip(PROMPTS, results)):
        doc["prompts"].append({
            "index": i,
            "name": name,
            "kind": kind,
            "text": text,
            "tokens": res["tokens"],
            "n_tokens": len(res["tokens"]),
            "continuation": res["continuation"],
            "continuation_text": llm.detokenize(res["continuation"], special=True).decode("utf-8", "replace"),
            "first_eos": res["first_eos"],
            "next_after_continuation": res["steps"][N_STEPS]["top1"][0],
            "prompt_top1": res["prompt_top1"],
            "steps": res["steps"],
        })

    os.makedirs(os.path.dirname(OUT_JSON), exist_ok=True)
    with open(OUT_JSON, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")

    names = [p[0] for p in PROMPTS]
    entries = [names.index(n) for n in LAST_LOGITS_PROMPTS]
    with open(OUT_BIN, "wb") as f:
        f.write(b"KVRTLOGT")
        f.write(struct.pack("<IIII", 1, len(entries), n_vocab, 0))
        for idx in entries:
            v = results[idx]["last_logits"].astype("<f4")
            assert v.shape == (n_vocab,)
            f.write(struct.pack("<II", idx, len(results[idx]["tokens"]) - 1))
            f.write(v.tobytes())
    print(f"wrote {OUT_JSON} ({os.path.getsize(OUT_JSON)} bytes) and {OUT_BIN} ({os.path.getsize(OUT_BIN)} bytes)")
    llm.close()


if __name__ == "__main__":
    main()
