#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors
"""Writes the seed corpora of the GGUF, tokenizer and chat-template harnesses.

    python3 tests/fuzz/make_seeds.py [--models DIR] [--out tests/fuzz/corpus]

From the three real models (~/.cache/kvrt/models, as scripts/setup.sh fetches them):
  corpus/gguf/            each model's first 16 KiB (header, the first metadata), and each
                          model's whole metadata with every array cut to its first 256
                          elements and two small tensors (a complete, valid GGUF of a few
                          KiB whose tokenizer the harness builds)
  corpus/tokenizer/       the texts of tests/data/tokenizer_reference*.json and
                          kl_text.txt, each behind an options byte selecting the tokenizer
  corpus/chat_template/   each model's Jinja chat template and every family, with a
                          conversation (the harness's NUL-separated fields)
The cache-state and seq-file corpora are written by their harnesses (KVRT_FUZZ_WRITE_SEEDS=DIR
build/.../fuzz_cache_state, fuzz_seq_file: files in Context::save_seq's format around rows
the cache saved); a tiny CED model (kvrt ced-init --preset tiny) can be added
to corpus/gguf by hand. Deterministic: the same models give the same files.
"""
import argparse
import hashlib
import json
import os
import struct

MODELS = ["SmolLM2-135M-Instruct.Q4_1.gguf", "qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf", "gemma-3-270m-Q4_K_M.gguf"]
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# GGUF value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<B",
          U64: "<Q", I64: "<q", F64: "<d"}


class Reader:
    def __init__(self, f):
        self.f = f

    def take(self, fmt):
        n = struct.calcsize(fmt)
        return struct.unpack(fmt, self.f.read(n))[0]

    def string(self):
        return self.f.read(self.take("<Q"))

    def value(self, t, limit):
        if t == STRING:
            return self.string()
        if t == ARRAY:
            et, n = self.take("<I"), self.take("<Q")
            items = [self.value(et, limit) for _ in range(n)]  # read all, keep the first `limit`
            return (et, items[:limit])
        return self.take(SCALAR[t])


def write_value(out, t, v):
    if t == STRING:
        out += struct.pack("<Q", len(v)) + v
    elif t == ARRAY:
        et, items = v
        out += struct.pack("<IQ", et, len(items))
        for x in items:
            write_value(out, et, x)
    else:
        out += struct.pack(SCALAR[t], v)


def small_gguf(path, limit=256):
    """The model's metadata with arrays cut to `limit` elements, plus two tiny tensors."""
    with open(path, "rb") as f:
        r = Reader(f)
        assert f.read(4) == b"GGUF"
        version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
        kvs = []
        for _ in range(n_kv):
            key = r.string()
            t = r.take("<I")
            kvs.append((key, t, r.value(t, limit)))
    out = bytearray(b"GGUF" + struct.pack("<IQQ", version, 2, len(kvs)))
    for key, t, v in kvs:
        out += struct.pack("<Q", len(key)) + key + struct.pack("<I", t)
        write_value(out, t, v)
    # Two f32 tensors: [8] and [4, 2], data aligned to 32.
    for name, dims, off in [(b"fuzz.a", [8], 0), (b"fuzz.b", [4, 2], 32)]:
        out += struct.pack("<Q", len(name)) + name + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", 0, off)
    out += b"\0" * (-len(out) % 32)
    out += struct.pack("<8f", *range(8)) + struct.pack("<8f", *range(8, 16))
    return bytes(out)


def write(dirpath, data):
    os.makedirs(dirpath, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(dirpath, name), "wb") as f:
        f.write(data)


def chat_template_of(path):
    with open(path, "rb") as f:
        r = Reader(f)
        f.read(4)
        r.take("<I"), r.take("<Q")
        n_kv = r.take("<Q")
        for _ in range(n_kv):
            key = r.string()
            t = r.take("<I")
            v = r.value(t, 0)
            if key == b"tokenizer.chat_template":
                return v
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=os.environ.get("KVRT_MODEL_DIR") or os.path.expanduser("~/.cache/kvrt/models"))
    ap.add_argument("--out", default=os.path.join(HERE, "corpus"))
    args = ap.parse_args()
    paths = [os.path.join(args.models, m) for m in MODELS]

    for p in paths:
        with open(p, "rb") as f:
            write(os.path.join(args.out, "gguf"), f.read(16384))
        write(os.path.join(args.out, "gguf"), small_gguf(p))

    texts = []
    for name in ["tokenizer_reference.json", "tokenizer_reference_qwen2.json", "tokenizer_reference_gemma3.json"]:
        d = json.load(open(os.path.join(ROOT, "tests", "data", name), encoding="utf-8"))
        for c in d["cases"]:
            texts.append((c["text"].encode("utf-8", "surrogatepass"), c.get("parse_special", False)))
    kl = open(os.path.join(ROOT, "tests", "data", "kl_text.txt"), "rb").read()
    texts += [(kl[i:i + 512], False) for i in range(0, len(kl), 512)]
    seen = set()
    for i, (t, special) in enumerate(texts):
        if (t, special) in seen:
            continue
        seen.add((t, special))
        # byte 0: tokenizer i % 5 (bits 0-2), parse_special (bit 3), add_special (bit 4)
        write(os.path.join(args.out, "tokenizer"), bytes([(i % 5) | (8 if special else 0) | 16]) + t)

    conv = [b"system", b"You are terse.", b"user", b"Hi <|im_end|> there", b"assistant", b"Hello.", b"user", b"Bye"]
    for p in paths:
        tmpl = chat_template_of(p)
        if tmpl:
            for gen in (0, 16):
                write(os.path.join(args.out, "chat_template"),
                      bytes([1 | gen]) + b"\0".join([tmpl, b"<s>", b"</s>"] + conv))
    for fam in range(5):
        write(os.path.join(args.out, "chat_template"), bytes([(fam << 1) | 16]) + b"\0".join([b"<s>", b"</s>"] + conv))


if __name__ == "__main__":
    main()
