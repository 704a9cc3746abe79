"""HTML renderings of the report's tables, for Snakemake's HTML report.

Snakemake shows an HTML report item as a page (a CSV item only as a download), and its first
page is the workflow description (`workflow/report/workflow.rst`), which embeds the overview
fragment written here. The cells are the same strings as in `report.md`; nothing is recomputed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import re
from html import escape

_STYLE = (
    "table{border-collapse:collapse;margin:0.4em 0 1.2em}th,td{border:1px solid #ccc;padding:2px 8px;"
    "text-align:left;font-size:13px}th{background:#f2f2f2}td.num{white-space:nowrap}"
)

# The report's first page shows the description in a narrow column beside the job graph; this
# widens it and puts the graph below, so the results come first. Snakemake centres the page in its
# pane (justify-content/align-items: center), so a page wider than the pane overflows to the left,
# under the menu, where no scroll bar reaches: it starts at the pane's top left instead. A table
# wider than the pane scrolls inside its own box, so the page keeps the pane's width; a table longer
# than three quarters of the screen (a leaderboard of 100 runs) scrolls in it too, its header kept
# in sight, so the claims and comparisons below it are a screen away, not forty.
_FRONT_STYLE = (
    ".prose.max-w-lg{max-width:none!important}.grow.flex.items-start{flex-direction:column}"
    ".grow.flex.items-center.justify-center{justify-content:flex-start;align-items:flex-start;min-width:0}"
    ".grow.flex.items-start,.grow.flex.items-start>div{min-width:0;max-width:100%}"
    ".ifaudit-front .wide{overflow:auto;max-width:100%;max-height:75vh}.ifaudit-front td.num{white-space:nowrap}"
    ".ifaudit-front th{position:sticky;top:0}"
    ".ifaudit-front table{border-collapse:collapse;margin:0.4em 0 1.2em}"
    ".ifaudit-front th,.ifaudit-front td{border:1px solid #ccc;padding:2px 8px;text-align:left;font-size:13px;"
    "line-height:1.35}"
    ".ifaudit-front th{background:#f2f2f2}"
    ".ifaudit-front p.differs{background:#fff4d6;border-left:4px solid #d08700;padding:4px 8px}"
)

# A run's responses that may not be answers: highlighted as a difference of claims is.
_DOUBT_STYLE = ".ifaudit-front p.in-doubt{background:#fff4d6;border-left:4px solid #d08700;padding:4px 8px}"

_TITLES = {
    "leaderboard": "Leaderboard",
    "claims": "Claimed vs audited",
    "runs": "Runs",
    "published": "Ours beside the published figures",
    "comparisons": "Paired comparisons",
}


_FIGURE = re.compile(r"[-+−]?\d[\d.,/ \[\]()+−-]*(?:\(SE [\d.]+\))?")


def _cell(text: str) -> str:
    """A figure (a number, with its interval, counts or SE) is kept on one line; text wraps."""
    return f'<td class="num">{escape(text)}</td>' if _FIGURE.fullmatch(text) else f"<td>{escape(text)}</td>"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(cell)}</th>" for cell in header)
    body = "".join("<tr>" + "".join(_cell(str(cell)) for cell in row) + "</tr>" for row in rows)
    return f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


# A table of one task's runs on one prompt set (report.runs_tables, report.leaderboard_tables).
TaskTables = Sequence[tuple[str, str, list[str], list[list[str]]]]


def _heading(task: str, prompt_set: str, continued: bool = False) -> str:
    return f"<p>Task <code>{escape(task)}</code>, prompt set {escape(prompt_set)}{' (continued)' if continued else ''}:</p>"


def runs_html(tables: TaskTables) -> str:
    return "".join(_heading(task, prompt_set) + table(header, rows) for task, prompt_set, header, rows in tables)


# The most columns a leaderboard table shows beside the rank and the run: a task's leaderboard with
# more (a language-gated task: nine metrics) continues in a second table below the first, so each
# fits the first page's pane at 1280 px instead of scrolling out of sight.
_LEADERBOARD_COLUMNS = 7


def leaderboard_html(tables: TaskTables, rests: Sequence[str] = ()) -> str:
    """Each task's leaderboard per prompt set: its rank and run columns, then at most
    _LEADERBOARD_COLUMNS others per table, the rest in tables headed "(continued)"; under each, its
    line in `rests` (what a cut table's other runs span) if it has one."""
    out = []
    for (task, prompt_set, header, rows), note in zip(tables, [*rests, *[""] * (len(tables) - len(rests))]):
        rest = range(2, len(header))
        for start in range(0, max(len(rest), 1), _LEADERBOARD_COLUMNS):
            columns = [0, 1, *rest[start : start + _LEADERBOARD_COLUMNS]]
            shown = table([header[c] for c in columns], [[row[c] for c in columns] for row in rows])
            out.append(_heading(task, prompt_set, bool(start)) + shown)
        out += [f"<p>{escape(note)}</p>"] if note else []
    return "".join(out)


def published_html(tables: Sequence[tuple[str, str, list[str], list[list[str]], str]]) -> str:
    if not tables:
        return "<p>No run of this configuration has published figures.</p>"
    return "".join(
        f"<p><b>{escape(run)}</b>: {escape(source)}</p>{table(header, rows)}"
        + (f"<p>{escape(note)}</p>" if note else "")
        for run, source, header, rows, note in tables
    )


def claims_html(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The claims overview (claims_overview's columns), its run, log and model in one cell: three
    columns of their own would push the figures past the pane's edge at 1280 px."""
    if not rows:
        return "<p>No run of this configuration was imported from a harness's log.</p>"
    merged = [[f"{run} ({log} log, model {model})", *rest] for run, log, model, *rest in rows]
    return (
        "<p>Runs imported from a harness's log: the task's headline metric, and every metric on which the audit "
        "and the claim differ; every metric per run in <code>report.md</code>.</p>"
        + table(["run", *header[3:]], [[cell.replace("**", "") for cell in row] for row in merged])
    )


def comparisons_html(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    if not rows:
        return "<p>No paired comparisons.</p>"
    return (
        "<p>Differences in points; each resample draws the same prompts for both sides. P(A &gt; B) is "
        "the share of resamples in which the first side scores higher; a tie: the two sides are equal in "
        "every resample.</p>" + table(header, rows)
    )


def page(name: str, intro: str, body: str) -> str:
    """A stand-alone page (a report item)."""
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{escape(_TITLES[name])}</title>'
        f"<style>{_STYLE}</style></head><body><h2>{escape(_TITLES[name])}</h2><p>{escape(intro)}</p>"
        f"{body}</body></html>\n"
    )


# Runs named one by one in the first screen's block on responses that may not be answers; the
# others are counted there and named in report.md, so the block stays a few lines at 100 runs.
_IN_DOUBT_SHOWN = 5


def _in_doubt_block(lines: Sequence[str]) -> str:
    """One highlighted paragraph: what each of the first _IN_DOUBT_SHOWN runs holds, one line
    each, and how many more runs hold such responses."""
    if not lines:
        return ""
    shown = "".join(f"<br>{escape(line)}" for line in lines[:_IN_DOUBT_SHOWN])
    more = len(lines) - _IN_DOUBT_SHOWN
    rest = f"<br>… and {more} more runs with such responses." if more > 0 else ""
    return (
        '<p class="in-doubt"><b>Responses that may not be answers</b> — graded as they are, and the runs count; '
        "each text with its keys and grades in <code>report.md</code>, “Responses that may not be answers”."
        f"{shown}{rest}</p>"
    )


def overview_fragment(
    intro: str, parts: Mapping[str, str], differences: Sequence[str] = (), in_doubt: Sequence[str] = ()
) -> str:
    """The first page's results: the imported runs whose audit and claim differ, and the runs
    whose responses may not all be answers, one line each (before any table: the first screen
    shows them however long the leaderboard), then every part under its title, in the order given."""
    sections = "".join(f'<h2 id="ifaudit-{name}">{escape(_TITLES[name])}</h2>{body}' for name, body in parts.items())
    differ = "".join(
        f'<p class="differs"><b>Audited and claimed differ</b> — {escape(line)} '
        '<a href="#ifaudit-claims">Claimed vs audited</a></p>'
        for line in differences
    )
    doubt = _in_doubt_block(in_doubt)
    return f'<style>{_FRONT_STYLE}{_DOUBT_STYLE}</style><div class="ifaudit-front"><p>{escape(intro)}</p>{differ}{doubt}{sections}</div>\n'
