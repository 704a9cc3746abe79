"""`results/paper/artifact.md`: the text an author pastes into a paper's artifact appendix.

What was audited (runs, tasks, prompt sets, prompts, responses), the figures with intervals and
exact counts (each task's headline first), which grader graded each run (its credit: the task's
own upstream grader, the commit its grades record, the pin file; ifaudit.tasks.credit), and the
one command a reader runs to verify the bundle. The root digest is not known when the report is
written (the bundle that holds the report is made after it), so the text names
where it comes from: `ifaudit bundle` prints it and writes it to `results/report.digest.md`.
A pure function of the summaries and the metrics table: no time stamps, no machine's paths.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ifaudit import __version__
from ifaudit.io.formats.escape import markdown
from ifaudit.io.formats.table import Table
from ifaudit.steps.auditing.claims_report import log_source
from ifaudit.steps.reporting.grader_text import grader_sentence, run_credit
from ifaudit.tasks.registry import get_task


def _figure(row: Mapping[str, Any]) -> str:
    correct, total = row["correct"], row["total"]
    count = f"{correct} of {total}" if "/" in str(correct) else f"{correct}/{total}"  # 1760/3 of 834
    return f"{100 * row['value']:.2f} [{100 * row['ci_low']:.2f}, {100 * row['ci_high']:.2f}] ({count})"


def _verdicts(count: int) -> str:
    return f"{count} verdict" + ("" if count == 1 else "s")


def _differing(count: int, listing: str) -> str:
    """The verdicts on which the harness differs from the grader, with the verb they take, and
    where they are listed (`listing`)."""
    if count == 0:
        return f"none of its verdicts differs from the grader's (`{listing}` lists none)"
    listed = "is listed with its cause" if count == 1 else "are listed with their causes"
    return f"the {_verdicts(count)} on which it differs from the grader {listed} in `{listing}`"


def render_artifact(summaries: Mapping[str, Mapping[str, Any]], metrics: Table, claims: Mapping[str, Any]) -> str:
    """The appendix text. `summaries`: each run's summary.json, in the report's run order;
    `claims`: the imported runs' claims.json by run."""
    first = metrics.rows[0]
    level = int(round(100 * first["level"]))
    out = [
        "# Artifact",
        "",
        f"Scores were audited with ifaudit {__version__}: every response graded twice, in separate processes "
        "with different hash seeds, and the two passes compared byte for byte; a fixed canary regraded in "
        "every grading process first.",
        "",
        "## What was audited",
        "",
        "| run | label | task | prompt set | prompts | responses | responses per prompt | counted |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run, summary in summaries.items():
        per_prompt = summary["samples_per_prompt"]
        spread = (
            str(per_prompt["min"])
            if per_prompt["min"] == per_prompt["max"]
            else f"{per_prompt['min']}-{per_prompt['max']}"
        )
        prompt_set = metrics.where(run=run)[0]["prompt_set"]
        out.append(
            f"| `{run}` | {markdown(summary['label'])} | `{summary['task']}` | `{prompt_set}` | {summary['prompts']} | "
            f"{summary['responses']} | {spread} | {'yes' if summary['counted'] else 'NO'} |"
        )
    out += [
        "",
        f"Figures in percent with {level} % {first['interval']} intervals from a cluster bootstrap over prompts "
        f"({int(first['resamples']):,} resamples), exact counts in parentheses:",
        "",
    ]
    for run, summary in summaries.items():
        headline = get_task(summary["task"]).headline_metric  # the figure the benchmark is quoted by, first
        rows = sorted(metrics.where(run=run), key=lambda row: row["metric"] != headline)
        out.append(f"- `{run}`: " + "; ".join(f"{row['title']} {_figure(row)}" for row in rows) + ".")
    out += ["", "## Grader", ""]
    by_grader: dict[str, list[str]] = {}  # runs by the sentence that credits their grader
    for run, summary in summaries.items():
        sentence = grader_sentence(run_credit(summary["task"], summary["grader"]), paper=True)
        by_grader.setdefault(sentence, []).append(run)
    for sentence, runs in by_grader.items():
        out.append(f"- {', '.join(f'`{run}`' for run in runs)}: graded by {sentence}.")
    for run, found in claims.items():
        out.append(
            f"- `{run}` was imported from the {log_source(found['harness'])}; its claims are set beside the audit in "
            f"`results/{run}/claims.json`; {_differing(len(found['disagreements']), f'results/{run}/disagreements.csv')}."
        )
    out += [
        "",
        "## Verifying",
        "",
        "The audit is archived as one file, `NAME.tar.gz`, made by `ifaudit bundle --out NAME`: source at its "
        "commit, configuration, lock file, the pinned grader files, NLTK data, datasets and every result. "
        "A reader checks every byte of it, regrades both passes of every run and recomputes every derived "
        "file with one command:",
        "",
        "```sh",
        "ifaudit verify-bundle NAME.tar.gz --expect ROOT_DIGEST",
        "```",
        "",
        "`ROOT_DIGEST` (`sha256:...`, the sha256 of the bundle's `CHECKSUMS.sha256`) is not known when this "
        "report is written: `ifaudit bundle` prints it on its last line and writes it to "
        "`results/report.digest.md` inside the bundle. Cite that value in the paper next to this text; "
        "without `--expect` the check shows only that the bundle agrees with itself, not that it is the "
        "one published.",
        "",
    ]
    return "\n".join(out)
