"""No wall-clock limit inside grading: a grade may not depend on how fast the machine is.

nltk 3.10 runs every regular expression (punkt's sentence and word splitting, the Treebank and
Regexp tokenizers the checkers call) under a wall-clock limit, `nltk.redos.DEFAULT_TIMEOUT`
(5 s), and raises TimeoutError when a match takes longer: a long response on a slow or loaded
machine would then fail where a fast machine grades it. The limit guards against hostile
*patterns*; the patterns here are the graders' own fixed ones and only the responses vary, so it
is turned off in every grading process (forked workers inherit it). Which setting was in force
is part of the environment fingerprint. See docs/clock.md for the sweep of the other packages.
"""

from __future__ import annotations

import importlib


def _redos():
    """nltk's regex guard, or None for an nltk that predates it (nothing to turn off)."""
    try:
        return importlib.import_module("nltk.redos")
    except ModuleNotFoundError:
        return None


def disable_time_limits() -> None:
    """Turn off nltk's per-match wall-clock limit for every pattern that does not set its own."""
    redos = _redos()
    if redos is not None:
        redos.DEFAULT_TIMEOUT = None


def time_limits() -> dict[str, object]:
    """The wall-clock limits in force, as read back from the libraries (None: no limit)."""
    redos = _redos()
    return {"nltk.redos.DEFAULT_TIMEOUT": redos.DEFAULT_TIMEOUT if redos is not None else "absent"}
