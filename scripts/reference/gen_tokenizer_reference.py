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

Invalid UTF-8 is deliberately absent: llama.cpp replaces it with U+FFFD while
kvrt keeps the bytes (tested separately in tests/unit/test_tokenizer.cpp).
"""
import ctypes
import json
import os
import sys

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


def main():
    default = os.environ.get("KVRT_MODEL") or os.path.expanduser(
        "~/.cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    path = sys.argv[1] if len(sys.argv) > 1 else default
    llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    buf = ctypes.create_string_buffer(256)

    def piece(tok):
        n = llama_cpp.llama_token_to_piece(vocab, tok, buf, len(buf), 0, True)
        assert 0 <= n <= len(buf), n
        return buf.raw[:n]

    cases = []
    for text, parse_special in CASES:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=parse_special)
        pieces = [piece(t) for t in ids]
        cases.append({
            "text": text,
            "parse_special": parse_special,
            "ids": ids,
            "pieces_hex": [p.hex() for p in pieces],
            "detokenized": b"".join(pieces).decode("utf-8"),
        })
    out = {
        "generator": "scripts/reference/gen_tokenizer_reference.py",
        "llama_cpp_python": llama_cpp.__version__,
        "model": os.path.basename(path),
        "n_vocab": llama_cpp.llama_vocab_n_tokens(vocab),
        "add_special": True,
        "cases": cases,
    }
    here = os.path.dirname(os.path.abspath(__file__))
    dst = os.path.join(here, "..", "..", "tests", "data", "tokenizer_reference.json")
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote %d cases to %s" % (len(cases), os.path.normpath(dst)))


if __name__ == "__main__":
    main()
