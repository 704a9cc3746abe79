"""The report's tables as LaTeX: booktabs snippets an author `\\input`s into a paper.

Each snippet is one `tabular` (booktabs rules, no float, no caption: the paper owns those), made
from the same tables the report renders (metrics and comparisons `Table`s, the claims files), with
every figure formatted as the report formats it: points with two decimals, the interval in
brackets, exact counts beside them. Every label goes through `latex_escape` (ifaudit.io.formats.escape's
`latex`), so a run named `gpt4_x3` or labelled `50% & more`, `[draft]` or `🚀 模型` compiles. Pure
functions of their inputs: no time stamps, no paths of the machine that wrote them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ifaudit.io.formats.escape import latex as latex_escape, one_line
from ifaudit.io.formats.table import Table
from ifaudit.steps.planning import plan

PREAMBLE = r"\usepackage{booktabs}"


def points(value: float | None) -> str:
    """A share in percentage points, two decimals (as the report writes it); empty for none."""
    return "" if value is None else f"{100 * value:.2f}"


def signed_points(value: float) -> str:
    return f"{100 * value:+.2f}".replace("-", "$-$")


def with_interval(row: dict[str, Any]) -> str:
    """`77.08 [73.57, 80.59]`: a value and its interval in points."""
    return f"{points(row['value'])} [{points(row['ci_low'])}, {points(row['ci_high'])}]"


def signed_with_interval(row: dict[str, Any]) -> str:
    """A difference in points, its interval in brackets: `+2.59 [+1.29, +4.07]`."""
    return f"{signed_points(row['value'])} [{signed_points(row['ci_low'])}, {signed_points(row['ci_high'])}]"


def counts(correct: object, total: object) -> str:
    """Exact counts, `417/541`; a fractional count (several samples per prompt, written `1678/3`)
    in parentheses so the two slashes read right: `(1678/3)/541`."""
    shown = f"({correct})" if "/" in str(correct) else str(correct)
    return f"{shown}/{total}"


def _header_comment(what: str, source: str) -> list[str]:
    return [
        f"% {what}",
        f"% Written by ifaudit's report step from {source}; every figure is the report's.",
        f"% Needs {PREAMBLE} in the preamble. Put it in a table environment of your own: \\input{{...}}.",
    ]


def tabular(spec: str, head: Sequence[str], body: Sequence[Sequence[str]], comment: Sequence[str]) -> str:
    """A booktabs tabular: `head` lines (already LaTeX, ending in `\\\\` and rules), body rows of
    LaTeX cells."""
    lines = [*comment, f"\\begin{{tabular}}{{{spec}}}", r"\toprule", *head, r"\midrule"]
    lines += [" & ".join(row) + r" \\" for row in body]
    return "\n".join([*lines, r"\bottomrule", r"\end{tabular}", ""])


def runs_latex(metrics: Table, task: str) -> str:
    """One task's runs × metrics: each metric's value with its interval, and its exact counts."""
    rows = metrics.where(task=task)
    titles = list(dict.fromkeys(row["title"] for row in rows))
    runs = list(dict.fromkeys(row["run"] for row in rows))
    first = rows[0]
    level = int(round(100 * first["level"]))
    head = [
        " & ".join(["", *(f"\\multicolumn{{2}}{{c}}{{{latex_escape(title)}}}" for title in titles)]) + r" \\",
        "".join(f"\\cmidrule(lr){{{2 + 2 * i}-{3 + 2 * i}}}" for i in range(len(titles))),
        " & ".join(["run", *(f"\\% [{level}\\,\\% CI] & $n$" for _ in titles)]) + r" \\",
    ]
    body = []
    for run in runs:
        by_title = {row["title"]: row for row in rows if row["run"] == run}
        label = f"{by_title[titles[0]]['label']} ({run})"
        cells = [latex_escape(label)]
        for title in titles:
            row = by_title[title]
            cells += [with_interval(row), counts(row["correct"], row["total"])]
        body.append(cells)
    comment = _header_comment(
        f"Task {task}: accuracy in percent with {level} % {first['interval']} intervals from a cluster bootstrap "
        f"over prompts ({int(first['resamples'])} resamples); n: correct/total, exact.",
        plan.report_file("metrics.csv"),
    )
    return tabular("l" + "rr" * len(titles), head, body, comment)


def comparisons_latex(comparisons: Table, titles: dict[str, str]) -> str:
    """The paired comparisons: difference with its interval, P(A > B), clustered SE, and the most
    the substituted settings could move it."""
    first = comparisons.rows[0] if comparisons.rows else None
    head = [r"comparison & metric & difference [CI] & $P(A>B)$ & clustered SE & max shift \\"]
    body = [
        [
            latex_escape(row["comparison"]),
            latex_escape(titles.get(row["metric"], "") if ":" not in row["a"] else ""),
            signed_with_interval(row),
            f"{row['share_a_greater']:.3f}",
            points(row["clustered_se"]),
            points(row["max_shift_from_substitutes"]),
        ]
        for row in comparisons.rows
    ]
    comment = _header_comment(
        "Paired comparisons A - B in points; each resample draws the same prompts for both sides. "
        "P(A>B): share of resamples with A higher."
        + (f" {len(comparisons.rows)} rows." if first else " No comparisons."),
        plan.report_file("comparisons.csv"),
    )
    return tabular("llrrrr", head, body, comment)


_CLAIM_ORDER = ("prompt_level_strict_acc", "inst_level_strict_acc", "prompt_level_loose_acc", "inst_level_loose_acc")


def _figure(part: dict[str, Any] | None) -> list[str]:
    if not part:
        return ["--", ""]
    return [points(part["value"]), counts(part["correct"], part["total"])]


def claims_latex(run: str, claims: dict[str, Any], level: int) -> str:
    """An imported run's claims beside the audit: reported, recomputed from the harness's own
    verdicts, audited by the pinned grader, and audited - claimed with its paired interval."""
    names = sorted(claims["metrics"], key=lambda name: (_CLAIM_ORDER.index(name) if name in _CLAIM_ORDER else 99, name))
    head = [
        r"metric & reported & \multicolumn{2}{c}{recomputed} & \multicolumn{2}{c}{audited} & "
        f"audited $-$ claimed [{level}\\,\\% CI] \\\\",
        r"\cmidrule(lr){3-4}\cmidrule(lr){5-6}",
        r" & \% & \% & $n$ & \% & $n$ & points \\",
    ]
    body = []
    for name in names:
        metric = claims["metrics"][name]
        difference = metric["audited_minus_claimed"]
        body.append(
            [
                latex_escape(metric["title"]),
                "--" if metric["reported"] is None else points(metric["reported"]),
                *_figure(metric["recomputed_from_harness"]),
                *_figure(metric["audited"]),
                signed_with_interval(difference) if difference else "--",
            ]
        )
    harness = claims["harness"]
    comment = _header_comment(
        f"Run {run}: claims of the {harness['format']} log ({harness['tool']['name']}, model {harness['model']}) "
        "beside the pinned grader's audit; n: correct/total, exact. "
        f"Differing verdicts: {len(claims['disagreements'])}, listed in {plan.run_file(run, 'disagreements.csv')}.",
        plan.run_file(run, "claims.json"),
    )
    # the comment is a LaTeX comment: one line each, whatever the log's names hold
    return tabular("lrrrrrr", head, body, [one_line(line) for line in comment])
