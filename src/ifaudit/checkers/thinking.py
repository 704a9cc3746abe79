"""Reasoning models' thinking: only what follows the last closing tag is graded."""

from __future__ import annotations


THINK_CLOSE_TAGS = ("</think>", "</think_fast>", "</think_faster>")


def strip_thinking(text: str) -> tuple[str, bool]:
    """Keep only what follows the last closing thinking tag; say whether anything was cut."""
    cut = max(((text.rfind(tag), tag) for tag in THINK_CLOSE_TAGS), key=lambda found: found[0])
    if cut[0] < 0:
        return text, False
    return text[cut[0] + len(cut[1]) :], True
