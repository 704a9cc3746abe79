"""The three names inspect_evals imports, on Google's evaluation_lib (unmodified, pinned)."""

import nltk

from instruction_following_eval import evaluation_lib

InputExample = evaluation_lib.InputExample


def ensure_nltk_resource() -> None:
    nltk.data.find("tokenizers/punkt_tab")  # from NLTK_DATA; never downloads


def test_instruction_following(inp, response, strict=True):
    if strict:
        return evaluation_lib.test_instruction_following_strict(inp, {inp.prompt: response})
    return evaluation_lib.test_instruction_following_loose(inp, {inp.prompt: response})
