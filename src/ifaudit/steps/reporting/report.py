"""The report: one table of every metric with its interval, written as CSV and JSON, rendered as
Markdown from that same table, and plotted (PNG and SVG).

Inputs are the verified outputs of the DAG (summaries, statistics, comparisons, prompt audits,
canary verdicts), named by a plan the workflow passes; nothing is recomputed here but the
bounds of the disclosures, which are arithmetic on counts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ifaudit.io.canonical import all_or_nothing, atomic_write_bytes, write_json
from ifaudit.io.formats.escape import markdown, markdown_code, one_line
from ifaudit.steps.grading.canary import failure_reason
from ifaudit.steps.auditing.claims_report import claims_differences, claims_overview, claims_section, markdown_cell
from ifaudit.core.identity import GraderIdentity, GraderKind
from ifaudit.core.errors import InputError
from ifaudit.io.formats.table import Table
from ifaudit.steps.reporting.grader_text import grader_sentence, run_credit
from ifaudit.steps.reporting.leaderboard import (
    TOP,
    by_prompt_set,
    metric_titles,
    ranked,
    share_a_greater,
    shown_comparisons,
)
from ifaudit.steps.reporting.suspect_section import front_lines, suspect_section
from ifaudit.tasks.registry import get_task
from ifaudit.tasks.unicode_exposure import REFERENCE_UNICODE

_DIFFERENCE_FIELDS = ("value", "ci_low", "ci_high", "share_a_greater", "bootstrap_se", "clustered_se")

# How the tables below write free text (a label, a model or tool name, a published source): as
# inline Markdown for report.md (escape.markdown), as one printable line for the HTML pages, which
# escape every cell themselves.
Text = Callable[[object], str]


def _load(path: str | Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _identity(record: dict[str, Any] | None) -> GraderIdentity | None:
    return GraderIdentity.from_record(record) if record else None


def _grader_label(grader: GraderIdentity | None) -> str:
    if grader is None:
        return ""
    label = f"{grader.name}@{grader.version}"
    return label + (" (stand-in, not upstream)" if grader.kind is GraderKind.STAND_IN else "")


def metrics_table(plan: dict[str, Any]) -> Table:
    rows = []
    for run, spec in plan["runs"].items():
        summary, stats = _load(spec["summary"]), _load(spec["stats"])
        published = spec.get("published") or {}
        grader = _identity(summary["grader"])
        task = get_task(summary["task"])
        for metric in (spec.name for spec in task.metrics):  # the task's own order
            estimate, counts = stats["estimates"][metric], summary["metrics"][metric]
            rows.append(
                {
                    "run": run,
                    "label": summary["label"],
                    "task": summary["task"],
                    "prompt_set": spec["prompts"],
                    "prompt_set_size": summary["prompts"],
                    "grader": _grader_label(grader),
                    "grader_kind": grader.kind.value if grader else "",
                    "upstream": bool(grader and grader.upstream),
                    "counted": summary["counted"],
                    "metric": metric,
                    "headline": metric == task.headline_metric,  # the figure the benchmark is quoted by
                    "title": estimate["title"],
                    "value": estimate["value"],
                    "ci_low": estimate["ci_low"],
                    "ci_high": estimate["ci_high"],
                    "bootstrap_se": estimate["bootstrap_se"],
                    "clustered_se": estimate["clustered_se"],
                    "correct": counts["correct"],
                    "total": counts["total"],
                    "level": stats["settings"]["level"],
                    "interval": stats["settings"]["method"],
                    "resamples": stats["settings"]["resamples"],
                    "published": published.get(metric),
                }
            )
    return Table.of(rows)


def _max_shift(audit: dict[str, Any], summary: dict[str, Any]) -> dict[str, float]:
    """How far the substituted settings can move a score: each affected prompt (instruction)
    could go either way, so by at most its share of the total."""
    prompts = summary["prompts"]
    instructions = summary["metrics"]["inst_level_strict_acc"]["total"]
    affected_prompts = len({s["key"] for s in audit["substituted_settings"]})
    return {
        "prompt": affected_prompts / prompts if prompts else 0.0,
        "inst": len(audit["substituted_settings"]) / instructions if instructions else 0.0,
    }


def _shifts(plan: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per run; a run whose prompt set has no audit (a judged task: no checker settings) has none."""
    none = {"prompt": 0.0, "inst": 0.0}
    return {
        run: _max_shift(_load(plan["audits"][spec["prompts"]]), _load(spec["summary"]))
        if spec["prompts"] in plan["audits"]
        else none
        for run, spec in plan["runs"].items()
    }


def comparisons_table(plan: dict[str, Any]) -> Table:
    rows = []
    shifts = _shifts(plan)
    for comparison in plan["comparisons"]:
        a, b = comparison["a"], comparison["b"]
        levels = {spec.name: spec.level for spec in get_task(plan["runs"][a]["task"]).metrics}
        differences = _load(comparison["file"])["a_minus_b"]  # a JSON object: its keys sorted
        for metric in sorted(differences, key=list(levels).index):  # the task's own order
            diff, level = differences[metric], levels[metric]
            rows.append(
                {
                    "comparison": f"{a} − {b}",
                    "a": a,
                    "b": b,
                    "metric": metric,
                    **{key: diff[key] for key in _DIFFERENCE_FIELDS},
                    "max_shift_from_substitutes": shifts[a][level] + shifts[b][level],
                }
            )
    for run, spec in plan["runs"].items():
        stats = _load(spec["stats"])
        for diff in stats["within_run"]:
            title_a, title_b = (stats["estimates"][diff[side]]["title"] for side in ("a", "b"))
            rows.append(
                {
                    "comparison": f"{run}: {title_a} − {title_b}",
                    "a": f"{run}:{diff['a']}",
                    "b": f"{run}:{diff['b']}",
                    "metric": f"{diff['a']} − {diff['b']}",
                    **{key: diff[key] for key in _DIFFERENCE_FIELDS},
                    "max_shift_from_substitutes": None,
                }
            )
    return Table.of(rows, ["comparison", "a", "b", "metric", *_DIFFERENCE_FIELDS, "max_shift_from_substitutes"])


def breakdown_table(plan: dict[str, Any]) -> Table:
    return Table.of(
        {"run": run, **row} for run, spec in plan["runs"].items() for row in _load(spec["stats"])["breakdown"]
    )


def disclosures(plan: dict[str, Any]) -> dict[str, Any]:
    prompt_sets = {}
    for dataset, path in sorted(plan["audits"].items()):
        audit = _load(path)
        prompt_sets[dataset] = {key: audit[key] for key in ("substituted_settings", "text_contradicts_settings")}
        prompt_sets[dataset]["prompts_checked"] = audit["prompts"]
    shifts = _shifts(plan)
    verdicts = {task: _load(path) for task, path in sorted(plan["canaries"].items())}
    runs = {}
    for run, spec in plan["runs"].items():
        summary = _load(spec["summary"])
        runs[run] = {key: summary[key] for key in ("grader", "counted", "not_counted_because", "missing_prompts")}
        runs[run]["canary_passed"] = summary["canary"]["passed"]
        runs[run]["cut"] = summary.get("cut", {})
        runs[run]["suspect_responses"] = summary.get("suspect_responses")
        runs[run]["max_shift_from_substitutes"] = shifts[run]
        if "verdict_lists" in summary:
            runs[run]["verdict_lists"] = summary["verdict_lists"]
        # What graded it, as its task's canary recorded the grading environment, and the exposure
        # check its summary made (none for a judged run: the judge's verdicts read no character).
        environment = verdicts.get(spec["task"], {}).get("environment", {})
        runs[run]["python"] = environment.get("python")
        runs[run]["unicode"] = environment.get("unicodedata")
        runs[run]["exposure_check"] = summary.get("unicode")
    canaries = {task: {k: v for k, v in verdict.items() if k != "environment"} for task, verdict in verdicts.items()}
    return {"prompt_sets": prompt_sets, "runs": runs, "canaries": canaries}


def _exposure_phrase(unicode: str | None, checks: dict[str, dict[str, Any] | None], name: Text) -> str:
    """What the exposure check said of runs graded under Unicode `unicode` (`checks`: each run's
    record, None for a judged run)."""
    made = {run: check for run, check in checks.items() if check is not None}
    if not made:
        return "; judged verdicts, so no exposure check"
    reference = next(iter(made.values())).get("reference") or REFERENCE_UNICODE
    failed = [run for run, check in made.items() if not check.get("passed")]
    passed = [run for run in made if run not in failed]
    parts = []
    if passed:
        every = len(passed) == len(checks)  # a judged run beside them is not among them
        parts.append("passed for every run" if every else "passed for " + ", ".join(map(name, passed)))
    if failed:
        parts.append("FAILED for " + ", ".join(map(name, failed)) + " (not counted)")
    verdict = "; ".join(parts)
    if unicode == reference:
        return f", the reference database: the exposure check {verdict} (nothing there differs from the reference)"
    return (
        f", not the reference {reference}: the exposure check (no prompt or response may hold a code point whose "
        f"properties differ from {reference}'s) {verdict}"
    )


def grading_environment(disclosed: dict[str, Any], name: Text) -> str:
    """Which Python and Unicode database graded the runs and the exposure check's verdict, as the
    runs recorded them (their tasks' canaries and their summaries): one sentence per environment,
    run names written by `name`."""
    groups: dict[tuple[str | None, str | None], list[str]] = {}
    for run, facts in disclosed["runs"].items():
        groups.setdefault((facts.get("python"), facts.get("unicode")), []).append(run)
    sentences = []
    for (python, unicode), runs in groups.items():
        checks = {run: disclosed["runs"][run].get("exposure_check") for run in runs}
        graded = f"graded on Python {python or '(not recorded)'} with Unicode {unicode or '(not recorded)'}"
        who = f"{', '.join(map(name, runs))}: {graded}" if len(groups) > 1 else graded[0].upper() + graded[1:]
        sentences.append(who + _exposure_phrase(unicode, checks, name) + ".")
    return " ".join(sentences)


def _points(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.2f}"


def _with_interval(row: dict[str, Any]) -> str:
    return f"{_points(row['value'])} [{_points(row['ci_low'])}, {_points(row['ci_high'])}]"


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = [
        "| " + " | ".join(markdown_cell(cell) for cell in header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(markdown_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


FINAL_ACC = ("prompt_level_strict_acc", "inst_level_strict_acc", "prompt_level_loose_acc", "inst_level_loose_acc")


def final_acc(run_rows: Sequence[dict[str, Any]]) -> float | None:
    """inspect's `final_acc` for IFEval: the plain mean of the four metrics (None without them)."""
    values = {row["metric"]: row["value"] for row in run_rows}
    return sum(float(values[name]) for name in FINAL_ACC) / 4 if set(FINAL_ACC) <= set(values) else None


def _with_se(row: dict[str, Any]) -> str:
    return f"{_with_interval(row)} (SE {_points(row['clustered_se'])})"


# A table of one task's runs on one prompt set: the task, the prompt set (prompt_set_label's), the
# header and the rows.
TaskTable = tuple[str, str, list[str], list[list[str]]]
FINAL_ACC_TITLE = "mean of the four (inspect's final_acc)"


def runs_tables(metrics: Table, text: Text) -> list[TaskTable]:
    """Per task and prompt set: one row per run (each metric with its interval and clustered SE,
    and inspect's final_acc where the task has IFEval's four metrics); free text written by `text`."""
    tables = []
    for (task, prompt_set), task_rows in by_prompt_set(metrics.rows).items():
        titles = list(dict.fromkeys(row["title"] for row in task_rows))
        runs = list(dict.fromkeys(row["run"] for row in task_rows))
        with_final = final_acc([row for row in task_rows if row["run"] == runs[0]]) is not None
        rows = []
        for run in runs:
            group = [row for row in task_rows if row["run"] == run]
            by_title = {row["title"]: row for row in group}
            first = group[0]
            rows.append(
                [text(f"{first['label']} ({run})"), text(prompt_set), "yes" if first["counted"] else "NO"]
                + [text(_short_commit(first["grader"]))]
                + [_with_se(by_title[title]) for title in titles]
                + ([_points(final_acc(group))] if with_final else [])
            )
        header = ["run", "prompt set", "counted", "grader", *titles] + ([FINAL_ACC_TITLE] if with_final else [])
        tables.append((task, prompt_set, header, rows))
    return tables


def leaderboard_tables(metrics: Table, level: int, text: Text) -> list[TaskTable]:
    """Per task and prompt set: one row per run ranked by the task's headline metric (with its
    interval, and the published figure beside it where the config gives one), the other metrics'
    values, and inspect's final_acc where the task has IFEval's four metrics; free text written
    by `text`."""
    tables = []
    for board in ranked(metrics):
        others = [name for name in board.titles if name != board.primary]
        with_final = set(FINAL_ACC) <= set(board.titles)
        header = [
            "#",
            "run",
            "prompt set",
            "counted",
            f"{board.titles[board.primary]} [{level} % CI]",
            "published",
            *(board.titles[name] for name in others),
        ] + ([FINAL_ACC_TITLE] if with_final else [])
        rows, ranks = [], board.ranks()
        for run, by_metric in board.runs:
            first = by_metric[board.primary]
            rows.append(
                [
                    str(ranks[run]),
                    text(_run_cell(first, run)),
                    text(board.prompt_set),
                    "yes" if first["counted"] else "NO",
                    _with_interval(first),
                ]
                + [_published_cell(first)]
                + [_points(by_metric[name]["value"]) if name in by_metric else "" for name in others]
                + ([_points(final_acc(list(by_metric.values())))] if with_final else [])
            )
        tables.append((board.task, board.prompt_set, header, rows))
    return tables


def _run_cell(row: dict[str, Any], run: str) -> str:
    return run if row["label"] == run else f"{row['label']} ({run})"


def _published_cell(row: dict[str, Any]) -> str:
    """The published figure in points; marked when it lies outside our interval."""
    paper = row["published"]
    if paper is None:
        return "—"
    inside = row["ci_low"] <= paper <= row["ci_high"]
    return f"{100 * paper:.2f}" + ("" if inside else " (outside our CI)")


def table_heading(task: str, prompt_set: str) -> str:
    """A table's heading in report.md: its task and prompt set."""
    return f"Task `{task}`, prompt set {markdown(prompt_set)}:"


def _leaderboard_section(metrics: Table, level: int, top: int = TOP) -> list[str]:
    out = [
        "## Leaderboard",
        "",
        "Runs ranked by each task's headline metric (the figure the benchmark is quoted by: for IFEval "
        f"prompt-level strict accuracy, for IFBench prompt-level loose), with its {level} % interval and the "
        "published figure where the config gives one; the other metrics' values beside. Runs of different "
        "prompt sets (data versions, languages) are never ranked in one table. Per-run detail (every metric "
        "with its interval and SE, the grader) follows.",
        "",
    ]
    tables = leaderboard_tables(metrics, level, markdown)
    for board, (task, prompt_set, header, rows) in zip(ranked(metrics), tables):
        out += [table_heading(task, prompt_set), "", _markdown_table(header, rows[:top]), ""]
        out += [f"The first {top} by rank; {board.rest(top)}. {EVERY_RUN}", ""] if board.rest(top) else []
    return out + ["![Every run's headline metric with its interval](plots/leaderboard.png)", ""]


# Where a report cut at `top` runs sends its reader for every run.
EVERY_RUN = "Every run: [html/runs.html](html/runs.html) (the HTML report's *1. Results*) and `metrics.csv`."


def _short_commit(grader: str) -> str:
    """A grader label with its commit cut to 12 hex digits for the tables (the full one is in
    metrics.csv and every run's manifest): the column stays narrow enough for the scores beside it."""
    return re.sub(r"@([0-9a-f]{12})[0-9a-f]{28}\b", r"@\1", grader)


def _runs_section(metrics: Table, top: int = TOP) -> list[str]:
    runs = len({row["run"] for row in metrics.rows})
    if runs > top:
        return [f"{runs:,} runs: more than the {top} a table here shows. {EVERY_RUN}", ""]
    out = []
    for task, prompt_set, header, rows in runs_tables(metrics, markdown):
        out += [table_heading(task, prompt_set), "", _markdown_table(header, rows), ""]
    return out


def published_tables(
    plan: dict[str, Any], metrics: Table, level: int, text: Text
) -> list[tuple[str, str, list[str], list[list[str]], str]]:
    """Per run with published figures: its run name, source, header, rows, and the source's note
    (the config's free text, written by `text`)."""
    tables = []
    for run, spec in plan["runs"].items():
        published = spec.get("published")
        if not published:
            continue
        committed = (_load(spec["summary"]).get("published_verdicts") or {}).get("metrics", {})
        rows = []
        for row in metrics.where(run=run):
            paper = published.get(row["metric"])
            if paper is None:
                continue
            step = published.get("rounded_to") or written_step(paper)
            rows.append(
                [
                    row["title"],
                    _with_interval(row),
                    f"{100 * paper:.2f}",
                    f"{100 * (row['value'] - paper):+.2f}",
                    f"{row['correct']} / {row['total']} vs {paper * row['total']:.0f} / {row['total']}",
                    "yes" if row["ci_low"] <= paper <= row["ci_high"] else "no",
                    what_it_fits(paper, step, row, committed.get(row["metric"])),
                ]
            )
        header = [
            "metric",
            f"ours [{level} % CI]",
            "published",
            "ours − published (points)",
            "counts (ours vs published)",
            "published inside our CI",
            "what the published figure fits (rounded to its step)",
        ]
        note = published.get("note")
        tables.append((run, f"published in {text(published['source'])}.", header, rows, text(note) if note else ""))
    return tables


def written_step(figure: float) -> float:
    """The rounding step a figure's written decimals show (0.878 -> 0.001), where the config gives none."""
    written = repr(float(figure))
    return 10.0 ** -len(written.split(".", 1)[1]) if "." in written and "e" not in written else 1e-12


def _fits(paper: float, step: float, counts: dict[str, Any]) -> bool:
    """Whether k/n, rounded to `step`, is the published figure (counts of one sample per prompt or a
    fraction string alike: the value is what is rounded)."""
    return round(counts["value"] / step) == round(paper / step)


def what_it_fits(paper: float, step: float, ours: dict[str, Any], committed: dict[str, Any] | None) -> str:
    """`fits the committed verdicts (303/345) and our regrade of the committed responses (303/345)`,
    one of them with the other's figure, or `fits neither`; the step in points."""
    mine = f"our regrade of the {'committed ' if committed is not None else ''}responses ({ours['correct']}/{ours['total']})"
    theirs = f"the committed verdicts ({committed['correct']}/{committed['total']})" if committed is not None else None
    rounding = f", rounded to {100 * step:g} points"
    fits_ours = _fits(paper, step, ours)
    if theirs is None:
        return ("fits " if fits_ours else "does not fit ") + mine + rounding
    fits_theirs = _fits(paper, step, committed)  # type: ignore[arg-type]
    if fits_ours and fits_theirs:
        return f"fits {theirs} and {mine}{rounding}"
    if fits_theirs or fits_ours:
        found, other = (theirs, mine) if fits_theirs else (mine, theirs)
        return f"fits {found}, not {other}{rounding}"
    return f"fits neither {theirs} nor {mine}{rounding}"


def _published_section(plan: dict[str, Any], metrics: Table, level: int) -> list[str]:
    out = []
    for run, source, header, rows, note in published_tables(plan, metrics, level, markdown):
        out += [f"**{run}**: {source}", "", _markdown_table(header, rows), ""] + ([note, ""] if note else [])
    return ["## Ours beside the published figures", "", *out] if out else []


def _cut_sentence(cut: dict[str, int | None]) -> str:
    """How many responses lost their reasoning before grading, and how many the server cut short."""
    parts = []
    if cut.get("thinking"):
        parts.append(
            f"{cut['thinking']} responses had reasoning cut before grading (text after the last closing "
            "thinking tag graded)"
        )
    if cut.get("length_limit") is not None:
        parts.append(f"{cut['length_limit']} responses hit the length limit (as their log or generation store says)")
    return (" " + "; ".join(parts) + ".") if parts else ""


def _verdict_list_sentence(counts: dict[str, int] | None) -> str:
    """Judged runs: verdict lists shorter than the question lists (the reference's early stop)."""
    if not counts:
        return ""
    sentence = f" Judge verdicts: {counts['verdicts_written']} of {counts['questions']} questions, {counts['unparsed']} unparsed"
    if counts["short_lists"]:
        sentence += (
            f"; {counts['short_lists']} verdict lists stop early, leaving {counts['unasked']} questions "
            "unasked: *DRFR as the reference computes it* counts only the verdicts written, *DRFR* "
            "counts unasked and unparsed questions as not satisfied"
        )
    return sentence + "."


def _disclosures_section(plan: dict[str, Any], disclosed: dict[str, Any]) -> list[str]:
    out = ["## Disclosures", ""]
    for run, facts in disclosed["runs"].items():
        out.append(
            f"- **{run}**: graded by {grader_sentence(run_credit(plan['runs'][run]['task'], facts['grader']))}; "
            f"canary {'passed' if facts['canary_passed'] else 'FAILED'}; "
            + (
                "counted."
                if facts["counted"]
                else "NOT COUNTED: " + markdown("; ".join(facts["not_counted_because"])) + "."
            )
            + (
                f" {len(facts['missing_prompts'])} prompts had no response and count as failed."
                if facts["missing_prompts"]
                else ""
            )
            + _cut_sentence(facts["cut"])
            + _verdict_list_sentence(facts.get("verdict_lists"))
        )
    for dataset, facts in disclosed["prompt_sets"].items():
        for item in facts["substituted_settings"]:
            out.append(
                f"- Prompt set `{dataset}`, prompt {item['key']}: `{item['instruction_id']}` is given "
                f"{item['setting']} = {item['given']!r} but the grader checks {item['used']!r} instead "
                "(a value it draws itself; fixed by our seeding, still not what the prompt asks)."
            )
        if facts["substituted_settings"]:
            for run in (run for run, spec in plan["runs"].items() if spec["prompts"] == dataset):
                shift = disclosed["runs"][run]["max_shift_from_substitutes"]
                out.append(
                    f"  - These can move `{run}`'s prompt-level scores by at most {_points(shift['prompt'])} "
                    f"points and its instruction-level scores by at most {_points(shift['inst'])}; "
                    "a comparison between two runs by at most the sum of both."
                )
        for item in facts["text_contradicts_settings"]:
            out.append(
                f'- Prompt set `{dataset}`, prompt {item["key"]}: the text says "{item["text"]}" but '
                f"`{item['instruction_id']}` holds {item['setting']}; responses are graded against "
                f"{item['setting']}."
            )
        if not facts["text_contradicts_settings"]:
            out.append(
                f"- Prompt set `{dataset}`: every placeholder count stated in a prompt's text matches "
                f"its setting ({facts['prompts_checked']} prompts checked)."
            )
    for task, verdict in disclosed["canaries"].items():
        out.append(
            f"- Canary `{task}`: {verdict['items']} fixed responses regraded in this environment, "
            + ("all agree." if verdict["passed"] else f"{failure_reason(verdict)}.")
            + _sentinel_note(verdict)
        )
    return out + [""]


def _sentinel_note(verdict: dict[str, Any]) -> str:
    """The canary's environment sentinels (docs/environment_sensitivity.md): which flipped, if any."""
    if verdict.get("sentinels_flipped"):
        return " Environment sentinels flipped: " + ", ".join(f"`{n}`" for n in verdict["sentinels_flipped"]) + "."
    return f" {verdict['sentinels']} environment sentinels hold." if verdict.get("sentinels") else ""


def comparisons_rows(
    comparisons: Table, level: int, titles: dict[tuple[str, str], str]
) -> tuple[list[str], list[list[str]]]:
    """One row per difference; a metric named by its title (a within-run row's comparison is)."""
    header = [
        "comparison",
        "metric",
        f"difference [{level} % CI]",
        "P(A > B)",
        "clustered SE",
        "max shift from substituted settings",
    ]
    return header, [
        [
            r["comparison"],
            titles.get((r["a"], r["metric"]), "") if ":" not in r["a"] else "",
            _with_interval(r),
            share_a_greater(r),
            _points(r["clustered_se"]),
            _points(r["max_shift_from_substitutes"]),
        ]
        for r in comparisons.rows
    ]


def _comparisons_section(metrics: Table, comparisons: Table, level: int, top: int) -> list[str]:
    """The comparisons table; of a cut leaderboard, those between the runs it shows."""
    shown = shown_comparisons(metrics, comparisons, top)
    out = [_markdown_table(*comparisons_rows(shown, level, metric_titles(metrics))), ""]
    if len(shown.rows) == len(comparisons.rows):
        return out
    every = "Every comparison: [html/comparisons.html](html/comparisons.html) and `comparisons.csv`."
    cut = f"{len(shown.rows):,} of {len(comparisons.rows):,} differences: those between the runs the leaderboard shows."
    return [cut, "", *out, every, ""]


def render_markdown(
    plan: dict[str, Any], metrics: Table, comparisons: Table, disclosed: dict[str, Any], top: int = TOP
) -> str:
    """report.md; a leaderboard of more than `top` runs is cut there (every run is in runs.html)."""
    first = metrics.rows[0]
    level = int(round(100 * first["level"]))
    out = [
        "# ifaudit report",
        "",
        f"Accuracies in percent with {level} % {first['interval']} intervals from a cluster bootstrap over "
        f"prompts ({int(first['resamples']):,} resamples; a prompt's samples are averaged first). Every "
        "number below is read from `metrics.csv` / `comparisons.csv` beside this file.",
        "",
        grading_environment(disclosed, markdown_code),
        "",
        *suspect_section(disclosed["runs"]),
        *_leaderboard_section(metrics, level, top),
        *claims_section(plan, level),
        "## Runs",
        "",
        *_runs_section(metrics, top),
        f"![Accuracy with {level} % intervals](plots/accuracy.png)",
        "",
        *_published_section(plan, metrics, level),
        "## Paired comparisons",
        "",
        "Differences in points; each resample draws the same prompts for both sides. `P(A > B)` is the share "
        "of resamples in which the first side scores higher.",
        "",
        *_comparisons_section(metrics, comparisons, level, top),
        "![Paired differences](plots/differences.png)",
        "",
        *_disclosures_section(plan, disclosed),
        "## Per instruction type",
        "",
        "Strict accuracy per instruction type with Wilson intervals (full table: `breakdown.csv`).",
        "",
    ]
    if len(plan["runs"]) > top:
        return "\n".join([*out, f"One plot a run: `plots/breakdown/<run>.png` ({len(plan['runs']):,} plots).", ""])
    for run in plan["runs"]:
        out += [f"![{run}: per instruction type](plots/breakdown/{run}.png)", ""]
    return "\n".join(out)


def in_run_order(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan with its runs, and its imported runs' claims, in the order it records (the
    config's). The plan travels as JSON with sorted keys (tables.json, a bundle), so the order is
    a list of its own; a plan without one keeps the order it came in."""
    order = plan.get("order", list(plan["runs"]))
    if sorted(order) != sorted(plan["runs"]):
        raise InputError("the report plan's `order` does not name exactly its runs", field="order")
    claims = plan.get("claims", {})
    if not set(claims) <= set(order):
        raise InputError("the report plan's `claims` name a run it does not have", field="claims")
    in_order = {run: plan["runs"][run] for run in order}
    return {**plan, "order": order, "runs": in_order, "claims": {run: claims[run] for run in order if run in claims}}


def write_report(plan: dict[str, Any], out_dir: Path, top: int = TOP) -> None:
    """The report's tables, plots, report.md and HTML pages; a leaderboard of more than `top` runs
    shows its first `top` in report.md, on the first page and in the plots."""
    from ifaudit.steps.reporting.plots import plot_accuracy, plot_breakdown, plot_differences, plot_leaderboard
    from ifaudit.steps.reporting.paper import write_paper

    plan = in_run_order(plan)
    metrics, comparisons, breakdown = metrics_table(plan), comparisons_table(plan), breakdown_table(plan)
    disclosed = disclosures(plan)
    with all_or_nothing():  # the tables, plots and report.md belong together
        for name, table in (("metrics", metrics), ("comparisons", comparisons), ("breakdown", breakdown)):
            atomic_write_bytes(out_dir / f"{name}.csv", table.csv_bytes())
        write_json(
            out_dir / "tables.json",
            {
                "metrics": metrics.records(),
                "comparisons": comparisons.records(),
                "disclosures": disclosed,
                "plan": plan,  # what the tables were made from, so a bundle's verify can make them again
            },
        )
        plots = out_dir / "plots"
        plot_leaderboard(metrics, plots / "leaderboard", top)
        plot_accuracy(metrics, plots / "accuracy", top)
        plot_differences(shown_comparisons(metrics, comparisons, top), metric_titles(metrics), plots / "differences")
        by_run: dict[str, list[dict[str, Any]]] = {run: [] for run in plan["runs"]}
        for row in breakdown.rows:  # one pass: `where` per run walks every run's rows (quadratic)
            by_run[row["run"]].append(row)
        for run, rows in by_run.items():
            plot_breakdown(rows, run, plots / "breakdown" / run)
        atomic_write_bytes(
            out_dir / "report.md", render_markdown(plan, metrics, comparisons, disclosed, top).encode("utf-8")
        )
        write_html_tables(plan, metrics, comparisons, out_dir / "html", top)
        write_paper(plan, metrics, comparisons, out_dir)  # results/paper/: LaTeX tables, artifact text


def write_html_tables(plan: dict[str, Any], metrics: Table, comparisons: Table, folder: Path, top: int = TOP) -> None:
    """The tables of Snakemake's HTML report (which shows HTML items, not CSV, as tables): the
    leaderboard with the runs' detail, ours beside the published figures, the paired comparisons;
    and for the report's first page the leaderboard, the claims and the comparisons."""
    from ifaudit.steps.reporting.report_html import (
        claims_html,
        comparisons_html,
        leaderboard_html,
        overview_fragment,
        page,
        published_html,
        runs_html,
    )

    first = metrics.rows[0]
    level = int(round(100 * first["level"]))
    intro = (
        f"Accuracies in percent with {level} % {first['interval']} intervals from a cluster "
        f"bootstrap over prompts ({int(first['resamples']):,} resamples); SE is the analytic "
        f"clustered standard error. {grading_environment(disclosures(plan), str)}"
    )
    tables, titles = leaderboard_tables(metrics, level, one_line), metric_titles(metrics)
    parts = {
        "runs": leaderboard_html(tables) + runs_html(runs_tables(metrics, one_line)),
        "published": published_html(published_tables(plan, metrics, level, one_line)),
        "comparisons": comparisons_html(*comparisons_rows(comparisons, level, titles)),
    }
    for name, body in parts.items():
        atomic_write_bytes(folder / f"{name}.html", page(name, intro, body).encode("utf-8"))
    # The first page reads at 100 runs: the leaderboard, the imported runs' claims, the comparisons;
    # the per-run detail (every metric with its SE, the grader, the published figures) is on the
    # pages of "1. Results".
    cut = [(task, prompt_set, header, rows[:top]) for task, prompt_set, header, rows in tables]
    rests = [
        f"The first {top} by rank; {rest}. Every run: runs.html under 1. Results." if (rest := board.rest(top)) else ""
        for board in ranked(metrics)
    ]
    shown = shown_comparisons(metrics, comparisons, top)
    front = {
        "leaderboard": leaderboard_html(cut, rests),
        "claims": claims_html(*claims_overview(plan, level, one_line)),
        "comparisons": comparisons_html(*comparisons_rows(shown, level, titles))
        + (
            f"<p>{len(shown.rows):,} of {len(comparisons.rows):,} differences: those between the runs the "
            "leaderboard shows. Every comparison: comparisons.html under 1. Results.</p>"
            if len(shown.rows) < len(comparisons.rows)
            else ""
        ),
    }
    overview = overview_fragment(intro, front, claims_differences(plan), front_lines(disclosures(plan)["runs"]))
    atomic_write_bytes(folder / "overview.html", overview.encode("utf-8"))
