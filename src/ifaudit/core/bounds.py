"""The bounds of every number a user gives ifaudit, in a config or on the command line.

A number is taken only when it is finite, of its kind (a count is an integer: never a float that
happens to be whole, `1e9` or `1.0e+40`, and never a boolean) and within its documented range. The
ranges keep every job possible: 10^20 bootstrap resamples or 10^9 shards would not refuse, they
would run out of memory or plan for hours. The config's schema (workflow/schemas/config.schema.yaml)
states the same bounds, held to these by a test; the command's options and a run's `model:` and
`judge:` settings are checked with these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The largest byte cap taken: far beyond any file, and below what a read's length may be (a C ssize_t).
MAX_BYTES = 2**62


@dataclass(frozen=True)
class Bounds:
    """A range of numbers: [low, high], either end left out when `open_low` / `open_high`."""

    low: int | float
    high: int | float
    integer: bool = True
    open_low: bool = False
    open_high: bool = False

    def describe(self) -> str:
        """The range in words: "an integer from 2 to 100,000", "a number above 0 and below 1"."""
        kind = "an integer" if self.integer else "a number"
        low = f"above {self.low:,}" if self.open_low else f"from {self.low:,}"
        high = f"below {self.high:,}" if self.open_high else f"to {self.high:,}"
        return f"{kind} {low} {'and ' if self.open_low or self.open_high else ''}{high}"

    def problem(self, value: object) -> str | None:
        """Why `value` is not a number within these bounds, or None."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{_shown(value)} is not a number; expected {self.describe()}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{_shown(value)} is not a finite number; expected {self.describe()}"
        if self.integer and not isinstance(value, int):
            return f"{_shown(value)} is not an integer; expected {self.describe()}"
        below = value <= self.low if self.open_low else value < self.low
        above = value >= self.high if self.open_high else value > self.high
        return f"{_shown(value)} is out of range; expected {self.describe()}" if below or above else None

    def parse(self, text: str) -> int | float:
        """A number written on the command line, within these bounds; ValueError saying why not.
        An integer in the digits 0-9 only (Python's int() also reads other scripts' digits and
        `1_000`), with a sign; a number as float() reads it, finite."""
        raw = text.strip()
        digits = raw[1:] if raw[:1] in "+-" else raw
        if self.integer:
            if not (digits.isascii() and digits.isdigit()) or len(digits) > 40:
                raise ValueError(f"{_shown(text)} is not an integer in the digits 0-9; expected {self.describe()}")
            value: int | float = int(raw)
        else:
            try:
                if not raw.isascii():  # float() too reads other scripts' digits
                    raise ValueError
                value = float(raw)
            except ValueError:
                raise ValueError(f"{_shown(text)} is not a number; expected {self.describe()}") from None
        if problem := self.problem(value):
            raise ValueError(problem)
        return value


def _shown(value: object) -> str:
    """A value as the user wrote it, shortened: a line stays a line."""
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else f"{text[:40]}…"


# Statistics (`statistics:` and the --resamples, --level, --seed options). A resample is a row of
# a (resamples x prompts) count matrix: 100,000 resamples of 541 prompts are 108 MB.
RESAMPLES = Bounds(2, 100_000)
LEVEL = Bounds(0, 1, integer=False, open_low=True, open_high=True)
SEED = Bounds(0, 2**32 - 1)
# Grading jobs: shards of a pass (`shards:`, --shard's COUNT), worker processes (--jobs).
SHARDS = Bounds(1, 1_000)
SHARD_RESPONSES = Bounds(1, 10**9)
# Runs a batch job takes (`batch_runs:`).
BATCH_RUNS = Bounds(1, 1_000)
JOBS = Bounds(1, 256)
# An endpoint's settings (a run's `model:` and `judge:`, the judge's options).
TEMPERATURE = Bounds(0, 10, integer=False)
TOP_P = Bounds(0, 1, integer=False, open_low=True)
MAX_TOKENS = Bounds(1, 2**31 - 1)
REQUEST_SEED = Bounds(-(2**63), 2**63 - 1)
SAMPLES = Bounds(1, 1_000)
CONCURRENCY = Bounds(1, 256)
RETRIES = Bounds(0, 100)
BACKOFF_SECONDS = Bounds(0, 3_600, integer=False)
TIMEOUT_SECONDS = Bounds(0, 86_400, integer=False, open_low=True)
BYTES = Bounds(1, MAX_BYTES)
# A published figure beside ours: a proportion; the step it was rounded to (`published.rounded_to`).
PROPORTION = Bounds(0, 1, integer=False)
ROUNDING_STEP = Bounds(0, 1, integer=False, open_low=True)
# A published figure in percent (the Open LLM Leaderboard's IFEval composite).
PERCENT = Bounds(0, 100, integer=False)
