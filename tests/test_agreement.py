"""InFoBench pairwise agreement: Fleiss' kappa, pairwise label distance, WPLD, majority vote and
the summary, all against values computed by hand (the arithmetic is in the comments).

Notation for kappa: n raters, N items, n_ij = raters putting item i in category j,
P_i = (sum_j n_ij^2 - n) / (n(n-1)), P-bar = mean P_i, p_j = sum_i n_ij / (N n),
P-bar_e = sum_j p_j^2, kappa = (P-bar - P-bar_e) / (1 - P-bar_e). Kappa is computed exactly
and rounded once, so the expected values are written as exact fractions.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ifaudit.core.agreement import (
    agreement_summary,
    fleiss_kappa,
    majority_label,
    pairwise_label_distance,
    wpld,
)


def _expand(counts: tuple[int, int, int]) -> list[int]:
    """An item's labels from its (count of -1, count of 0, count of 1)."""
    minus, tie, plus = counts
    return [-1] * minus + [0] * tie + [1] * plus


def _seed_recipe_wpld(pred_labels: list[int], gold_labels: list[int]) -> float:
    """The seed's scoring recipe, verbatim, kept only to document how it differs."""
    plds = [0 if p == g else (1 if abs(p - g) == 1 else 2) for p, g in zip(pred_labels, gold_labels)]
    return sum(i * p for i, p in enumerate(plds)) / len(plds)


# --- Fleiss' kappa -------------------------------------------------------------------------


def test_kappa_textbook_example_merged_to_three_categories():
    # Fleiss (1971) / Wikipedia's 10 items x 14 raters x 5 categories, with categories 1+2 -> -1,
    # 3 -> 0, 4+5 -> 1. Per item (n_-1, n_0, n_1), sum n_ij^2, and P_i numerator (sum - 14):
    #   (0,0,14) 196 182 | (2,6,6) 76 62  | (0,3,11) 130 116 | (3,9,2) 94 80  | (4,8,2) 84 70
    #   (14,0,0) 196 182 | (5,6,3) 70 56  | (7,3,4)  74  60  | (11,2,1) 126 112 | (2,2,10) 108 94
    # numerators sum to 1014; P-bar = 1014 / (10 * 14 * 13) = 1014/1820 = 39/70.
    # Column totals 48, 39, 53 (of 140): P-bar_e = (48^2 + 39^2 + 53^2) / 140^2
    #   = (2304 + 1521 + 2809) / 19600 = 6634/19600 = 3317/9800.
    # kappa = (5460/9800 - 3317/9800) / (6483/9800) = 2143/6483 ~ 0.33056.
    counts = [(0, 0, 14), (2, 6, 6), (0, 3, 11), (3, 9, 2), (4, 8, 2),
              (14, 0, 0), (5, 6, 3), (7, 3, 4), (11, 2, 1), (2, 2, 10)]  # fmt: skip
    assert fleiss_kappa([_expand(c) for c in counts]) == 2143 / 6483


def test_kappa_four_items_three_raters():
    # [1,1,1]   counts (0,0,3): P = (9-3)/6 = 1
    # [1,1,0]   counts (0,1,2): P = (5-3)/6 = 1/3
    # [0,0,-1]  counts (1,2,0): P = (5-3)/6 = 1/3
    # [-1,0,1]  counts (1,1,1): P = (3-3)/6 = 0
    # P-bar = (5/3)/4 = 5/12. Totals (2, 4, 6) of 12: p = 1/6, 1/3, 1/2,
    # P-bar_e = 1/36 + 4/36 + 9/36 = 7/18.
    # kappa = (15/36 - 14/36) / (11/18) = (1/36) * (18/11) = 1/22 ~ 0.04545.
    table = [[1, 1, 1], [1, 1, 0], [0, 0, -1], [-1, 0, 1]]
    assert fleiss_kappa(table) == 1 / 22


def test_kappa_perfect_agreement_across_categories_is_one():
    # Every P_i = 1 so P-bar = 1; p = 1/3 each so P-bar_e = 1/3; kappa = (2/3)/(2/3) = 1.
    assert fleiss_kappa([[1, 1, 1], [0, 0, 0], [-1, -1, -1]]) == 1.0


def test_kappa_all_ratings_in_one_category_is_one_by_rule():
    # P-bar = 1 and P-bar_e = 1^2 = 1: the formula is 0/0; our rule reports 1.0.
    assert fleiss_kappa([[0, 0, 0], [0, 0, 0]]) == 1.0
    assert fleiss_kappa([[1, 1]]) == 1.0


def test_kappa_systematic_disagreement_is_negative():
    # 3 raters, every item [-1, 0, 1]: P_i = 0, P-bar = 0; p = 1/3 each, P-bar_e = 1/3;
    # kappa = (0 - 1/3) / (2/3) = -1/2.
    assert fleiss_kappa([[-1, 0, 1]] * 3) == -0.5
    # 2 raters always opposite: P_i = (1+1-2)/2 = 0; p = 1/2, 1/2, P-bar_e = 1/2;
    # kappa = (0 - 1/2) / (1/2) = -1.
    assert fleiss_kappa([[1, -1], [-1, 1], [1, -1], [-1, 1]]) == -1.0


def test_kappa_undefined_cases_are_none():
    assert fleiss_kappa([]) is None  # no items
    assert fleiss_kappa([[1], [0], [-1]]) is None  # one annotator
    assert fleiss_kappa([[], []]) is None  # no annotators


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ([[1, 0, 1], [1, 0], [0, 0, 0]], "row 1"),
        ([[1, 0, 1], [0, 0, 0], [0, 2, 0]], "row 2"),
        ([[1], [1, 1]], "row 1"),  # validated even though one rater would be None
        ([[5, 0]], "row 0"),
    ],
)
def test_kappa_rejects_bad_rows(table, message):
    with pytest.raises(ValueError, match=message):
        fleiss_kappa(table)


label_rows = st.integers(2, 5).flatmap(
    lambda n: st.lists(st.lists(st.sampled_from([-1, 0, 1]), min_size=n, max_size=n), min_size=1, max_size=8)
)


@given(label_rows, st.randoms())
def test_kappa_ignores_sign_convention_and_rater_order(table, rng):
    flipped = [[-label for label in row] for row in table]
    shuffled = [rng.sample(row, len(row)) for row in table]
    assert fleiss_kappa(flipped) == fleiss_kappa(table) == fleiss_kappa(shuffled)


# --- pairwise label distance and WPLD --------------------------------------------------------


@pytest.mark.parametrize(
    ("predicted", "gold", "distance"),
    [
        (-1, -1, 0), (0, 0, 0), (1, 1, 0),  # agree
        (-1, 0, 1), (0, -1, 1), (0, 1, 1), (1, 0, 1),  # a tie misclassified
        (-1, 1, 2), (1, -1, 2),  # order reversed
    ],
)  # fmt: skip
def test_pairwise_label_distance_all_nine_pairs(predicted, gold, distance):
    assert pairwise_label_distance(predicted, gold) == distance


def test_pairwise_label_distance_rejects_other_labels():
    with pytest.raises(ValueError, match="predicted"):
        pairwise_label_distance(2, 0)
    with pytest.raises(ValueError, match="gold"):
        pairwise_label_distance(0, -2)


def test_wpld_hand_cases():
    # distances 0,0,0 -> 0
    assert wpld([1, 0, -1], [1, 0, -1]) == 0.0
    # distances 2,2 -> 2 (maximum)
    assert wpld([1, -1], [-1, 1]) == 2.0
    # distances 0,1,2,1: P(PLD=0)=1/4, P(1)=2/4, P(2)=1/4 -> 0*1/4 + 1*2/4 + 2*1/4 = 1
    assert wpld([1, 0, 1, -1], [1, 1, -1, 0]) == 1.0


def _wpld_by_definition(predicted: list[int], gold: list[int]) -> Fraction:
    """WPLD as defined: the expectation of the label distance |p - g|, sum over d of d * P(PLD = d),
    from the distances' empirical distribution, exactly."""
    distribution = Counter(abs(p - g) for p, g in zip(predicted, gold))
    return sum((distance * Fraction(count, len(gold)) for distance, count in distribution.items()), Fraction(0))


def test_wpld_follows_the_definition_not_the_seed_recipe():
    # distances [2, 0, 0]: definition 0*(2/3) + 2*(1/3) = 2/3; seed recipe (0*2 + 1*0 + 2*0) / 3 = 0,
    # because it weights by list position.
    # The same items reordered, distances [0, 0, 2]: definition still 2/3; recipe (2*2)/3 = 4/3.
    # All 5 reversed, distances [2]*5: definition 2; recipe 2*(0+1+2+3+4)/5 = 4, outside [0, 2].
    for predicted, gold in (([1, 0, -1], [-1, 0, -1]), ([0, -1, 1], [0, -1, -1]), ([1] * 5, [-1] * 5)):
        assert wpld(predicted, gold) == float(_wpld_by_definition(predicted, gold))
        assert wpld(predicted, gold) != _seed_recipe_wpld(predicted, gold)
    assert (wpld([1, 0, -1], [-1, 0, -1]), wpld([0, -1, 1], [0, -1, -1]), wpld([1] * 5, [-1] * 5)) == (
        2 / 3,
        2 / 3,
        2.0,
    )


labelled_items = st.lists(st.tuples(st.sampled_from([-1, 0, 1]), st.sampled_from([-1, 0, 1])), min_size=1, max_size=30)


@given(labelled_items)
def test_wpld_equals_the_expected_distance_and_ignores_item_order(items):
    predicted, gold = [p for p, _ in items], [g for _, g in items]
    assert wpld(predicted, gold) == float(_wpld_by_definition(predicted, gold))  # exact, rounded once
    assert wpld(predicted[::-1], gold[::-1]) == wpld(predicted, gold)


def test_wpld_rejects_bad_input():
    with pytest.raises(ValueError, match="no items"):
        wpld([], [])
    with pytest.raises(ValueError, match="2 predicted labels but 1 gold"):
        wpld([1, 0], [1])
    with pytest.raises(ValueError, match="item 1"):
        wpld([1, 3], [1, 0])


# --- majority vote ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "majority"),
    [
        ([1, 1, 0], 1),
        ([-1, -1, -1], -1),
        ([1], 1),
        ([-1, 1, -1, 0, 0, -1], -1),
        ([1, 0], 0),  # 1 vs 0 split: tie
        ([-1, 1], 0),  # -1 vs 1 split: tie
        ([-1, 0, 1], 0),  # three-way split: tie
        ([-1, -1, 1, 1, 0], 0),  # -1 vs 1 split, 0 is not among the top: still tie
    ],
)
def test_majority_label(labels, majority):
    assert majority_label(labels) == majority


def test_majority_label_rejects_bad_input():
    with pytest.raises(ValueError, match="no labels"):
        majority_label([])
    with pytest.raises(ValueError, match="not one of"):
        majority_label([1, 7])


# --- summary ---------------------------------------------------------------------------------

ROWS = [
    {"id": "a", "labels": [1, 1, 1], "gold": 1},
    {"id": "b", "labels": [1, 1, 0], "gold": -1},
    {"id": "c", "labels": [0, 0, -1], "gold": -1},
    {"id": "d", "labels": [-1, 0, 1]},
]


def test_summary_with_gold():
    # Kappa: the 4-item table above, 1/22. WPLD over a, b, c (d has no gold):
    #   annotator_1 preds 1, 1, 0 vs gold 1, -1, -1: distances 0, 2, 1 -> 1
    #   annotator_2 preds 1, 1, 0: the same -> 1
    #   annotator_3 preds 1, 0, -1: distances 0, 1, 0 -> 1/3
    #   majority 1, 1, 0 (c: two 0s vs one -1): distances 0, 2, 1 -> 1
    assert agreement_summary(ROWS) == {
        "items": 4,
        "annotators": 3,
        "fleiss_kappa": 1 / 22,
        "wpld": {"annotator_1": 1.0, "annotator_2": 1.0, "annotator_3": 1 / 3, "majority": 1.0},
    }


def test_summary_without_gold():
    rows = [{key: value for key, value in row.items() if key != "gold"} for row in ROWS]
    rows[0]["gold"] = None  # JSON null counts as absent
    assert agreement_summary(rows) == {"items": 4, "annotators": 3, "fleiss_kappa": 1 / 22, "wpld": None}


def test_summary_single_annotator_and_empty():
    # One annotator: kappa undefined, WPLD still defined. Distances 0, 1 -> 1/2; majority = own label.
    rows = [{"id": "a", "labels": [1], "gold": 1}, {"id": "b", "labels": [0], "gold": 1}]
    assert agreement_summary(rows) == {
        "items": 2,
        "annotators": 1,
        "fleiss_kappa": None,
        "wpld": {"annotator_1": 0.5, "majority": 0.5},
    }
    assert agreement_summary([]) == {"items": 0, "annotators": 0, "fleiss_kappa": None, "wpld": None}


def test_summary_rejects_bad_rows():
    with pytest.raises(ValueError, match="row 1"):
        agreement_summary([{"id": "a", "labels": [1, 0]}, {"id": "b", "labels": [1]}])
    with pytest.raises(ValueError, match="no labels"):
        agreement_summary([{"id": "a", "labels": []}])
    with pytest.raises(ValueError, match="item 0: gold"):
        agreement_summary([{"id": "a", "labels": [1, 0], "gold": 2}])
