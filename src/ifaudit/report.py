"""The report: one table of every metric with its interval, written as CSV and JSON, rendered as
Markdown from that same table, and plotted (PNG and SVG).

Inputs are the verified outputs of the DAG (summaries, statistics, comparisons, prompt audits,
canary verdicts), named by a plan the workflow writes; nothing is recomputed here but the
bounds of the disclosures, which are arithmetic on counts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ifaudit.canonical import atomic_write_bytes, write_json
from ifaudit.metrics import METRIC_TITLES

METRICS = list(METRIC_TITLES)


def _load(path: str | Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def metrics_table(plan: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for run, spec in plan["runs"].items():
        summary, stats = _load(spec["summary"]), _load(spec["stats"])
        published = spec.get("published") or {}
        for metric in METRICS:
            estimate, counts = stats["estimates"][metric], summary["metrics"][metric]
            rows.append({
                "run": run, "label": summary["label"], "task": summary["task"],
                "grader": f"{summary['grader']['name']}@{summary['grader']['version']}" if summary["grader"] else "",
                "upstream": bool(summary["grader"] and summary["grader"]["upstream"]),
                "counted": summary["counted"], "metric": metric, "value": estimate["value"],
                "ci_low": estimate["ci_low"], "ci_high": estimate["ci_high"],
                "bootstrap_se": estimate["bootstrap_se"], "clustered_se": estimate["clustered_se"],
                "correct": counts["correct"], "total": counts["total"],
                "level": stats["settings"]["level"], "interval": stats["settings"]["method"],
                "resamples": stats["settings"]["resamples"], "published": published.get(metric),
            })
    return pd.DataFrame(rows)


def _max_shift(audit: dict[str, Any], prompts: int, instructions: int) -> dict[str, float]:
    """How far the substituted settings can move a score: each affected prompt (instruction)
    could go either way, so by at most its share of the total."""
    affected_prompts = len({s["key"] for s in audit["substituted_settings"]})
    affected_instructions = len(audit["substituted_settings"])
    return {"prompt": affected_prompts / prompts if prompts else 0.0,
            "inst": affected_instructions / instructions if instructions else 0.0}


def _shift_for(metric: str, shift: dict[str, float]) -> float:
    return shift["prompt"] if metric.startswith("prompt") else shift["inst"]


def comparisons_table(plan: dict[str, Any], metrics: pd.DataFrame) -> pd.DataFrame:
    rows = []
    totals = metrics.set_index(["run", "metric"])["total"]

    def shift(run: str) -> dict[str, float]:
        audit = _load(plan["audits"][plan["runs"][run]["prompts"]])
        return _max_shift(audit, int(totals[run, "prompt_level_strict_acc"]), int(totals[run, "inst_level_strict_acc"]))

    for comparison in plan["comparisons"]:
        a, b = comparison["a"], comparison["b"]
        result = _load(comparison["file"])
        for metric, diff in result["a_minus_b"].items():
            bound = _shift_for(metric, shift(a)) + _shift_for(metric, shift(b))
            rows.append({"comparison": f"{a} − {b}", "a": a, "b": b, "metric": metric, **_diff_fields(diff),
                         "max_shift_from_substitutes": bound})
    for run, spec in plan["runs"].items():
        for level, diff in _load(spec["stats"])["loose_minus_strict"].items():
            rows.append({"comparison": f"{run}: loose − strict", "a": f"{run} (loose)", "b": f"{run} (strict)",
                         "metric": f"{level}_level_loose_minus_strict", **_diff_fields(diff),
                         "max_shift_from_substitutes": None})
    columns = ["comparison", "a", "b", "metric", "value", "ci_low", "ci_high", "share_a_greater", "bootstrap_se",
               "clustered_se", "max_shift_from_substitutes"]
    return pd.DataFrame(rows, columns=columns)


def _diff_fields(diff: dict[str, Any]) -> dict[str, Any]:
    return {key: diff[key] for key in ("value", "ci_low", "ci_high", "share_a_greater", "bootstrap_se", "clustered_se")}


def breakdown_table(plan: dict[str, Any]) -> pd.DataFrame:
    rows = [{"run": run, **row} for run, spec in plan["runs"].items() for row in _load(spec["stats"])["breakdown"]]
    return pd.DataFrame(rows)


def disclosures(plan: dict[str, Any], metrics: pd.DataFrame) -> dict[str, Any]:
    totals = metrics.set_index(["run", "metric"])["total"]
    prompt_sets = {}
    for dataset, path in sorted(plan["audits"].items()):
        audit = _load(path)
        prompt_sets[dataset] = {
            "substituted_settings": audit["substituted_settings"],
            "text_contradicts_settings": audit["text_contradicts_settings"],
            "prompts_checked": audit["prompts"],
        }
    runs = {}
    for run, spec in plan["runs"].items():
        summary = _load(spec["summary"])
        audit = _load(plan["audits"][spec["prompts"]])
        runs[run] = {
            "grader": summary["grader"],
            "counted": summary["counted"],
            "not_counted_because": summary["not_counted_because"],
            "canary_passed": summary["canary"]["passed"],
            "missing_prompts": summary["missing_prompts"],
            "max_shift_from_substitutes": _max_shift(audit, int(totals[run, "prompt_level_strict_acc"]),
                                                     int(totals[run, "inst_level_strict_acc"])),
        }
    canaries = {task: {k: v for k, v in _load(path).items() if k != "environment"}
                for task, path in sorted(plan["canaries"].items())}
    return {"prompt_sets": prompt_sets, "runs": runs, "canaries": canaries}


def _points(value: float | None) -> str:
    return "" if value is None or pd.isna(value) else f"{100 * value:.2f}"


def _with_interval(row: pd.Series) -> str:
    return f"{_points(row['value'])} [{_points(row['ci_low'])}, {_points(row['ci_high'])}]"


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(plan: dict[str, Any], metrics: pd.DataFrame, comparisons: pd.DataFrame,
                    breakdown: pd.DataFrame, disclosed: dict[str, Any]) -> str:
    level = int(round(100 * metrics["level"].iloc[0]))
    method = metrics["interval"].iloc[0]
    resamples = int(metrics["resamples"].iloc[0])
    out = [
        "# ifaudit report", "",
        f"Accuracies in percent with {level} % {method} intervals from a cluster bootstrap over prompts "
        f"({resamples:,} resamples; a prompt's samples are averaged first). Every number below is read from "
        "`metrics.csv` / `comparisons.csv` beside this file.", "",
        "## Runs", "",
    ]
    rows = []
    for run, group in metrics.groupby("run", sort=False):
        by_metric = group.set_index("metric")
        first = group.iloc[0]
        rows.append([f"{first['label']} (`{run}`)", "yes" if first["counted"] else "**NO**",
                     first["grader"] + ("" if first["upstream"] else " (stand-in, not upstream)")]
                    + [_with_interval(by_metric.loc[m]) for m in METRICS])
    out.append(_markdown_table(["run", "counted", "grader", *[METRIC_TITLES[m] for m in METRICS]], rows))
    out += ["", f"![Accuracy with {level} % intervals](plots/accuracy.png)", ""]

    published_runs = [run for run, spec in plan["runs"].items() if spec.get("published")]
    if published_runs:
        out += ["## Ours beside the published figures", ""]
        for run in published_runs:
            published = plan["runs"][run]["published"]
            by_metric = metrics[metrics["run"] == run].set_index("metric")
            rows = []
            for metric in METRICS:
                row = by_metric.loc[metric]
                paper = published.get(metric)
                if paper is None:
                    continue
                inside = row["ci_low"] <= paper <= row["ci_high"]
                rows.append([METRIC_TITLES[metric], _with_interval(row), f"{100 * paper:.2f}",
                             f"{100 * (row['value'] - paper):+.2f}",
                             f"{row['correct']:g} / {row['total']} vs {paper * row['total']:.0f} / {row['total']}",
                             "yes" if inside else "no"])
            out += [f"**{run}** — published in {published['source']}.", "",
                    _markdown_table(["metric", f"ours [{level} % CI]", "published", "ours − published (points)",
                                     "counts (ours vs published)", "published inside our CI"], rows), ""]
            if published.get("note"):
                out += [published["note"], ""]

    out += ["## Paired comparisons", "",
            "Differences in points; each resample draws the same prompts for both sides. `P(A > B)` is the share "
            "of resamples in which the first side scores higher.", ""]
    rows = [[r["comparison"], r["metric"], _with_interval(r), f"{r['share_a_greater']:.3f}",
             _points(r["max_shift_from_substitutes"])] for _, r in comparisons.iterrows()]
    out += [_markdown_table(["comparison", "metric", f"difference [{level} % CI]", "P(A > B)",
                             "max shift from substituted settings"], rows), "",
            "![Paired differences](plots/differences.png)", ""]

    out += ["## Disclosures", ""]
    for run, facts in disclosed["runs"].items():
        grader = facts["grader"] or {}
        source = ("the pinned upstream grader" if grader.get("upstream") else
                  f"the registry stand-in {grader.get('name')}=={grader.get('version')}, not the pinned upstream grader")
        out.append(f"- **{run}**: graded by {source}; canary {'passed' if facts['canary_passed'] else 'FAILED'}; "
                   + ("counted." if facts["counted"] else "NOT COUNTED: " + "; ".join(facts["not_counted_because"]) + ".")
                   + (f" {len(facts['missing_prompts'])} prompts had no response and count as failed."
                      if facts["missing_prompts"] else ""))
    for dataset, facts in disclosed["prompt_sets"].items():
        runs = [run for run, spec in plan["runs"].items() if spec["prompts"] == dataset]
        for item in facts["substituted_settings"]:
            out.append(f"- Prompt set `{dataset}`, prompt {item['key']}: `{item['instruction_id']}` is given "
                       f"{item['setting']} = {item['given']!r} but the grader checks {item['used']!r} instead "
                       "(a value it draws itself; fixed by our seeding, still not what the prompt asks).")
        if facts["substituted_settings"]:
            for run in runs:
                shift = disclosed["runs"][run]["max_shift_from_substitutes"]
                out.append(f"  - These can move `{run}`'s prompt-level scores by at most {_points(shift['prompt'])} "
                           f"points and its instruction-level scores by at most {_points(shift['inst'])}; "
                           "a comparison between two runs by at most the sum of both.")
        for item in facts["text_contradicts_settings"]:
            out.append(f"- Prompt set `{dataset}`, prompt {item['key']}: the text says \"{item['text']}\" but "
                       f"`{item['instruction_id']}` holds {item['setting']}; responses are graded against "
                       f"{item['setting']}.")
        if not facts["text_contradicts_settings"]:
            out.append(f"- Prompt set `{dataset}`: every placeholder count stated in a prompt's text matches "
                       f"its setting ({facts['prompts_checked']} prompts checked).")
    for task, verdict in disclosed["canaries"].items():
        out.append(f"- Canary `{task}`: {verdict['items']} fixed responses regraded in this environment, "
                   + ("all agree." if verdict["passed"] else f"{len(verdict['disagreements'])} disagreements."))
    out.append("")

    out += ["## Per instruction type", "",
            "Strict accuracy per instruction type with Wilson intervals (full table: `breakdown.csv`).", ""]
    for run in plan["runs"]:
        out += [f"![{run}: per instruction type](plots/breakdown_{run}.png)", ""]
    return "\n".join(out)


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain Python values at full precision, with empty cells as null."""
    return [{key: (None if isinstance(value, float) and pd.isna(value) else value) for key, value in row.items()}
            for row in table.astype(object).to_dict(orient="records")]


def write_report(plan: dict[str, Any], out_dir: Path) -> None:
    from ifaudit.plots import plot_accuracy, plot_breakdown, plot_differences

    metrics = metrics_table(plan)
    comparisons = comparisons_table(plan, metrics)
    breakdown = breakdown_table(plan)
    disclosed = disclosures(plan, metrics)
    for name, table in (("metrics", metrics), ("comparisons", comparisons), ("breakdown", breakdown)):
        atomic_write_bytes(out_dir / f"{name}.csv", table.to_csv(index=False, lineterminator="\n").encode())
    write_json(out_dir / "tables.json", {
        "metrics": _records(metrics), "comparisons": _records(comparisons), "disclosures": disclosed,
    })
    plots = out_dir / "plots"
    plot_accuracy(metrics, plots / "accuracy")
    plot_differences(comparisons, plots / "differences")
    for run in plan["runs"]:
        plot_breakdown(breakdown[breakdown["run"] == run], run, plots / f"breakdown_{run}")
    atomic_write_bytes(out_dir / "report.md",
                       render_markdown(plan, metrics, comparisons, breakdown, disclosed).encode("utf-8"))
