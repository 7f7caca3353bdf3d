# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""Prompt construction shared by kvrt's llama.cpp reference and baseline scripts.

Everything here is plain Python (no llama_cpp import) so that kvrt's own tests and
benchmarks can build byte-identical prompts. The rules are also written down in
bench/README.md; C++ code that re-implements them must produce the same bytes.

SmolLM2-135M-Instruct's chat template (GGUF key tokenizer.chat_template) is ChatML:

    <|im_start|>system\\n{system}<|im_end|>\\n          (only if no system message is given:
                                                       the default system prompt below)
    <|im_start|>{role}\\n{content}<|im_end|>\\n         (one per message)
    <|im_start|>assistant\\n                           (the generation prompt)

gen_llamacpp_reference.py checks chatml() against the GGUF's own Jinja template, so a
drift between this file and the model is caught when the reference is regenerated.
"""

from __future__ import annotations

import os
from typing import List, Sequence, Tuple

# The system prompt SmolLM2's template inserts when the conversation has none.
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEMO_DOCUMENT_PATH = os.path.join(REPO_ROOT, "tools", "kvrt", "demo_document.txt")

# The demo edits exactly this sentence (request C): the prefix-cache hit must end at
# the first token that differs.
BUDGET_SENTENCE = "The total budget is 1,000,000 EUR."
EDITED_BUDGET_SENTENCE = "The total budget is 500,000 EUR."

QUESTION_RISKS = "Summarise the risks."
QUESTION_DEADLINES = "List the deadlines."


def chatml(messages: Sequence[Tuple[str, str]], add_generation_prompt: bool = True) -> str:
    """Renders [(role, content), ...] with SmolLM2's ChatML template."""
    out = []
    if not messages or messages[0][0] != "system":
        out.append(f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n")
    for role, content in messages:
        out.append(f"<|im_start|>{role}\n{content}<|im_end|>\n")
    if add_generation_prompt:
        out.append("<|im_start|>assistant\n")
    return "".join(out)


def load_demo_document(path: str = DEMO_DOCUMENT_PATH) -> str:
    """The demo's project document, exactly as stored (UTF-8), trailing newline stripped."""
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    doc = doc.rstrip("\n")
    if doc.count(BUDGET_SENTENCE) != 1:
        raise ValueError(f"{path}: the sentence {BUDGET_SENTENCE!r} must appear exactly once")
    return doc


def edited_demo_document(doc: str) -> str:
    """Request C's document: the budget sentence changed to 500,000 EUR."""
    return doc.replace(BUDGET_SENTENCE, EDITED_BUDGET_SENTENCE, 1)


def demo_user_message(doc: str, question: str) -> str:
    """One user turn: the document, a blank line, the question."""
    return f"{doc}\n\n{question}"


# The multi-document TTFT case (bench/README.md): ARCHIVE_DOCS documents asked in turn, twice.
ARCHIVE_DOCS = 3


def archive_document(doc: str, k: int) -> str:
    """Document k (1-based) of the multi-document case: the demo document under a title line
    of its own, so that the documents differ from their first line on."""
    return f"Document {k} of the project archive.\n\n{doc}"


def archive_requests(doc: str | None = None) -> list:
    """The multi-document case's requests, one per document: document k + "List the deadlines."
    (ChatML, default system prompt; tokenize as demo_requests says)."""
    if doc is None:
        doc = load_demo_document()
    return [chatml([("user", demo_user_message(archive_document(doc, k), QUESTION_DEADLINES))])
            for k in range(1, ARCHIVE_DOCS + 1)]


def demo_requests(doc: str | None = None) -> dict:
    """The demo's three requests as full prompt texts (ChatML, default system prompt).

    A = document + "Summarise the risks."
    B = document + "List the deadlines."          (shares A's prefix up to the question)
    C = edited document + "List the deadlines."   (shares B's prefix up to the budget figure)
    Tokenize each with special tokens parsed and no BOS (the model's add_bos_token is false).
    """
    if doc is None:
        doc = load_demo_document()
    return {
        "A": chatml([("user", demo_user_message(doc, QUESTION_RISKS))]),
        "B": chatml([("user", demo_user_message(doc, QUESTION_DEADLINES))]),
        "C": chatml([("user", demo_user_message(edited_demo_document(doc), QUESTION_DEADLINES))]),
    }


def repeat_to_length(tokens: Sequence[int], n: int) -> List[int]:
    """tokens repeated end to end, then truncated to exactly n tokens.

    The benchmark prompts are the demo document's tokens (tokenized as plain text: no
    template, no BOS, special tokens not parsed) passed through this function.
    """
    if not tokens:
        raise ValueError("repeat_to_length: empty token list")
    reps = -(-n // len(tokens))
    return (list(tokens) * reps)[:n]


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n
