"""Error bars: the cluster bootstrap over prompts, the analytic clustered SE, Wilson intervals,
and paired differences between two runs on the same prompts.

Prompts are the clusters (Miller 2024, "Adding Error Bars to Evals"): a resample draws prompts
with replacement and carries all of a drawn prompt's instructions and samples. Each statistic is
a ratio of exact integer sums (see ifaudit.core.metrics), recomputed per resample, so the same seed
gives the same bytes on any machine. Pure functions of arrays; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist

import numpy as np

INTERVAL_METHODS = ("percentile", "bca")


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def resample_indices(seed: int, resamples: int, clusters: int) -> np.ndarray:
    """(resamples x clusters) prompt indices drawn with replacement; fixed by the seed.

    The stream is numpy's PCG64 at the pinned numpy version (requirements.lock)."""
    return np.random.default_rng(seed).integers(0, clusters, size=(resamples, clusters), dtype=np.int64)


# Resamples drawn, counted and multiplied at a time: 512 x 541 prompts is 2.2 MB of int64 indices,
# so a run's statistics never hold its 10,000 x 541 draws, nor their counts as float64, at once
# (three 43 MB arrays were ≈ 0.1-0.4 s of page faults, in sys time, in every stats job).
_ROWS_AT_ONCE = 512


@dataclass(frozen=True)
class Resamples:
    """How often each resample drew each prompt: a (resamples x clusters) count matrix, counted
    once from the drawn indices. A resample's sum of a per-prompt column is then one row of a
    matrix product, instead of gathering resamples x clusters values for every column."""

    counts: np.ndarray  # the smallest unsigned integer type that holds `clusters`

    @classmethod
    def draw(cls, seed: int, resamples: int, clusters: int) -> Resamples:
        """resample_indices(seed, resamples, clusters) counted, drawn _ROWS_AT_ONCE rows at a
        time: the generator fills each call's rows in order from one stream, so the draws are
        the same numbers in the same order (tests/test_fixed_costs.py)."""
        generator = np.random.default_rng(seed)
        counts = np.empty((resamples, clusters), dtype=np.min_scalar_type(clusters))
        offsets = clusters * np.arange(min(resamples, _ROWS_AT_ONCE), dtype=np.int64)[:, None]
        for start in range(0, resamples, _ROWS_AT_ONCE):
            rows = min(_ROWS_AT_ONCE, resamples - start)
            indices = generator.integers(0, clusters, size=(rows, clusters), dtype=np.int64)
            indices += offsets[:rows]
            counts[start : start + rows] = np.bincount(indices.ravel(), minlength=rows * clusters).reshape(
                rows, clusters
            )
        return cls(counts)

    def sums(self, columns: np.ndarray) -> np.ndarray:
        """Each resample's sum of each column of `columns` (clusters x k, int64), exactly.

        A resample draws `clusters` prompts, so no sum exceeds clusters x the largest value.
        Below 2**53 every product and partial sum is an integer float64 holds exactly, so the
        product is exact in any summation order (BLAS's included, and _ROWS_AT_ONCE rows at a
        time) and equals the integer sums; above it, the sums are taken in int64."""
        clusters = self.counts.shape[1]
        exact_in_float = int(np.abs(columns).max(initial=0)) * clusters < 2**53
        values = columns.astype(np.float64) if exact_in_float else columns
        sums = np.empty((len(self.counts), columns.shape[1]), dtype=np.int64)
        for start in range(0, len(self.counts), _ROWS_AT_ONCE):
            block = self.counts[start : start + _ROWS_AT_ONCE].astype(values.dtype) @ values
            sums[start : start + len(block)] = block.astype(np.int64)
        return sums

    def ratios(self, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        """For each (num, den) pair, the statistic sum(num)/sum(den) of every resample: exact
        integer sums (every pair's in one product), one division each."""
        if not pairs:
            return []
        sums = self.sums(np.stack([column for pair in pairs for column in pair], axis=1))
        replicates = []
        for num_sums, den_sums in zip(sums[:, 0::2].T, sums[:, 1::2].T):
            replicates.append(np.divide(num_sums, den_sums, out=np.zeros(len(sums)), where=den_sums != 0))
        return replicates


def ratio(num: np.ndarray, den: np.ndarray) -> float:
    total = int(den.sum())
    return int(num.sum()) / total if total else 0.0


def jackknife_ratios(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Leave-one-prompt-out values of sum(num)/sum(den), for BCa's acceleration."""
    num_rest = int(num.sum()) - num
    den_rest = int(den.sum()) - den
    ratios: np.ndarray = np.divide(num_rest, den_rest, out=np.zeros(len(num)), where=den_rest != 0)
    return ratios


def _z(level: float) -> float:
    return NormalDist().inv_cdf(1 - (1 - level) / 2)


def percentile_interval(replicates: np.ndarray, level: float) -> Interval:
    tail = (1 - level) / 2
    low, high = np.quantile(replicates, [tail, 1 - tail])
    return Interval(float(low), float(high))


def bca_interval(replicates: np.ndarray, estimate: float, jackknife: np.ndarray, level: float) -> Interval:
    """Bias-corrected and accelerated percentile interval (Efron 1987).

    The bias term is the mid-rank of the estimate among the replicates: replicates tied with it
    count as half below, as scipy.stats.bootstrap does. Ratios of small integer sums tie often
    (about 4 % of resamples at prompt level on IFEval), and counting ties as all above would bias
    the interval downwards."""
    if np.all(replicates == replicates[0]):
        return Interval(float(replicates[0]), float(replicates[0]))
    below = float(np.mean(replicates < estimate) + 0.5 * np.mean(replicates == estimate))
    normal = NormalDist()
    bias = normal.inv_cdf(min(max(below, 1e-12), 1 - 1e-12))
    spread = jackknife.mean() - jackknife
    denominator = 6.0 * float((spread**2).sum()) ** 1.5
    acceleration = float((spread**3).sum()) / denominator if denominator else 0.0
    tail_z = _z(level)
    quantiles = []
    for z in (-tail_z, tail_z):
        shifted = bias + (bias + z) / (1 - acceleration * (bias + z))
        quantiles.append(normal.cdf(shifted))
    low, high = np.quantile(replicates, quantiles)
    return Interval(float(low), float(high))


def interval(replicates: np.ndarray, estimate: float, jackknife: np.ndarray, level: float, method: str) -> Interval:
    if method == "percentile":
        return percentile_interval(replicates, level)
    if method == "bca":
        return bca_interval(replicates, estimate, jackknife, level)
    raise ValueError(f"unknown interval method {method!r}; choose one of {INTERVAL_METHODS}")


def clustered_se(num: np.ndarray, den: np.ndarray) -> float:
    """Analytic standard error of sum(num)/sum(den) with prompts as clusters (Miller 2024; for
    instruction level, the ratio estimator's linearization).

    SE² = Σ_p (num_p·D − N·den_p)² / D⁴ with N = Σ num, D = Σ den: a ratio of integers, computed
    exactly and rounded once, so it cannot depend on scaling, summation order or the machine."""
    total, correct = int(den.sum()), int(num.sum())
    if not total:
        return 0.0
    squares = sum((int(n) * total - correct * int(d)) ** 2 for n, d in zip(num, den))
    return math.sqrt(Fraction(squares, total**4))


def paired_clustered_se(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
    """Clustered SE of ratio(a) − ratio(b) on the same prompts: the same linearization applied to
    the per-prompt difference of both influences, again in exact arithmetic."""
    (num_a, den_a), (num_b, den_b) = a, b
    total_a, total_b = int(den_a.sum()), int(den_b.sum())
    if not total_a or not total_b:
        return 0.0
    correct_a, correct_b = int(num_a.sum()), int(num_b.sum())
    squares = sum(
        (
            (int(na) * total_a - correct_a * int(da)) * total_b**2
            - (int(nb) * total_b - correct_b * int(db)) * total_a**2
        )
        ** 2
        for na, da, nb, db in zip(num_a, den_a, num_b, den_b)
    )
    return math.sqrt(Fraction(squares, (total_a * total_b) ** 4))


def wilson(successes: float, trials: float, level: float) -> Interval:
    """Wilson score interval; for small cells where the normal approximation misleads."""
    if trials <= 0:
        return Interval(0.0, 1.0)
    z = _z(level)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * np.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    # Mathematically low <= p <= high; at p = 0 or 1 rounding could put a bound past p.
    return Interval(float(min(p, max(0.0, centre - half))), float(max(p, min(1.0, centre + half))))


@dataclass(frozen=True)
class Estimate:
    value: float
    interval: Interval
    bootstrap_se: float
    clustered_se: float


def estimate_ratio(num: np.ndarray, den: np.ndarray, replicates: np.ndarray, level: float, method: str) -> Estimate:
    """sum(num)/sum(den) with its interval from `replicates`, its bootstrap values (Resamples.ratios)."""
    value = ratio(num, den)
    return Estimate(
        value=value,
        interval=interval(replicates, value, jackknife_ratios(num, den), level, method),
        bootstrap_se=float(replicates.std(ddof=1)) if len(replicates) > 1 else 0.0,
        clustered_se=clustered_se(num, den),
    )


@dataclass(frozen=True)
class Difference:
    value: float
    interval: Interval
    share_a_greater: float
    bootstrap_se: float
    clustered_se: float


def paired_difference(
    a: tuple[np.ndarray, np.ndarray],
    b: tuple[np.ndarray, np.ndarray],
    replicates: tuple[np.ndarray, np.ndarray],
    level: float,
    method: str,
) -> Difference:
    """ratio(a) - ratio(b), each resample drawing the same prompts for both: `replicates` are
    a's and b's bootstrap values from the same Resamples."""
    value = ratio(*a) - ratio(*b)
    differences = replicates[0] - replicates[1]
    jackknife = jackknife_ratios(*a) - jackknife_ratios(*b)
    return Difference(
        value=value,
        interval=interval(differences, value, jackknife, level, method),
        share_a_greater=float(np.mean(differences > 0)),
        bootstrap_se=float(differences.std(ddof=1)) if len(differences) > 1 else 0.0,
        clustered_se=paired_clustered_se(a, b),
    )


# Pairs whose bootstrap differences are held at once: 256 x 10,000 resamples is 20 MB of float64.
_PAIRS_AT_ONCE = 256


def _influences(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Each prompt's num_p·D − N·den_p (paired_clustered_se's terms before scaling), exactly: in
    int64 where no term can overflow it, else as Python integers (an object array)."""
    total, correct = int(den.sum()), int(num.sum())
    bound = int(np.abs(num).max(initial=0)) * total + abs(correct) * int(np.abs(den).max(initial=0))
    if bound < 2**62:
        terms: np.ndarray = num.astype(np.int64) * total - correct * den.astype(np.int64)
        return terms
    return np.array([int(n) * total - correct * int(d) for n, d in zip(num, den)], dtype=object)


def _exact_dot(x: np.ndarray, y: np.ndarray) -> int:
    """Σ x·y of integer arrays, exactly: int64 when the sum cannot overflow, else Python integers."""
    if x.dtype == np.int64 and y.dtype == np.int64:
        bound = int(np.abs(x).max(initial=0)) * int(np.abs(y).max(initial=0)) * len(x)
        if bound < 2**63:
            return int(np.dot(x, y))
    return int(np.dot(x.astype(object), y.astype(object)))


def paired_differences(
    columns: Sequence[tuple[np.ndarray, np.ndarray]],
    replicates: np.ndarray,
    pairs: Sequence[tuple[int, int]],
    level: float,
    method: str,
) -> list[Difference]:
    """paired_difference for many pairs of runs at once, the same numbers bit for bit: `columns`
    holds each run's (num, den), `replicates` its bootstrap values (a runs x resamples array, rows
    from one Resamples), `pairs` (A, B) indices into both.

    The resamples' differences of up to _PAIRS_AT_ONCE pairs are one array, reduced row by row
    (quantiles, the share above zero, the SE: numpy reduces each row as it reduces one vector).
    The clustered SE's exact sum of squares expands into per-run sums and one cross sum per pair,
    Σ(u·B − v·A)² = B²·Σu² − 2AB·Σuv + A²·Σv², all integers, so it is the same integer."""
    values = [ratio(num, den) for num, den in columns]
    jackknives = [jackknife_ratios(num, den) for num, den in columns] if method == "bca" else []
    totals = [int(den.sum()) for _, den in columns]
    influences = [_influences(num, den) for num, den in columns]
    own = [_exact_dot(terms, terms) for terms in influences]
    tail = (1 - level) / 2
    differences = []
    for start in range(0, len(pairs), _PAIRS_AT_ONCE):
        chunk = pairs[start : start + _PAIRS_AT_ONCE]
        spread = replicates[[a for a, _ in chunk]] - replicates[[b for _, b in chunk]]
        shares = np.mean(spread > 0, axis=1)
        ses = spread.std(ddof=1, axis=1) if spread.shape[1] > 1 else np.zeros(len(chunk))
        bounds = np.quantile(spread, [tail, 1 - tail], axis=1).T if method == "percentile" else None
        for row, (a, b) in enumerate(chunk):
            value = values[a] - values[b]
            if bounds is not None:
                bound = Interval(float(bounds[row, 0]), float(bounds[row, 1]))
            else:
                bound = interval(spread[row], value, jackknives[a] - jackknives[b], level, method)
            scale_a, scale_b = totals[a] ** 2, totals[b] ** 2
            squares = scale_b**2 * own[a] - 2 * scale_a * scale_b * _exact_dot(influences[a], influences[b])
            squares += scale_a**2 * own[b]
            clustered = math.sqrt(Fraction(squares, (totals[a] * totals[b]) ** 4)) if totals[a] and totals[b] else 0.0
            differences.append(Difference(value, bound, float(shares[row]), float(ses[row]), clustered))
    return differences
