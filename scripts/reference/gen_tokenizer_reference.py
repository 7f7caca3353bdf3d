#!/usr/bin/env python3
"""Generates tests/data/tokenizer_reference.json: llama.cpp's tokenization of a
varied set of strings with the SmolLM2 GGUF, the ground truth the tokenizer
tests compare kvrt to token for token.

    pip install llama-cpp-python          # builds llama.cpp from source
    python3 scripts/reference/gen_tokenizer_reference.py [MODEL.gguf]

MODEL defaults to $KVRT_MODEL or ~/.cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf.
The model is loaded with vocab_only=True (no weights). For every case the
file records the text, whether special-token text was parsed, llama.cpp's ids
(llama_tokenize with add_special=True: SmolLM2 adds no BOS), each token's piece
(llama_token_to_piece with special=True, as hex) and their concatenation.

Variants, to check the other pre-tokenizers and the SentencePiece ("llama")
model against llama.cpp as well: the same strings through (a) SmolLM2's
vocabulary with tokenizer.ggml.pre set to "gpt-2", "llama-bpe" and "qwen2",
and (b) a small synthetic SentencePiece vocabulary (written into the JSON, so
the C++ test can build the identical tokenizer). Each variant is a vocab-only
GGUF written to a temporary directory (SmolLM2's architecture keys, the
variant's tokenizer keys, no tensors) and loaded by llama.cpp.

Invalid UTF-8 is deliberately absent: llama.cpp replaces it with U+FFFD while
kvrt keeps the bytes (tested separately in tests/unit/test_tokenizer.cpp).
"""
import ctypes
import json
import os
import struct
import sys
import tempfile

import llama_cpp

PROSE = (
    "The quarterly report, prepared by the finance team, states that the project budget is "
    "1,000,000 dollars. Risks include supplier delays (estimated at 3-6 weeks), currency "
    "fluctuations of up to 4.5%, and staffing: two engineers leave in Q3. Deadlines: design "
    "review on 2025-03-14, prototype by June 30th, and final delivery before December 1st."
)

# (text, parse_special)
CASES = [
    ("", False),
    (" ", False),
    ("  ", False),
    ("\n", False),
    ("\n\n\n", False),
    ("\t", False),
    ("Hello world", False),
    ("Hello, world!", False),
    (" Hello", False),
    ("hello   world", False),
    ("The sky is", False),
    ("I'm sure you've heard they'll say it's done, we'd agree.", False),
    ("don't DON'T 're 'S 'LL it''s", False),
    ("1234567", False),
    ("3.14159 and 2.71828", False),
    ("In 2024 there were 1,000,000 people and 42 cats.", False),
    ("x=12+345*6789-0", False),
    ("def foo(x):\n    return x * 2\n", False),
    ("for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}", False),
    ("#include <stdio.h>\nint main(void) { return 0; }", False),
    ('{"key": [1, 2, 3], "nested": {"a": null, "b": true}}', False),
    ("https://example.com/path?q=1&r=2#frag", False),
    ("!!! ??? ... --- *** ;;; ~~~", False),
    ("Hello!!! How are you???", False),
    ("café naïve résumé Ångström", False),
    ("Größe über Straße", False),
    ("¿Dónde está el baño?", False),
    ("Привет, мир!", False),
    ("Καλημέρα κόσμε", False),
    ("مرحبا بالعالم", False),
    ("नमस्ते दुनिया", False),
    ("你好，世界！", False),
    ("こんにちは世界、カタカナ", False),
    ("안녕하세요 세계", False),
    ("Hello 👋 world 🌍🚀", False),
    ("👨‍👩‍👧‍👦 family", False),
    ("😀😃😄😁", False),
    ("a \t b\n\n\nc   \n d", False),
    ("trailing   ", False),
    ("   leading", False),
    ("\r\n windows\r\nline\r\n", False),
    ("٣٤٥ ²³ ½ Ⅻ ①", False),
    ("    indented code\n        more", False),
    ("ĠĊ Ġhello âĢĻ", False),
    ("a\u00a0b\u2003c\u3000d", False),
    ("zero\u200bwidth", False),
    ("e\u0301 vs \u00e9", False),
    ("∑∫√∞≠≤ ≈ π", False),
    ("ﬁnance ligature", False),
    ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", False),
    ("A" * 10 + " " + "ab" * 20, False),
    (PROSE, False),
    ("<|im_start|>user\nHi there<|im_end|>\n", False),
    ("<|im_start|>user\nHi there<|im_end|>\n", True),
    ("<|endoftext|>", False),
    ("<|endoftext|>", True),
    ("text<|im_end|>more", True),
    ("<|im_start|><|im_start|>", True),
    ("<|im_start", True),
    ("<repo_name>kvrt<file_sep>main.cpp", True),
    ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
     "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n", True),
]


# ---- a minimal GGUF (v3) metadata reader / writer: (key, type, value) triples.
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
GGUF_STRING, GGUF_ARRAY = 8, 9


def read_gguf_kvs(path):
    with open(path, "rb") as f:
        data = f.read(64 << 20)  # the metadata sits at the front
    pos = 0

    def take(fmt):
        nonlocal pos
        vals = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return vals

    def string():
        nonlocal pos
        (n,) = take("Q")
        s = data[pos:pos + n].decode("utf-8")
        pos += n
        return s

    def value(t):
        if t in _SCALAR:
            return take(_SCALAR[t])[0]
        if t == GGUF_STRING:
            return string()
        et, n = take("IQ")
        return (et, [value(et) for _ in range(n)])

    assert data[:4] == b"GGUF"
    pos = 4
    _version, _n_tensors, n_kv = take("IQQ")
    kvs = []
    for _ in range(n_kv):
        key = string()
        (t,) = take("I")
        kvs.append((key, t, value(t)))
    return kvs


def write_gguf_kvs(path, kvs):
    out = bytearray(b"GGUF")

    def string(s):
        b = s.encode("utf-8")
        out.extend(struct.pack("<Q", len(b)))
        out.extend(b)

    def value(t, v):
        if t in _SCALAR:
            out.extend(struct.pack("<" + _SCALAR[t], v))
        elif t == GGUF_STRING:
            string(v)
        else:
            et, items = v
            out.extend(struct.pack("<IQ", et, len(items)))
            for item in items:
                value(et, item)

    out.extend(struct.pack("<IQQ", 3, 0, len(kvs)))
    for key, t, v in kvs:
        string(key)
        out.extend(struct.pack("<I", t))
        value(t, v)
    out.extend(b"\0" * ((-len(out)) % 32))
    with open(path, "wb") as f:
        f.write(out)


# ---- a small synthetic SentencePiece vocabulary.
SP = "\u2581"


def synthetic_spm_vocab():
    tokens = ["<unk>", "<s>", "</s>"]
    types = [2, 3, 3]
    scores = [0.0, 0.0, 0.0]
    for b in range(256):
        tokens.append("<0x%02X>" % b)
        types.append(6)
        scores.append(0.0)
    tokens.append("<user_tok>")
    types.append(4)
    scores.append(0.0)
    # Pieces: every character of a small corpus, then its frequent substrings
    # (of "▁"-prefixed words) scored by frequency; no piece contains '<' or '>'
    # so control-token text can never be merged from ordinary pieces.
    corpus = " ".join(t for t, _ in CASES if "<" not in t) + " " + PROSE
    words = [SP + w for w in corpus.replace("\n", " ").split(" ") if w]
    chars = sorted({c for w in words for c in w if c not in "<>" and ord(c) < 0x3000})
    counts = {}
    for w in words:
        for i in range(len(w)):
            for j in range(i + 2, min(len(w), i + 7) + 1):
                sub = w[i:j]
                if "<" in sub or ">" in sub:
                    continue
                counts[sub] = counts.get(sub, 0) + 1
    frequent = sorted((s for s, c in counts.items() if c >= 2), key=lambda s: (-counts[s] * len(s), s))[:600]
    for i, c in enumerate(chars):
        tokens.append(c)
        types.append(1)
        scores.append(-1000.0 - i)
    for i, piece in enumerate(frequent):
        tokens.append(piece)
        types.append(1)
        scores.append(-float(i) - 1.0)
    return {"tokens": tokens, "token_types": types, "scores": scores,
            "bos_id": 1, "eos_id": 2, "unknown_id": 0, "add_bos": True, "add_space_prefix": True}


SPM_EXTRA_CASES = [
    ("<s>hello world</s>", True),
    ("<s>hello world</s>", False),
    ("a<user_tok>b", False),
    ("<unk>", True),
]


def tokenize_all(path, cases):
    llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    buf = ctypes.create_string_buffer(256)

    def piece(tok):
        n = llama_cpp.llama_token_to_piece(vocab, tok, buf, len(buf), 0, True)
        assert 0 <= n <= len(buf), n
        return buf.raw[:n]

    out = []
    for text, parse_special in cases:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=parse_special)
        pieces = [piece(t) for t in ids]
        out.append({
            "text": text,
            "parse_special": parse_special,
            "ids": ids,
            "pieces_hex": [p.hex() for p in pieces],
            "detokenized": b"".join(pieces).decode("utf-8", "replace"),
        })
    return out, llama_cpp.llama_vocab_n_tokens(vocab)


def main():
    default = os.environ.get("KVRT_MODEL") or os.path.expanduser(
        "~/.cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    path = sys.argv[1] if len(sys.argv) > 1 else default
    cases, n_vocab = tokenize_all(path, CASES)
    out = {
        "generator": "scripts/reference/gen_tokenizer_reference.py",
        "llama_cpp_python": llama_cpp.__version__,
        "model": os.path.basename(path),
        "n_vocab": n_vocab,
        "add_special": True,
        "cases": cases,
        "pre_variants": [],
    }
    kvs = read_gguf_kvs(path)
    arch_kvs = [kv for kv in kvs if not kv[0].startswith("tokenizer.")]
    with tempfile.TemporaryDirectory() as tmp:
        for pre in ("gpt-2", "llama-bpe", "qwen2"):
            variant = [(k, t, pre if k == "tokenizer.ggml.pre" else v) for k, t, v in kvs]
            vpath = os.path.join(tmp, "pre-%s.gguf" % pre)
            write_gguf_kvs(vpath, variant)
            vcases, _ = tokenize_all(vpath, CASES)
            out["pre_variants"].append({"pre": pre, "cases": [
                {"text": c["text"], "parse_special": c["parse_special"], "ids": c["ids"]} for c in vcases]})
        spm = synthetic_spm_vocab()
        spm_kvs = arch_kvs + [
            ("tokenizer.ggml.model", GGUF_STRING, "llama"),
            ("tokenizer.ggml.tokens", GGUF_ARRAY, (GGUF_STRING, spm["tokens"])),
            ("tokenizer.ggml.scores", GGUF_ARRAY, (6, spm["scores"])),
            ("tokenizer.ggml.token_type", GGUF_ARRAY, (5, spm["token_types"])),
            ("tokenizer.ggml.bos_token_id", 4, spm["bos_id"]),
            ("tokenizer.ggml.eos_token_id", 4, spm["eos_id"]),
            ("tokenizer.ggml.unknown_token_id", 4, spm["unknown_id"]),
            ("tokenizer.ggml.add_bos_token", 7, spm["add_bos"]),
            ("tokenizer.ggml.add_space_prefix", 7, spm["add_space_prefix"]),
        ]
        spm_kvs = [(k, t, len(spm["tokens"]) if k == "llama.vocab_size" else v) for k, t, v in spm_kvs]
        spath = os.path.join(tmp, "spm.gguf")
        write_gguf_kvs(spath, spm_kvs)
        scases, _ = tokenize_all(spath, CASES + SPM_EXTRA_CASES)
        out["spm"] = {"vocab": spm, "cases": scases}
    here = os.path.dirname(os.path.abspath(__file__))
    dst = os.path.join(here, "..", "..", "tests", "data", "tokenizer_reference.json")
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote %d cases to %s" % (len(cases), os.path.normpath(dst)))


if __name__ == "__main__":
    main()
