# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""kvrt from Python: one document, two questions. The second question's
prompt shares the system prompt and the document with the first, so kvrt
reuses their K/V from the prefix cache instead of recomputing them.

    PYTHONPATH=bindings/python python3 examples/python/prefix_cache.py [model.gguf]

Exits non-zero if the second question reused nothing.
"""
import os
import sys

import kvrt

DOCUMENT = (
    "The Harbour Street Bakery opened in 1987 in the old customs house of Port Ellen. "
    "It was founded by two sisters, Morag and Isla Campbell, who had trained as pastry cooks in Glasgow. "
    "The bakery bakes every night from two until six in the morning in a wood-fired oven built in 1902. "
    "Its most popular bread is a dark rye loaf with caraway seeds, and on Saturdays it sells "
    "more than four hundred cinnamon buns. In 2015 the bakery won the Scottish Baker of the Year award. "
    "It employs eleven people and closes every year for the first two weeks of January.")
QUESTIONS = ["When did the bakery open, and who founded it?", "What is the bakery's most popular bread?"]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
        "KVRT_MODEL", os.path.expanduser("~/.cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    kvrt.check_version()
    with kvrt.Model(path) as model, kvrt.Context(model, n_ctx=1024, n_seq_max=2) as ctx:
        for q, question in enumerate(QUESTIONS):
            text = model.chat_apply([
                ("system", "Answer the question using only the document. Be brief."),
                ("user", "Document:\n%s\n\nQuestion: %s" % (DOCUMENT, question)),
            ])
            prompt = model.tokenize(text, parse_special=True)
            print("Q%d: %s\nA%d: " % (q + 1, question, q + 1), end="", flush=True)
            stats = ctx.generate(q, prompt, max_tokens=24,
                                 on_token=lambda tok, piece: print(piece, end="", flush=True))
            print("\n   prompt %d tokens: reused %d (from the prefix cache %d), computed %d; "
                  "generated %d tokens, %.1f tokens/s" % (
                      stats.prompt_tokens, stats.reused_tokens, stats.reused_from_cache, stats.computed_tokens,
                      stats.generated_tokens, stats.decode_tokens_per_s))
        print("second question: reused %d of %d prompt tokens from the prefix cache"
              % (stats.reused_from_cache, stats.prompt_tokens))
        if stats.reused_from_cache == 0:
            sys.exit("expected the shared document to come from the prefix cache")


if __name__ == "__main__":
    main()
