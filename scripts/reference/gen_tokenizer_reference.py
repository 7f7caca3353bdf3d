#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""Generates the tokenizer reference files: llama.cpp's tokenization of a varied
set of strings with each model's GGUF, the ground truth the tokenizer tests
(tests/unit/test_tokenizer_reference.cpp) compare kvrt to token for token.

    pip install llama-cpp-python          # builds llama.cpp from source (see bench/README.md)
    python3 scripts/reference/gen_tokenizer_reference.py [--only smollm2,gemma3,qwen2] [MODEL.gguf]

| model   | GGUF (in $KVRT_MODEL_DIR or ~/.cache/kvrt/models) | writes                                  |
| smollm2 | SmolLM2-135M-Instruct.Q4_1.gguf                     | tests/data/tokenizer_reference.json     |
| gemma3  | gemma-3-270m-Q4_K_M.gguf                            | tests/data/tokenizer_reference_gemma3.json |
| qwen2   | qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf             | tests/data/tokenizer_reference_qwen2.json  |

MODEL.gguf (or $KVRT_MODEL) overrides the SmolLM2 file, as before.

SmolLM2 (tokenizer_reference.json; regenerating it with 0.3.36 gives the
committed file byte for byte): the model is loaded with vocab_only=True (no weights). For every case the
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

Invalid UTF-8 is deliberately absent from the SmolLM2 file: llama.cpp's
byte-level BPE replaces it with U+FFFD while kvrt keeps the bytes (tested
separately in tests/unit/test_tokenizer.cpp).

Gemma 3 and Qwen2.5 (tokenizer_reference_gemma3.json, _qwen2.json): "cases" as
above (the SmolLM2 strings but its ChatML prompt, plus EXTRA_CASES plus the model's own
GEMMA3_CASES / QWEN2_CASES: its control and user-defined tokens parsed and not
parsed, Gemma's turn markers, HTML and whitespace tokens and byte fallback,
Qwen's ChatML, FIM and tool tokens, digits, code with tabs); "byte_cases":
BYTE_CASES, byte strings that are not valid UTF-8, as text_hex with llama.cpp's
ids, pieces and detokenized_hex (the SentencePiece tokenizer keeps such bytes
through byte fallback; byte-level BPE sees U+FFFD for each invalid byte); and,
for a model with a chat template, "chat": CONVERSATIONS rendered by the GGUF's
own Jinja template exactly as Llama.create_chat_completion renders it
(llama_cpp.llama_chat_format.Jinja2ChatFormatter, the "chat_template.default"
handler Llama picks for a GGUF with a template; checked to give the prompt that
handler tokenizes), with the ids of that prompt (add_special, special tokens parsed).
"""
import argparse
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


# Cases for the Gemma 3 and Qwen2.5 files, on top of CASES.
EXTRA_CASES = [
    ("a  b   c    d     e", False),
    (" " * 40 + "x", False),
    ("x" + " " * 33, False),
    ("  two leading, two trailing  ", False),
    ("\t\t\tindented\n\t\tless\n\tleast", False),
    ("\n\n\n\n\n\n", False),
    ("line1\n\nline2\n\n\nline3\n", False),
    (" \n \n", False),
    ("\ufffd replacement \uffff nonchar \ue000 private \U0010ffff max", False),
    ("nul\x00byte \x01\x02 del\x7f", False),
    ("\ufeffBOM at the start", False),
    ("\u2581 already escaped \u2581\u2581x", False),
    ("\U00020000\U00020001 \U00010000 \ua66e \U00013000 \U0001d518\U0001d54f \U000e0041 \u0378", False),
    ("1234567890 0.000001 1e-10 0x1F 007 -42", False),
    ("3,141,592,653 and 12:30:45", False),
    ("def f(x):\n\tif x:\n\t\treturn [i for i in range(10)]\n\treturn None\n", False),
    ("int main() {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}\n", False),
    ("<b>bold</b> and <i>it</i> <table><tr><td>1</td></tr></table>", False),
    ("<0x41><0xFF> byte-token text", False),
    ("<s>hello</s>", False),
    ("=" * 64 + "\n" + "-" * 80, False),
]

GEMMA_CHAT = "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n"
GEMMA3_CASES = [
    (GEMMA_CHAT, True),
    (GEMMA_CHAT, False),
    ("<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n", True),
    ("<start_of_turn>user\n  spaced   content\t<end_of_turn>\n", True),
    (" <start_of_turn>model\n", True),
    ("text<end_of_turn>more", True),
    ("<bos>Hello", True),
    ("<bos>Hello", False),
    ("<eos><pad><unk><mask>", True),
    ("<eos><pad><unk><mask>", False),
    ("<unused0> <unused99> <unused6241>", True),
    ("<unused0> <unused99> <unused6241>", False),
    ("[multimodal] <start_of_image><end_of_image>", False),
    ("<start_of_image>", True),
    ("<start_of_turn", True),
]

QWEN_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
QWEN2_CASES = [
    ("<|im_start|>system\n" + QWEN_SYSTEM + "<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
     "<|im_start|>assistant\n", True),
    ("<|endoftext|><|im_start|><|im_end|>", True),
    ("<|endoftext|><|im_start|><|im_end|>", False),
    ("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", False),
    ("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", True),
    ("[PAD151665] [PAD151935]", True),
    ("<|fim_prefix|>def add(a, b):\n<|fim_suffix|>\n    return c<|fim_middle|>", True),
    ("<|repo_name|>kvrt\n<|file_sep|>src/main.cpp\nint main() {}", True),
    ("<|im_start|>user\n<|im_start|>assistant", False),
    ("'S 'T 'RE 'VE 'M 'LL 'D 's 're x'y", False),
    ("   \n\n   x \r\n\r\n\t \n", False),
    ("for i in range(100):\n\tprint(i ** 2, end='\\t')\n", False),
    ("\t\t}\n\t}\n}\n", False),
]

# Byte strings that are not valid UTF-8 (written as hex in the JSON).
BYTE_CASES = [
    b"\xff",
    b"a\xffb",
    b"\xc3(",
    b"\xe2\x82",
    b"\xe2\x82(x",
    b"\xf0\x9f\x98",
    b"\x80\x81 continuation",
    b"\xc0\x80 overlong",
    b"\xed\xa0\x80 surrogate",
    b"caf\xe9 latin-1",
    b"ok \xf0\x9f\x98\x80\xf0",
    b" \xfe\xfe  \xfe",
]
# Only for SentencePiece vocabularies: llama.cpp's byte-level BPE decodes F4 90 80 80
# leniently to 0x110000 and then aborts the process ("invalid codepoint") encoding it back.
BYTE_CASES_SPM_ONLY = [
    b"\xf4\x90\x80\x80 too large",
]

# Conversations rendered with a model's own chat template: (messages, add_generation_prompt).
CONVERSATIONS = [
    ([{"role": "user", "content": "What is 2+2?"}], True),
    ([{"role": "system", "content": "You are a terse assistant."},
      {"role": "user", "content": "Write hello world in C."}], True),
    ([{"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "Hello! How can I help?"},
      {"role": "user", "content": "Write a Python function that adds two numbers."}], True),
    ([{"role": "user", "content": "Hi"}], False),
    ([{"role": "system", "content": "S"},
      {"role": "user", "content": "code:\n\tif x:\n\t\treturn 1\n"},
      {"role": "assistant", "content": "  Looks fine.  "}], True),
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


class Vocab:
    """llama.cpp's tokenizer of one GGUF (vocab_only: no weights)."""

    def __init__(self, path):
        self.llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        self.vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)
        self._buf = ctypes.create_string_buffer(256)

    def piece(self, tok):
        n = llama_cpp.llama_token_to_piece(self.vocab, tok, self._buf, len(self._buf), 0, True)
        assert 0 <= n <= len(self._buf), n
        return self._buf.raw[:n]

    def tokenize(self, data, parse_special):
        """ids (add_special=True) and pieces of a byte string."""
        ids = self.llm.tokenize(data, add_bos=True, special=parse_special)
        return ids, [self.piece(t) for t in ids]


def tokenize_all(path, cases):
    v = Vocab(path)
    out = []
    for text, parse_special in cases:
        ids, pieces = v.tokenize(text.encode("utf-8"), parse_special)
        out.append({
            "text": text,
            "parse_special": parse_special,
            "ids": ids,
            "pieces_hex": [p.hex() for p in pieces],
            "detokenized": b"".join(pieces).decode("utf-8", "replace"),
        })
    return out, v.n_vocab


def byte_cases(v, spm):
    out = []
    for data in BYTE_CASES + (BYTE_CASES_SPM_ONLY if spm else []):
        ids, pieces = v.tokenize(data, False)
        out.append({
            "text_hex": data.hex(),
            "parse_special": False,
            "ids": ids,
            "pieces_hex": [p.hex() for p in pieces],
            "detokenized_hex": b"".join(pieces).hex(),
        })
    return out


def chat_cases(v, kvs):
    """CONVERSATIONS rendered by the GGUF's template as create_chat_completion does."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    meta = {k: val for k, _t, val in kvs}
    template = meta.get("tokenizer.chat_template")
    if not template:
        return None
    tokens = meta["tokenizer.ggml.tokens"][1]

    def special_text(key):
        i = meta.get(key)
        return tokens[i] if i is not None and 0 <= i < len(tokens) else ""

    fmt = Jinja2ChatFormatter(template=template, eos_token=special_text("tokenizer.ggml.eos_token_id"),
                              bos_token=special_text("tokenizer.ggml.bos_token_id"))
    out = []
    for messages, add_generation_prompt in CONVERSATIONS:
        fmt.add_generation_prompt = add_generation_prompt
        prompt = fmt(messages=messages).prompt
        ids, _ = v.tokenize(prompt.encode("utf-8"), True)
        out.append({
            "messages": messages,
            "add_generation_prompt": add_generation_prompt,
            "prompt": prompt,
            "ids": ids,
        })
    return out


def write_json(name, obj):
    here = os.path.dirname(os.path.abspath(__file__))
    dst = os.path.normpath(os.path.join(here, "..", "..", "tests", "data", name))
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")
    return dst


def model_dir():
    return os.environ.get("KVRT_MODEL_DIR") or os.path.expanduser("~/.cache/kvrt/models")


def gen_model(path, out_name, model_cases):
    """The reference file of a model other than SmolLM2 (Gemma 3, Qwen2.5)."""
    cases, n_vocab = tokenize_all(path, CASES[:-1] + EXTRA_CASES + model_cases)
    v = Vocab(path)
    kvs = read_gguf_kvs(path)
    meta = {k: val for k, _t, val in kvs}
    out = {
        "generator": "scripts/reference/gen_tokenizer_reference.py",
        "llama_cpp_python": llama_cpp.__version__,
        "model": os.path.basename(path),
        "n_vocab": n_vocab,
        "tokenizer_model": meta.get("tokenizer.ggml.model"),
        "tokenizer_pre": meta.get("tokenizer.ggml.pre"),
        "add_special": True,
        "cases": cases,
        "byte_cases": byte_cases(v, meta.get("tokenizer.ggml.model") == "llama"),
    }
    chat = chat_cases(v, kvs)
    if chat is not None:
        out["chat"] = chat
    dst = write_json(out_name, out)
    print("wrote %d cases, %d byte cases, %d chats to %s" % (
        len(cases), len(out["byte_cases"]), len(chat or []), dst))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="smollm2,gemma3,qwen2",
                    help="comma-separated subset of smollm2, gemma3, qwen2")
    ap.add_argument("model", nargs="?", help="the SmolLM2 GGUF (default $KVRT_MODEL or the model dir's)")
    args = ap.parse_args()
    only = set(args.only.split(","))
    unknown = only - {"smollm2", "gemma3", "qwen2"}
    if unknown:
        sys.exit("unknown model(s): " + ", ".join(sorted(unknown)))
    if "gemma3" in only:
        gen_model(os.path.join(model_dir(), "gemma-3-270m-Q4_K_M.gguf"), "tokenizer_reference_gemma3.json",
                  GEMMA3_CASES)
    if "qwen2" in only:
        gen_model(os.path.join(model_dir(), "qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf"),
                  "tokenizer_reference_qwen2.json", QWEN2_CASES)
    if "smollm2" in only:
        gen_smollm2(args.model or os.environ.get("KVRT_MODEL") or
                    os.path.join(model_dir(), "SmolLM2-135M-Instruct.Q4_1.gguf"))


def gen_smollm2(path):
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
    dst = write_json("tokenizer_reference.json", out)
    print("wrote %d cases to %s" % (len(cases), dst))


if __name__ == "__main__":
    main()
