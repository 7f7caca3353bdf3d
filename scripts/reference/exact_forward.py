#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""Float64 numpy forward of kvrt's decoder architectures (llama, qwen2, gemma3): the
"exact math" reference that kvrt and llama.cpp are both measured against.

The weights are the GGUF's own, dequantised by gguf-py (so the quantisation of the
*weights* is part of the model, as it is for both runtimes); everything after that is
float64: no activation quantisation, no fp16/bf16 rounding, float64 K/V rows. This is
written from the architectures' definitions (llama.cpp's graphs, src/llama-model.cpp, and
the Hugging Face modelling code), not from kvrt's C++, so it can catch a shared mistake:

  llama  (SmolLM2)   x = embd[tok]; per layer: h = RMSNorm(x) * attn_norm;
                     q, k, v = h Wq^T, h Wk^T, h Wv^T; RoPE "NORM" (adjacent pairs
                     (x[2i], x[2i+1]): the converter permuted Wq/Wk for it), angle
                     pos * base^(-2i/n_rot); softmax(q.k / sqrt(head_dim) + causal mask) v;
                     x += o Wo^T; h = RMSNorm(x) * ffn_norm; x += (silu(h Wg^T) * h Wu^T) Wd^T;
                     logits = RMSNorm(x) * output_norm . W_out^T (W_out = embd when tied).
  qwen2  (Qwen2.5)   llama + biases on q, k, v; RoPE "NEOX" (halves: (x[i], x[i + n_rot/2])).
  gemma3 (Gemma 3)   x = embd[tok] * sqrt(n_embd); per-head RMSNorm of q and k (attn_q_norm,
                     attn_k_norm) before RoPE (NEOX); softmax scale 1/sqrt(key_length);
                     layers with (l + 1) % 6 != 0 attend to a sliding window of
                     `attention.sliding_window` positions (key j visible from query i iff
                     0 <= i - j < W) with RoPE base 10,000, the others (5, 11, 17) to
                     everything with base rope.freq_base (1e6); sandwich norms:
                     x += RMSNorm(o Wo^T) * post_attention_norm,
                     x += RMSNorm(ffn) * post_ffw_norm; GeGLU with GELU's tanh form;
                     output tied to the embeddings. The GGUF's norm weights already hold
                     Gemma's (1 + w), so every norm is the plain RMSNorm.

API:
    m = ExactDecoder(path)            # ~8 bytes per parameter (Qwen2.5-0.5B: ~4 GB)
    logits = m.eval(tokens)           # appends to the float64 KV cache; [len, n_vocab]
    m.reset()
    m.eval(tokens, hidden=out_list)   # also appends the residual stream after each layer
    m.greedy(prompt, 32)              # [ids]
The optional `Sim` rounds individual steps the way a runtime does (f16 K/V, Q8 activation
blocks, ...): kl_vs_exact.py uses it to attribute a runtime's distance from exact math.

Self-check (perplexity of real English text and a greedy continuation per model):
    python3 scripts/reference/exact_forward.py [--models llama,qwen2,gemma3]
Tokenises with llama.cpp when llama_cpp imports, else with kvrt's binding (KVRT_LIBRARY).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from typing import Dict, List, Optional

import numpy as np

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MODEL_DIR = os.environ.get("KVRT_MODEL_DIR", os.path.expanduser("~/.cache/kvrt/models"))
MODELS = {
    "llama": os.path.join(MODEL_DIR, "SmolLM2-135M-Instruct.Q4_1.gguf"),
    "qwen2": os.path.join(MODEL_DIR, "qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf"),
    "gemma3": os.path.join(MODEL_DIR, "gemma-3-270m-Q4_K_M.gguf"),
}

# ---------------------------------------------------------------------------
# Rounding helpers for Sim (what runtimes do to activations).


def round_f16(x):
    return x.astype(np.float16).astype(np.float64)


def round_bf16(x):
    """Round to nearest even bf16 (via the float32 bit pattern)."""
    f = np.ascontiguousarray(x, dtype=np.float32)
    b = f.view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return b.astype(np.uint32).view(np.float32).astype(np.float64)


def round_f32(x):
    return x.astype(np.float32).astype(np.float64)


def quant_q8_blocks(x, block: int, scale: str):
    """Activations quantised to int8 per `block` elements along the last axis as the
    runtimes do before an integer matmul: d = amax / 127, q = round(x / d) (half to
    even), value q * d. scale 'f32' keeps d in float32 (kvrt, ggml's Q8_K), 'f16'
    rounds it to fp16 after the codes are computed (ggml's Q8_0 / Q8_1)."""
    shp = x.shape
    xb = x.reshape(-1, shp[-1] // block, block).astype(np.float32)
    amax = np.abs(xb).max(-1, keepdims=True)
    d = amax / np.float32(127)
    idv = np.where(d > 0, np.float32(1) / np.where(d > 0, d, 1), np.float32(0))
    q = np.rint(xb * idv)
    if scale == "f16":
        d = d.astype(np.float16)
    return (q.astype(np.float64) * d.astype(np.float64)).reshape(shp)


@dataclasses.dataclass
class Sim:
    """Roundings to apply on top of the float64 forward (all off = exact math).

    act_quant: {ggml weight type name: (block, 'f32'|'f16')}: the activation row is
               quantised that way before a matmul with a weight of that type.
    kv:        None | 'f32' | 'f16' | 'bf16': K and V rows as stored.
    q_attn:    None | 'f16': Q rounded before Q.K (llama.cpp's non-flash path).
    p_attn:    None | 'f16': softmax probabilities rounded before P.V (same).
    f32_steps: norms, RoPE, activations, residual adds rounded to float32 after each step.
    gelu_f16:  GELU's input and output rounded to fp16 (ggml's GGML_GELU_FP16 table, which
               ggml_vec_geglu_f32 reads for |x| < 10).
    """
    act_quant: Dict[str, tuple] = dataclasses.field(default_factory=dict)
    kv: Optional[str] = None
    q_attn: Optional[str] = None
    p_attn: Optional[str] = None
    f32_steps: bool = False
    gelu_f16: bool = False


# kvrt (src/kernels/weight_matmul.hpp): weights of the types it packs natively run integer
# dot products on activations quantised per 32 with float32 scales; the other quantised
# types are dequantised to f32 at load (src/model/model.cpp, packs_natively) and run on f32
# activations. K/V stored f16 by default. At HEAD b995b8f / 59a60fa packs_natively is
# Q4_0/Q4_1/Q8_0 (SIM_KVRT); work in progress extends the integer matmul to Q5_0 and the
# K-quants (SIM_KVRT_ALLQ8).
_KVRT_Q8 = (32, "f32")
SIM_KVRT = Sim(act_quant={"Q4_0": _KVRT_Q8, "Q4_1": _KVRT_Q8, "Q8_0": _KVRT_Q8}, kv="f16", f32_steps=True)
SIM_KVRT_ALLQ8 = Sim(act_quant={t: _KVRT_Q8 for t in ("Q4_0", "Q4_1", "Q5_0", "Q8_0", "Q4_K", "Q5_K", "Q6_K")},
                     kv="f16", f32_steps=True)
# llama.cpp CPU (ggml-cpu type_traits vec_dot_type): Q4_0/Q5_0/Q8_0 -> Q8_0 (fp16 d),
# Q4_1/Q5_1 -> Q8_1 (fp16 d), K-quants -> Q8_K (f32 d, blocks of 256); F16 KV; non-flash
# attention rounds Q and the softmax probabilities to f16.
SIM_LLAMACPP = Sim(act_quant={"Q4_0": (32, "f16"), "Q5_0": (32, "f16"), "Q8_0": (32, "f16"),
                              "Q4_1": (32, "f16"), "Q5_1": (32, "f16"), "Q4_K": (256, "f32"),
                              "Q5_K": (256, "f32"), "Q6_K": (256, "f32")},
                   kv="f16", q_attn="f16", p_attn="f16", f32_steps=True, gelu_f16=True)
# One rounding at a time, to attribute a runtime's distance.
SIMS = {
    "kvrt": SIM_KVRT,
    "kvrt_allq8": SIM_KVRT_ALLQ8,
    "llamacpp": SIM_LLAMACPP,
    "f32": Sim(f32_steps=True),
    "kv_f16": Sim(kv="f16"),
    "actq_kvrt": dataclasses.replace(SIM_KVRT, kv=None, f32_steps=False),
    "actq_kvrt_allq8": dataclasses.replace(SIM_KVRT_ALLQ8, kv=None, f32_steps=False),
    "actq_llamacpp": Sim(act_quant=SIM_LLAMACPP.act_quant),
    "attn_f16_llamacpp": Sim(kv="f16", q_attn="f16", p_attn="f16"),
    "gelu_f16": Sim(gelu_f16=True),
}


# ---------------------------------------------------------------------------


class ExactDecoder:
    def __init__(self, path: str, sim: Optional[Sim] = None, verbose: bool = False):
        import gguf

        t0 = time.time()
        r = gguf.GGUFReader(path)
        self.path = path
        self.sim = sim or Sim()

        def raw(key, default=None):
            f = r.fields.get(key)
            if f is None:
                return default
            v = f.parts[f.data[0]]
            if f.types[0] == gguf.GGUFValueType.STRING:
                return bytes(v).decode()
            return v[0]

        self.arch = arch = raw("general.architecture")
        if arch not in ("llama", "qwen2", "gemma3"):
            raise SystemExit(f"{path}: architecture {arch!r} is not one of llama, qwen2, gemma3")
        a = lambda k, d=None: raw(f"{arch}.{k}", d)  # noqa: E731
        self.n_layer = int(a("block_count"))
        self.n_embd = int(a("embedding_length"))
        self.n_head = int(a("attention.head_count"))
        self.n_kv = int(a("attention.head_count_kv", self.n_head))
        self.d = int(a("attention.key_length", self.n_embd // self.n_head))
        assert int(a("attention.value_length", self.d)) == self.d
        self.n_rot = int(a("rope.dimension_count", self.d))
        self.eps = float(a("attention.layer_norm_rms_epsilon"))
        self.base = float(a("rope.freq_base", 10000.0))
        self.add_bos = bool(raw("tokenizer.ggml.add_bos_token", False))
        self.bos = int(raw("tokenizer.ggml.bos_token_id", -1))
        self.neox = arch in ("qwen2", "gemma3")
        self.window = 0
        self.embd_scale = 1.0
        self.scale = 1.0 / math.sqrt(self.d)
        if arch == "gemma3":
            self.window = int(a("attention.sliding_window"))
            self.embd_scale = math.sqrt(self.n_embd)
        # Per-layer window and RoPE base.
        self.layer_window = [self.window if (self.window and (l + 1) % 6 != 0) else 0 for l in range(self.n_layer)]
        self.layer_base = [10000.0 if self.layer_window[l] else self.base for l in range(self.n_layer)]

        self.w: Dict[str, np.ndarray] = {}
        self.wtype: Dict[str, str] = {}
        for t in r.tensors:
            arr = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type))
            a64 = np.array(arr, dtype=np.float64)  # one float64 copy; the float32 one is dropped
            del arr
            shape = [int(x) for x in reversed(t.shape)] if len(t.shape) > 1 else [-1]
            self.w[t.name] = a64.reshape(shape)
            self.wtype[t.name] = t.tensor_type.name
        del r
        self.out_name = "output.weight" if "output.weight" in self.w else "token_embd.weight"
        self.n_vocab = self.w[self.out_name].shape[0]
        self.inv = {b: b ** (-np.arange(0, self.n_rot, 2, dtype=np.float64) / self.n_rot)
                    for b in set(self.layer_base)}
        self.reset()
        if verbose:
            print(f"# {os.path.basename(path)}: {arch}, {self.n_layer} layers, embd {self.n_embd}, "
                  f"heads {self.n_head}/{self.n_kv}x{self.d}, vocab {self.n_vocab}, loaded in "
                  f"{time.time() - t0:.1f} s", file=sys.stderr)

    # -- state -------------------------------------------------------------
    def reset(self):
        self.k = [np.zeros((0, self.n_kv, self.d)) for _ in range(self.n_layer)]
        self.v = [np.zeros((0, self.n_kv, self.d)) for _ in range(self.n_layer)]

    @property
    def n_past(self) -> int:
        return self.k[0].shape[0]

    # -- steps -------------------------------------------------------------
    def _f(self, x):
        return round_f32(x) if self.sim.f32_steps else x

    def _rms(self, x, w):
        return self._f(x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * w)

    def _mm(self, x, name):
        """x @ W^T (+ bias), with the simulated activation rounding for W's type."""
        aq = self.sim.act_quant.get(self.wtype[name])
        if aq is not None:
            x = quant_q8_blocks(x, *aq)
        y = x @ self.w[name].T
        bias = name.replace(".weight", ".bias")
        if bias in self.w:
            y = y + self.w[bias]
        return self._f(y)

    def _rope(self, x, pos, base):
        ang = pos[:, None] * self.inv[base][None, :]  # [T, n_rot/2]
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        out = x.copy()
        if self.neox:
            h = self.n_rot // 2
            x0, x1 = x[..., :h], x[..., h:self.n_rot]
            out[..., :h] = x0 * c - x1 * s
            out[..., h:self.n_rot] = x0 * s + x1 * c
        else:
            x0, x1 = x[..., 0:self.n_rot:2], x[..., 1:self.n_rot:2]
            out[..., 0:self.n_rot:2] = x0 * c - x1 * s
            out[..., 1:self.n_rot:2] = x0 * s + x1 * c
        return self._f(out)

    def _store(self, x):
        kv = self.sim.kv
        if kv == "f16":
            return round_f16(x)
        if kv == "bf16":
            return round_bf16(x)
        if kv == "f32":
            return round_f32(x)
        return x

    def _act(self, g, u):
        if self.arch == "gemma3":
            c = math.sqrt(2.0 / math.pi)
            gelu = lambda z: 0.5 * z * (1.0 + np.tanh(c * (z + 0.044715 * z ** 3)))  # noqa: E731
            if self.sim.gelu_f16:
                a = np.where(g <= -10, 0.0, np.where(g >= 10, g, round_f16(gelu(round_f16(g)))))
            else:
                a = gelu(g)
        else:
            a = g / (1.0 + np.exp(-g))
        return self._f(a * u)

    def _attend(self, q, l, pos):
        """q [T, H, D] (RoPE'd) over the cache rows of layer l (new rows included)."""
        T, n_all = q.shape[0], self.k[l].shape[0]
        kpos = np.arange(n_all)
        diff = pos[:, None] - kpos[None, :]  # i - j
        ok = diff >= 0
        if self.layer_window[l]:
            ok &= diff < self.layer_window[l]
        mask = np.where(ok, 0.0, -np.inf)
        g = self.n_head // self.n_kv
        if self.sim.q_attn == "f16":
            q = round_f16(q)
        o = np.empty((T, self.n_head, self.d))
        for j in range(self.n_kv):
            K, V = self.k[l][:, j], self.v[l][:, j]  # [N, D]
            qs = q[:, j * g:(j + 1) * g]  # [T, g, D]
            s = (qs.reshape(T * g, self.d) @ K.T).reshape(T, g, n_all) * self.scale + mask[:, None, :]
            s = np.exp(s - s.max(-1, keepdims=True))
            p = s / s.sum(-1, keepdims=True)
            if self.sim.p_attn == "f16":
                p = round_f16(p)
            o[:, j * g:(j + 1) * g] = (p.reshape(T * g, n_all) @ V).reshape(T, g, self.d)
        return self._f(o)

    # -- forward -----------------------------------------------------------
    def eval(self, tokens: List[int], hidden: Optional[list] = None, want: str = "all"):
        """Appends `tokens` at positions n_past..; returns their logits [T, n_vocab]
        (want='last': only the last row, [1, n_vocab]). hidden: a list to which the
        residual stream after the embedding and after every layer is appended ([T, E])."""
        w, T, p0 = self.w, len(tokens), self.n_past
        pos = np.arange(p0, p0 + T, dtype=np.float64)
        x = w["token_embd.weight"][np.asarray(tokens)] * self.embd_scale
        x = self._f(x)
        if hidden is not None:
            hidden.append(x.copy())
        for l in range(self.n_layer):
            p = f"blk.{l}."
            h = self._rms(x, w[p + "attn_norm.weight"])
            q = self._mm(h, p + "attn_q.weight").reshape(T, self.n_head, self.d)
            k = self._mm(h, p + "attn_k.weight").reshape(T, self.n_kv, self.d)
            v = self._mm(h, p + "attn_v.weight").reshape(T, self.n_kv, self.d)
            if p + "attn_q_norm.weight" in w:
                q = self._rms(q, w[p + "attn_q_norm.weight"])
                k = self._rms(k, w[p + "attn_k_norm.weight"])
            q = self._rope(q, pos, self.layer_base[l])
            k = self._rope(k, pos, self.layer_base[l])
            self.k[l] = np.concatenate([self.k[l], self._store(k)])
            self.v[l] = np.concatenate([self.v[l], self._store(v)])
            o = self._attend(q, l, pos).reshape(T, -1)
            o = self._mm(o, p + "attn_output.weight")
            if p + "post_attention_norm.weight" in w:
                o = self._rms(o, w[p + "post_attention_norm.weight"])
            x = self._f(x + o)
            h = self._rms(x, w[p + "ffn_norm.weight"])
            f = self._act(self._mm(h, p + "ffn_gate.weight"), self._mm(h, p + "ffn_up.weight"))
            f = self._mm(f, p + "ffn_down.weight")
            if p + "post_ffw_norm.weight" in w:
                f = self._rms(f, w[p + "post_ffw_norm.weight"])
            x = self._f(x + f)
            if hidden is not None:
                hidden.append(x.copy())
        if want == "last":
            x = x[-1:]
        return self._mm(self._rms(x, w["output_norm.weight"]), self.out_name)

    def eval_chunked(self, tokens: List[int], chunk: int = 256):
        """eval() in chunks (same result; bounds the [T, n_vocab] temporaries)."""
        return np.concatenate([self.eval(tokens[i:i + chunk]) for i in range(0, len(tokens), chunk)])

    def greedy(self, prompt: List[int], n: int = 32) -> List[int]:
        """Fresh cache; prompt in one call, then n argmax steps (lowest id on ties, EOS
        not special): the n generated ids."""
        self.reset()
        row = self.eval(prompt, want="last")[-1]
        out = []
        for _ in range(n):
            t = int(np.argmax(row))
            out.append(t)
            row = self.eval([t])[-1]
        return out


def log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


# ---------------------------------------------------------------------------
# Self-check.

CHECK_TEXT = os.path.join(REPO_ROOT, "tests", "data", "kl_text.txt")


class Tokenizer:
    """llama.cpp's tokeniser (vocab only) when llama_cpp imports, else kvrt's."""

    def __init__(self, path):
        try:
            import llama_cpp

            self.llm = llama_cpp.Llama(path, vocab_only=True, verbose=False)
            self.kind = "llama.cpp"
        except ImportError:
            sys.path.insert(0, os.path.join(REPO_ROOT, "bindings", "python"))
            import kvrt

            self.llm = None
            self.model = kvrt.Model(path)
            self.kind = "kvrt"

    def encode(self, text: str, add_bos: bool) -> List[int]:
        if self.llm is not None:
            return self.llm.tokenize(text.encode(), add_bos=add_bos, special=False)
        return self.model.tokenize(text, add_bos=add_bos)

    def decode(self, ids: List[int]) -> str:
        if self.llm is not None:
            return self.llm.detokenize(ids).decode("utf-8", "replace")
        return self.model.detokenize(ids)


def save_logits(args) -> None:
    """The float64 forward's distributions at llama-perplexity's scored positions, in kvrt's
    logits file (logits_file.py). The text is read as `kvrt perplexity -f` reads it (whole,
    not stripped) and tokenised by llama.cpp (kvrt's tokeniser gives the same ids; `--kl`
    refuses a file whose ids differ)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import logits_file

    path = args.model or MODELS[args.models]
    text = open(args.text, encoding="utf-8").read()
    m = ExactDecoder(path, verbose=True)
    tok = Tokenizer(path)
    ids = tok.encode(text, add_bos=m.add_bos)
    bos = logits_file.bos_of(path) if m.add_bos else -1

    def window(win, first, last):
        m.reset()
        return m.eval_chunked(win)[first:last + 1]

    t0 = time.time()
    ppl = logits_file.run_windows(args.save_logits, path, "float64 reference (exact_forward.py)", ids, args.ctx,
                                  args.stride, bos, window)
    print(f"{os.path.basename(path)}: {len(ids)} tokens, perplexity {ppl:.4f} ({time.time() - t0:.0f} s); "
          f"wrote {args.save_logits}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="llama,qwen2,gemma3")
    ap.add_argument("--text", default=CHECK_TEXT)
    ap.add_argument("--prompt", default="The old lighthouse keeper climbed the stairs and")
    ap.add_argument("--save-logits", metavar="FILE",
                    help="instead: write kvrt's logits file of --text in llama-perplexity's windows "
                         "(one model, --models NAME or --model GGUF), for `kvrt perplexity --kl FILE`")
    ap.add_argument("--model", help="a GGUF path (with --save-logits)")
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--stride", type=int, default=0)
    args = ap.parse_args()
    if args.save_logits:
        save_logits(args)
        return
    text = open(args.text, encoding="utf-8").read().strip()
    for name in args.models.split(","):
        m = ExactDecoder(MODELS[name], verbose=True)
        tok = Tokenizer(MODELS[name])
        ids = tok.encode(text, add_bos=m.add_bos)
        t0 = time.time()
        lp = log_softmax(m.eval_chunked(ids))
        nll = -lp[np.arange(len(ids) - 1), ids[1:]]
        ppl = float(np.exp(nll.mean()))
        dt = time.time() - t0
        g = m.greedy(tok.encode(args.prompt, add_bos=m.add_bos), 32)
        print(f"{name}: {len(ids)} tokens ({tok.kind} tokeniser), perplexity {ppl:.2f} "
              f"({dt:.1f} s); greedy: {args.prompt!r} ->{tok.decode(g)!r}", flush=True)
        del m


if __name__ == "__main__":
    main()
