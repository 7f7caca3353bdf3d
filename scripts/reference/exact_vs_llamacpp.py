#!/usr/bin/env python3
"""How far is llama.cpp's reference from plain float math on the same dequantised weights?

Runs SmolLM2 (llama architecture) in numpy from the GGUF's weights dequantised to float
(gguf-py's dequantiser), with NO activation quantisation and no fp16 rounding (float64
everywhere), a KV cache of float64 rows, and greedy decoding, on the prompts of
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
import kvrt_prompts as kp  # noqa: E402

DEFAULT_MODEL = os.path.join(
    os.environ.get("KVRT_MODEL_DIR", os.path.expanduser("~/.cache/kvrt/models")),
    "SmolLM2-135M-Instruct.Q4_1.gguf",
)
REF = os.path.join(kp.REPO_ROOT, "tests", "data", "llamacpp_reference.json")


class ExactLlama:
    def __init__(self, path: str):
        import gguf

        r = gguf.GGUFReader(path)

        def field(key):
            f = r.fields[key]
            return f.parts[f.data[0]][0]

        arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
        assert arch == "llama", arch
        self.n_layer = int(field("llama.block_count"))
        self.n_head = int(field("llama.attention.head_count"))
        self.n_kv = int(field("llama.attention.head_count_kv"))
        self.n_embd = int(field("llama.embedding_length"))
        self.d = self.n_embd // self.n_head
        self.eps = float(field("llama.attention.layer_norm_rms_epsilon"))
        self.base = float(field("llama.rope.freq_base"))
        self.w = {}
        for t in r.tensors:
            a = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float64)
            self.w[t.name] = a.reshape([int(x) for x in reversed(t.shape)]) if len(t.shape) > 1 else a.reshape(-1)
        self.out = self.w.get("output.weight", self.w["token_embd.weight"])
        self.inv = self.base ** (-np.arange(0, self.d, 2) / self.d)
        self.reset()

    def reset(self):
        self.k = [np.zeros((0, self.n_kv, self.d)) for _ in range(self.n_layer)]
        self.v = [np.zeros((0, self.n_kv, self.d)) for _ in range(self.n_layer)]

    def _rms(self, x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * w

    def _rope(self, x, pos):  # llama.cpp rope type NORM: adjacent pairs (GGUF Q/K are permuted for it)
        ang = pos[:, None] * self.inv[None, :]
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        x0, x1 = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = x0 * c - x1 * s
        out[..., 1::2] = x0 * s + x1 * c
        return out

    def eval(self, tokens):
        """Appends tokens to the cache; returns their logits [len(tokens), n_vocab]."""
        w, T, p0 = self.w, len(tokens), self.k[0].shape[0]
        pos = np.arange(p0, p0 + T, dtype=np.float64)
        x = w["token_embd.weight"][tokens]
        n_all = p0 + T
        mask = np.where(np.arange(n_all)[None, :] <= pos[:, None], 0.0, -np.inf)
        g = self.n_head // self.n_kv
        for l in range(self.n_layer):
            p = f"blk.{l}."
            h = self._rms(x, w[p + "attn_norm.weight"])
            q = self._rope((h @ w[p + "attn_q.weight"].T).reshape(T, self.n_head, self.d), pos)
            k = self._rope((h @ w[p + "attn_k.weight"].T).reshape(T, self.n_kv, self.d), pos)
            v = (h @ w[p + "attn_v.weight"].T).reshape(T, self.n_kv, self.d)
            self.k[l] = np.concatenate([self.k[l], k])
            self.v[l] = np.concatenate([self.v[l], v])
            o = np.empty((T, self.n_head, self.d))
            for hh in range(self.n_head):
                s = q[:, hh] @ self.k[l][:, hh // g].T / np.sqrt(self.d) + mask
                s = np.exp(s - s.max(-1, keepdims=True))
                o[:, hh] = (s / s.sum(-1, keepdims=True)) @ self.v[l][:, hh // g]
            x = x + o.reshape(T, -1) @ w[p + "attn_output.weight"].T
            h = self._rms(x, w[p + "ffn_norm.weight"])
            gt = h @ w[p + "ffn_gate.weight"].T
            x = x + ((gt / (1 + np.exp(-gt))) * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
        return self._rms(x, w["output_norm.weight"]) @ self.out.T


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--prompts", default="", help="comma-separated indices (default: all)")
    args = ap.parse_args()
    ref = json.load(open(REF, encoding="utf-8"))
    m = ExactLlama(args.model)
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
