#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors
"""kvrt's saved-logits file (docs/logits_file.md; src/fidelity/logits_file.hpp) from Python:
the float64 reference (exact_forward.py --save-logits) and llama.cpp (llamacpp_logits.py)
write the file `kvrt perplexity --kl FILE` and `kvrt perplexity --kl A --compare B` read.

Also llama-perplexity's window rule (plan_windows, as src/fidelity/perplexity.cpp) and the
model identity string ("architecture|name|n_params", as kvrt_model_info gives it), so a file
written here compares with kvrt's runs of the same GGUF and text.

API:
    plan = plan_windows(n_tokens, n_ctx, stride)     # [(start, first, last)], scored positions
    w = LogitsWriter(path, n_vocab, n_ctx, stride, bos, model_identity(gguf_path), producer,
                     tokens, n_records)
    w.add(logits_row, index, target)                 # float32/float64 logits of one position
    w.finish()
    run_windows(tokens, n_ctx, stride, bos, logits_of_window)   # drives a runtime
    read(path) -> (header dict, records iterator)
"""

from __future__ import annotations

import os
import struct
import zlib
from typing import Callable, Iterator, List, Tuple

import numpy as np

MAGIC = b"KVRTLOGT"
VERSION = 1
RANGE = 32.0


def plan_windows(n_tokens: int, n_ctx: int, stride: int) -> List[Tuple[int, int, int]]:
    """Windows (start, first, last scored window position) of llama-perplexity's rule
    (stride 0) or its --ppl-stride S variant; raises ValueError as kvrt does."""
    if n_tokens <= 0:
        raise ValueError("perplexity: the text has no tokens")
    if n_ctx < 3:
        raise ValueError(f"perplexity: a context of {n_ctx} tokens scores no position")
    if stride == 0:
        if n_tokens < 2 * n_ctx:
            raise ValueError(f"perplexity: {n_tokens} tokens; a context of {n_ctx} needs at least {2 * n_ctx}")
        return [(i * n_ctx, n_ctx // 2, n_ctx - 2) for i in range(n_tokens // n_ctx)]
    if stride >= n_ctx:
        raise ValueError("perplexity: the stride must be below the context")
    if n_tokens <= n_ctx:
        raise ValueError("perplexity: the text is not longer than the context")
    n = (n_tokens - n_ctx + stride - 1) // stride
    return [(i * stride, n_ctx - stride - 1, n_ctx - 2) for i in range(n)]


def model_identity(gguf_path: str) -> str:
    """"architecture|name|n_params" of a GGUF, as kvrt_model_info reports them."""
    import gguf

    r = gguf.GGUFReader(gguf_path)

    def s(key):
        f = r.fields.get(key)
        return bytes(f.parts[f.data[0]]).decode("utf-8") if f is not None else ""

    n_params = sum(int(t.n_elements) for t in r.tensors)
    return f"{s('general.architecture')}|{s('general.name')}|{n_params}"


def bos_of(gguf_path: str) -> int:
    """The BOS id each window starts with: tokenizer.ggml.bos_token_id when the GGUF says
    add_bos_token (llama.cpp's default for SentencePiece vocabularies is add), else -1."""
    import gguf

    r = gguf.GGUFReader(gguf_path)
    f = r.fields.get("tokenizer.ggml.bos_token_id")
    a = r.fields.get("tokenizer.ggml.add_bos_token")
    m = r.fields.get("tokenizer.ggml.model")
    model = bytes(m.parts[m.data[0]]).decode() if m is not None else ""
    add = bool(a.parts[a.data[0]][0]) if a is not None else model == "llama"
    return int(f.parts[f.data[0]][0]) if (f is not None and add) else -1


def encode(logits, index: int, target: int) -> bytes:
    x = np.asarray(logits, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"non-finite logit at position {index}")
    am = int(np.argmax(x))  # lowest id on ties
    mx = x[am]
    lse = mx + np.log(np.exp(x - mx).sum())
    lp = x - lse
    lp_max = np.float32(mx - lse)
    span = min(float(mx - x.min()), RANGE)
    lp_floor = np.float32(float(lp_max) - span)
    width = float(lp_max) - float(lp_floor)
    if width > 0:
        c = np.clip((lp - float(lp_floor)) / width * 65535.0, 0.0, 65535.0)
        q = np.floor(c + 0.5).astype("<u2")
    else:
        q = np.zeros(x.shape[0], dtype="<u2")
    head = struct.pack("<Iii3f", index, target, am, float(np.float32(lp[target])), float(lp_max), float(lp_floor))
    return head + q.tobytes()


class LogitsWriter:
    def __init__(self, path, n_vocab, n_ctx, stride, bos, model, producer, tokens, n_records):
        self.path, self.tmp = path, path + ".tmp"
        self.f = open(self.tmp, "wb")
        self.crc = 0
        self.n_vocab, self.left = n_vocab, n_records
        m, p = model.encode(), producer.encode()
        self._put(MAGIC + struct.pack("<7I", VERSION, n_vocab, n_ctx, stride, bos & 0xFFFFFFFF, len(tokens), n_records))
        self._put(struct.pack("<I", len(m)) + m + struct.pack("<I", len(p)) + p)
        self._put(np.asarray(tokens, dtype="<i4").tobytes())

    def _put(self, b: bytes):
        self.f.write(b)
        self.crc = zlib.crc32(b, self.crc)

    def add(self, logits, index: int, target: int):
        if self.left <= 0:
            raise ValueError("more records than the header says")
        if len(logits) != self.n_vocab:
            raise ValueError("a row of another vocabulary size")
        self._put(encode(logits, index, target))
        self.left -= 1

    def finish(self):
        if self.left != 0:
            raise ValueError(f"{self.left} records missing")
        self.f.write(struct.pack("<I", self.crc & 0xFFFFFFFF))
        self.f.close()
        os.replace(self.tmp, self.path)


def run_windows(path, gguf_path, producer, tokens, n_ctx, stride, bos,
                logits_of_window: Callable[[List[int], int, int], np.ndarray], progress=True) -> float:
    """Writes `path` for a runtime: logits_of_window(window_tokens, first, last) returns the
    logits rows of window positions first..last ([last - first + 1, n_vocab]). Returns the
    perplexity (from float64 log-probabilities)."""
    plan = plan_windows(len(tokens), n_ctx, stride)
    n_rec = sum(l - f + 1 for _, f, l in plan)
    w = None
    nll, k = 0.0, 0
    for wi, (start, first, last) in enumerate(plan):
        win = list(tokens[start:start + n_ctx])
        if bos >= 0:
            win[0] = bos
        rows = np.asarray(logits_of_window(win, first, last))
        if w is None:
            w = LogitsWriter(path, rows.shape[1], n_ctx, stride, bos, model_identity(gguf_path), producer,
                             tokens, n_rec)
        for j in range(first, last + 1):
            row = rows[j - first].astype(np.float64)
            idx = start + j
            tgt = int(tokens[idx + 1])
            m = row.max()
            nll -= row[tgt] - m - np.log(np.exp(row - m).sum())
            w.add(row, idx, tgt)
            k += 1
        if progress:
            print(f"[{wi + 1}/{len(plan)}] ppl {np.exp(nll / k):.4f}", flush=True)
    w.finish()
    return float(np.exp(nll / k))


def read(path) -> Tuple[dict, Iterator[dict]]:
    data = open(path, "rb").read()
    if data[:8] != MAGIC:
        raise ValueError("not a kvrt logits file")
    if zlib.crc32(data[:-4]) != struct.unpack("<I", data[-4:])[0]:
        raise ValueError("checksum mismatch")
    v, n_vocab, n_ctx, stride, bos, n_tok, n_rec = struct.unpack_from("<7I", data, 8)
    at = 36
    strs = []
    for _ in range(2):
        (n,) = struct.unpack_from("<I", data, at)
        strs.append(data[at + 4:at + 4 + n].decode())
        at += 4 + n
    tokens = np.frombuffer(data, dtype="<i4", count=n_tok, offset=at)
    at += 4 * n_tok
    h = dict(version=v, n_vocab=n_vocab, n_ctx=n_ctx, stride=stride, bos=struct.unpack("<i", struct.pack("<I", bos))[0],
             model=strs[0], producer=strs[1], tokens=tokens, n_records=n_rec)
    rb = 24 + 2 * n_vocab

    def records():
        for i in range(n_rec):
            o = at + i * rb
            index, target, am, lpt, lpm, lpf = struct.unpack_from("<Iii3f", data, o)
            q = np.frombuffer(data, dtype="<u2", count=n_vocab, offset=o + 24)
            lp = lpf + q.astype(np.float64) * ((lpm - lpf) / 65535.0)
            m = lp.max()
            lp = lp - m - np.log(np.exp(lp - m).sum())
            yield dict(index=index, target=target, argmax=am, lp_target=lpt, lp=lp)

    return h, records()
