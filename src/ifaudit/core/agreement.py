"""InFoBench's pairwise-agreement metrics (Qin et al. 2024, arXiv:2401.03601): Fleiss' kappa
among annotators and WPLD, the expected distance of an annotation from a gold label.

A pairwise label is -1 (Model B better), 0 (tie) or 1 (Model A better); both metrics are
unchanged if the sign convention is flipped. Kappa is computed in exact rational arithmetic
and converted to float once, so the same table gives the same bytes everywhere. Pure
functions; no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

LABELS = (-1, 0, 1)


def _check_label(label: int, where: str) -> None:
    if label not in LABELS:
        raise ValueError(f"{where}: label {label!r} is not one of {LABELS}")


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa over categories {-1, 0, 1}; each row is one item's labels from all n raters.

    Rows are validated first (equal lengths, labels in {-1, 0, 1}; ValueError naming the row),
    then the degenerate cases are decided:
    - no items, or fewer than 2 raters: None, because agreement between raters is undefined;
    - every rating in one category: 1.0. There P-bar = P-bar_e = 1 and the formula is 0/0;
      the raters never disagreed, so we report perfect agreement.
    """
    n = len(table[0]) if table else 0
    for index, row in enumerate(table):
        if len(row) != n:
            raise ValueError(f"row {index} has {len(row)} labels, row 0 has {n}")
        for label in row:
            _check_label(label, f"row {index}")
    if not table or n < 2:
        return None

    items = len(table)
    agreement = Fraction(0)
    totals: Counter[int] = Counter()
    for row in table:
        counts = Counter(row)
        totals.update(counts)
        agreement += Fraction(sum(c * c for c in counts.values()) - n, n * (n - 1))
    p_bar = agreement / items
    p_e = sum(Fraction(totals[label], items * n) ** 2 for label in LABELS)
    if p_e == 1:
        return 1.0
    return float((p_bar - p_e) / (1 - p_e))


def pairwise_label_distance(predicted: int, gold: int) -> int:
    """0 if equal, 1 if a tie is involved (|difference| = 1), 2 if the order is reversed."""
    _check_label(predicted, "predicted")
    _check_label(gold, "gold")
    return abs(predicted - gold)


def wpld(predicted: Sequence[int], gold: Sequence[int]) -> float:
    """Weighted Pairwise Label Distance: sum_{i=0}^{2} i * P(PLD = i), i.e. the mean per-item
    distance, in [0, 2].

    This follows the paper's definition. The seed's scoring recipe,
    `sum(i * p for i, p in enumerate(plds)) / len(plds)`, instead weights each item's distance
    by the item's position in the list, so its value depends on item order and can exceed 2;
    it is not used here.
    """
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted labels but {len(gold)} gold labels")
    if not predicted:
        raise ValueError("WPLD of no items is undefined")
    total = 0
    for index, (p, g) in enumerate(zip(predicted, gold)):
        try:
            total += pairwise_label_distance(p, g)
        except ValueError as error:
            raise ValueError(f"item {index}: {error}") from None
    return total / len(predicted)


def majority_label(labels: Sequence[int]) -> int:
    """The most frequent label. When two or more labels share the top count the vote is split,
    and a split vote is reported as 0 (tie), whether or not 0 is among the top labels."""
    if not labels:
        raise ValueError("majority of no labels is undefined")
    for label in labels:
        _check_label(label, "labels")
    ranked = Counter(labels).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return 0
    return ranked[0][0]


def agreement_summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Kappa over all rows, and WPLD of each annotator and of the majority vote over the rows
    that carry a `gold` label (None when none does).

    Rows are {"id": str, "labels": [...], "gold": int (optional)}; a `gold` of None counts as
    absent (JSON null). Every row must have the same, non-zero number of labels; annotator k
    is position k-1 in every row.
    """
    table = [row["labels"] for row in rows]
    kappa = fleiss_kappa(table)
    annotators = len(table[0]) if table else 0
    if table and annotators == 0:
        raise ValueError(f"row 0 ({rows[0].get('id')!r}) has no labels")

    graded = [row for row in rows if row.get("gold") is not None]
    scores = None
    if graded:
        gold = [row["gold"] for row in graded]
        scores = {f"annotator_{k + 1}": wpld([row["labels"][k] for row in graded], gold) for k in range(annotators)}
        scores["majority"] = wpld([majority_label(row["labels"]) for row in graded], gold)
    return {"items": len(rows), "annotators": annotators, "fleiss_kappa": kappa, "wpld": scores}
