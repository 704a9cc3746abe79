"""The report's tables as LaTeX: booktabs snippets an author `\\input`s into a paper.

Each snippet is one `tabularx` as wide as `\\linewidth` (booktabs rules, no float, no caption: the
paper owns those) in long form, a group of rows per run, comparison or metric (long_table), made
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
from ifaudit.steps.reporting.leaderboard import share_a_greater

PREAMBLE = r"\usepackage{booktabs,tabularx}"


def points(value: float | None) -> str:
    """A share in percentage points, two decimals (as the report writes it); empty for none."""
    return "" if value is None else f"{100 * value:.2f}"


def signed_points(value: float) -> str:
    return f"{100 * value:+.2f}".replace("-", "$-$")


def counts(correct: object, total: object) -> str:
    """Exact counts, `417/541`; a fractional count (several samples per prompt, written `1678/3`)
    in parentheses so the two slashes read right: `(1678/3)/541`."""
    shown = f"({correct})" if "/" in str(correct) else str(correct)
    return f"{shown}/{total}"


def interval(row: dict[str, Any]) -> str:
    """`[73.57, 80.59]`: an interval in points."""
    return f"[{points(row['ci_low'])}, {points(row['ci_high'])}]"


def signed_interval(row: dict[str, Any]) -> str:
    """`[+1.29, +4.07]`: the interval of a difference in points."""
    return f"[{signed_points(row['ci_low'])}, {signed_points(row['ci_high'])}]"


def _header_comment(what: str, source: str) -> list[str]:
    return [
        f"% {what}",
        f"% Written by ifaudit's report step from {source}; every figure is the report's.",
        f"% Needs {PREAMBLE} in the preamble. Put it in a table environment of your own: \\input{{...}}.",
        "% As wide as \\linewidth (a column of a two-column paper, or the page): one row per figure.",
    ]


# The rows' names: the one column that wraps (at spaces and hyphens). A group's heading is a row of
# its own in italics, as wide as the table, wrapping too.
_NAMES = r"@{}>{\raggedright\arraybackslash}X"
_HEADING = r"@{}>{\raggedright\arraybackslash}p{\linewidth}@{}"

# Tables' own size, as papers set them, in a group of the snippet's own (the paper's text is left as
# it is): small, the columns 4 pt apart.
_SIZE = r"\par{\small\setlength{\tabcolsep}{4pt}\noindent%"

Group = tuple[str, Sequence[Sequence[str]]]


def long_table(figures: str, head: Sequence[str], groups: Sequence[Group], comment: Sequence[str]) -> str:
    """A booktabs `tabularx` exactly `\\linewidth` wide, in long form: each group's heading (LaTeX)
    on a row of its own, then its rows, each a name and figures (LaTeX cells) in the columns of
    `figures`, which never wrap. A table of runs x metrics, one column per metric, is as wide as
    its metrics make it (a language-gated task's nine: three pages); in long form the widest row is
    one name and a few figures, whatever the number of runs and metrics, so it fits a column."""
    width = 1 + len(figures)
    lines = [*comment, _SIZE, f"\\begin{{tabularx}}{{\\linewidth}}{{{_NAMES}{figures}@{{}}}}", r"\toprule"]
    # an empty cell of a wrapping column is an empty paragraph, which TeX reports as underfull
    lines += [" & ".join([head[0] or r"\mbox{}", *head[1:]]) + r" \\", r"\midrule"]
    for number, (heading, rows) in enumerate(groups):
        lines += [r"\addlinespace"] if number else []
        lines.append(f"\\multicolumn{{{width}}}{{{_HEADING}}}{{\\textit{{{heading}}}}} \\\\")
        lines += [" & ".join(row) + r" \\" for row in rows]
    return "\n".join([*lines, r"\bottomrule", r"\end{tabularx}\par}", ""])


def run_heading(label: str, run: str) -> str:
    """A run as its group's heading: its label, with the run's name when the label is not it."""
    return latex_escape(run if label == run else f"{label} ({run})")


def runs_latex(metrics: Table, task: str, prompt_set: str | None = None) -> str:
    """One task's runs (on `prompt_set`, where given), each a group of its metrics: value,
    interval, and exact counts."""
    rows = metrics.where(task=task) if prompt_set is None else metrics.where(task=task, prompt_set=prompt_set)
    first = rows[0]
    level = int(round(100 * first["level"]))
    groups: list[Group] = []
    for run in dict.fromkeys(row["run"] for row in rows):
        mine = [row for row in rows if row["run"] == run]
        cells = [
            [latex_escape(r["title"]), points(r["value"]), interval(r), counts(r["correct"], r["total"])] for r in mine
        ]
        groups.append((run_heading(mine[0]["label"], run), cells))
    where = f", prompt set {prompt_set} ({first['prompt_set_size']} prompts)" if prompt_set is not None else ""
    comment = _header_comment(
        f"Task {task}{where}: accuracy in percent with {level} % {first['interval']} intervals from a cluster bootstrap "
        f"over prompts ({int(first['resamples'])} resamples); n: correct/total, exact.",
        plan.report_file("metrics.csv"),
    )
    return long_table("rrr", ["metric", r"\%", f"{level}\\,\\% CI", "$n$"], groups, comment)


def _comparison_group(row: dict[str, Any], titles: dict[tuple[str, str], str]) -> tuple[str, str]:
    """A comparison row's group heading and name: a comparison of two runs, then each metric (its
    title as run A's task gives it); a within-run difference (its sides `run:metric`), the two
    metrics as its `comparison` names them, then each run."""
    if ":" not in row["a"]:
        return latex_escape(row["comparison"]), latex_escape(titles.get((row["a"], row["metric"]), row["metric"]))
    run = row["a"].split(":", 1)[0]
    metrics = row["comparison"].removeprefix(f"{run}: ")
    return latex_escape(f"{metrics}, within each run"), breakable(latex_escape(run))


def breakable(name: str) -> str:
    """An escaped run name that may break after each underscore: a name such as
    `as_claimed_by_lm_eval` is one word to TeX, wider than the names' column of a two-column paper."""
    return name.replace(r"\_", r"\_\allowbreak{}")


def comparisons_latex(comparisons: Table, titles: dict[tuple[str, str], str], level: int) -> str:
    """The paired comparisons, each a group of its metrics: difference with its interval, P(A > B),
    and the most the substituted settings could move it (the clustered SE stays in the CSV: five
    figures and a name do not fit a column)."""
    groups: dict[str, list[list[str]]] = {}
    for row in comparisons.rows:
        heading, name = _comparison_group(row, titles)
        groups.setdefault(heading, []).append(
            [
                name,
                signed_points(row["value"]),
                signed_interval(row),
                share_a_greater(row),
                points(row["max_shift_from_substitutes"]),
            ]
        )
    head = ["", "A $-$ B", f"{level}\\,\\% CI", "$P(A{>}B)$", "shift"]
    comment = _header_comment(
        "Paired comparisons A - B in points; each resample draws the same prompts for both sides. "
        "P(A>B): share of resamples with A higher (tie: A = B in every one); shift: the most the "
        "prompts' substituted settings can move the difference (the clustered SEs are in comparisons.csv)."
        + (f" {len(comparisons.rows)} rows." if comparisons.rows else " No comparisons."),
        plan.report_file("comparisons.csv"),
    )
    return long_table("rrrr", head, list(groups.items()), comment)


_CLAIM_ORDER = ("prompt_level_strict_acc", "inst_level_strict_acc", "prompt_level_loose_acc", "inst_level_loose_acc")


def _figure(part: dict[str, Any] | None) -> list[str]:
    if not part:
        return ["--", ""]
    return [points(part["value"]), counts(part["correct"], part["total"])]


def claims_latex(run: str, claims: dict[str, Any], level: int) -> str:
    """An imported run's claims beside the audit, each metric a group: reported, recomputed from
    the harness's own verdicts, audited by the pinned grader, and audited - claimed with its
    paired interval."""
    names = sorted(claims["metrics"], key=lambda name: (_CLAIM_ORDER.index(name) if name in _CLAIM_ORDER else 99, name))
    groups: list[Group] = []
    for name in names:
        metric = claims["metrics"][name]
        difference = metric["audited_minus_claimed"]
        rows = [
            ["reported by the harness", "--" if metric["reported"] is None else points(metric["reported"]), "", ""],
            ["recomputed from its verdicts", *_figure(metric["recomputed_from_harness"]), ""],
            ["audited (pinned grader)", *_figure(metric["audited"]), ""],
            [
                "audited $-$ claimed",
                *(
                    [signed_points(difference["value"]), "", signed_interval(difference)]
                    if difference
                    else ["--", "", ""]
                ),
            ],
        ]
        groups.append((latex_escape(metric["title"]), rows))
    harness = claims["harness"]
    comment = _header_comment(
        f"Run {run}: claims of the {harness['format']} log ({harness['tool']['name']}, model {harness['model']}) "
        "beside the pinned grader's audit, in percent (audited - claimed in points); n: correct/total, exact. "
        f"Differing verdicts: {len(claims['disagreements'])}, listed in {plan.run_file(run, 'disagreements.csv')}.",
        plan.run_file(run, "claims.json"),
    )
    # the comment is a LaTeX comment: one line each, whatever the log's names hold
    head = ["", r"\%", "$n$", f"{level}\\,\\% CI"]
    return long_table("rrr", head, groups, [one_line(line) for line in comment])
