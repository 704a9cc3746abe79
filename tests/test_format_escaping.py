"""Free text (a run's label, a model name, a published source) reaches every output format as the
literal text, by that format's own rules (issue 37, "output formats carry labels raw"): Markdown
and HTML (no tag, link, image, code span or table pipe of the label's own), CSV (OWASP's rule
against formula cells, numbers left numbers), SVG (well-formed XML whatever the label holds),
LaTeX (compiles with plain pdflatex whatever Unicode the label holds), and the config check (a
label, or other free text, too long for a command line stops in one line naming the key).

The report is written by the report step itself (`write_report`) from real summaries and
statistics of 20 IFEval prompts each (test_report_leaderboard's runs).
"""

from __future__ import annotations

import csv
import html
import json
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from test_paper import compile_snippets
from test_report_leaderboard import _run
from test_run_plan import project_config

from ifaudit.core.errors import ConfigError
from ifaudit.io.formats.chart import Chart, Point, Series, layout, png, svg
from ifaudit.io.formats.table import Table
from ifaudit.steps.auditing.importing import DISAGREEMENT_COLUMNS, disagreements_csv
from ifaudit.steps.reporting.paper_latex import runs_latex
from ifaudit.steps.reporting.report import write_report

HOSTILE = (
    "<script>alert(1)</script> <img src=x onerror=alert(2)> [click](javascript:alert(3)) "
    "![x](http://evil.example/x.png) <http://evil.example> a|b `code` *em* _u_ ~s~ $m$ \\ &amp;\nsecond line"
)


def _report(tmp: Path, labels: dict[str, str], published: dict | None = None, comparisons: list | None = None) -> Path:
    """The report of one run per label (run name: label), written by the report step."""
    runs = {run: _run(tmp, run, label, 20 * index) for index, (run, label) in enumerate(labels.items())}
    if published:
        runs[next(iter(runs))]["published"] = published
    plan = {"runs": runs, "comparisons": comparisons or [], "audits": {}, "canaries": {}}
    write_report(plan, tmp / "report")
    return tmp / "report"


_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def test_markdown_escapes_hostile_label(tmp_path: Path) -> None:
    published = {"source": HOSTILE, "note": HOSTILE, "prompt_level_strict_acc": 0.5}
    report = _report(tmp_path, {"hostile": HOSTILE, "plain": "GPT-4 (plain, 2023)"}, published)
    literal = " ".join(HOSTILE.splitlines())
    for path in (report / "report.md", report / "paper" / "artifact.md"):
        text = path.read_text(encoding="utf-8")
        # Nothing of the label's is markup: no tag, entity, link, image, autolink or code span.
        for raw in ("<script", "<img", "<http", "](javascript", "](http", "`code`", "*em*", "_u_", "~s~", "$m$"):
            assert raw not in text, (path.name, raw)
        # Each table row keeps its header's cells, and the label's cell reads back as the label.
        lines = text.splitlines()
        for index, line in enumerate(lines):
            if line.startswith("|") and index + 1 < len(lines) and lines[index + 1].startswith("|---"):
                width = len(_UNESCAPED_PIPE.findall(line))
                for row in lines[index + 2 :]:
                    if not row.startswith("|"):
                        break
                    assert len(_UNESCAPED_PIPE.findall(row)) == width, (path.name, row)
        cells = [cell.strip() for line in lines if line.startswith("|") for cell in _UNESCAPED_PIPE.split(line)]
        shown = [html.unescape(cell) for cell in cells if "alert" in cell]
        assert shown and all(cell in (literal, f"{literal} (hostile)") for cell in shown), (path.name, shown)
        assert not any(re.search(r"[<>\[\]`*|~$\\]", cell) for cell in cells if "alert" in cell)
    # The published source and note are sentences of report.md, shown as their text too.
    text = (report / "report.md").read_text(encoding="utf-8")
    assert f"**hostile**: published in {literal}." == html.unescape(
        next(line for line in text.splitlines() if line.startswith("**hostile**: published in"))
    )
    # The HTML pages escape the same text once, as HTML.
    page = (report / "html" / "runs.html").read_text(encoding="utf-8")
    assert "<script" not in page and html.escape(literal) in page


def test_csv_neutralises_formula_cells(tmp_path: Path) -> None:
    formulas = {
        "eq": "=cmd|' /C calc'!A0",
        "plus": "+1+1",
        "minus": "-2+3",
        "at": "@SUM(A1:A9)",
        "tab": "\t=1+1",
        "cr": "\r=1+1",
    }
    difference = {"value": -0.05, "ci_low": -0.1, "ci_high": -0.01, "share_a_greater": 0.0}
    difference |= {"bootstrap_se": 0.02, "clustered_se": 0.02}
    compared = tmp_path / "eq-plus.json"
    compared.write_text(json.dumps({"a_minus_b": {"prompt_level_strict_acc": difference}}), encoding="utf-8")
    report = _report(tmp_path, formulas, comparisons=[{"a": "eq", "b": "plus", "file": str(compared)}])
    with (report / "metrics.csv").open(encoding="utf-8", newline="") as table:
        rows = list(csv.DictReader(table))
    # (a carriage return as a line break, which the csv module quotes on every Python: a bare one
    # it leaves unquoted before 3.13, splitting the row)
    assert {row["label"] for row in rows} == {f"'{label}".replace("\r", "\n") for label in formulas.values()}
    # Numbers stay numbers: a negative difference is written as the number it is, not as text.
    with (report / "comparisons.csv").open(encoding="utf-8", newline="") as table:
        first = next(csv.DictReader(table))
    assert (first["comparison"], first["value"], first["ci_low"]) == ("eq − plus", "-0.05", "-0.1")
    assert Table.of([{"name": "-x", "value": -0.5, "count": -3}]).csv_bytes() == b"name,value,count\n'-x,-0.5,-3\n"
    # The disagreements an import lists: a key that is a negative number stays one, text is neutralised.
    row = dict.fromkeys(DISAGREEMENT_COLUMNS, "") | {"key": -3, "sample": 0, "detail": '=HYPERLINK("http://x")'}
    written = list(csv.DictReader(disagreements_csv([row]).decode("utf-8").splitlines()))
    assert written[0]["key"] == "-3" and written[0]["detail"] == '\'=HYPERLINK("http://x")'


CONTROLS = "ctl \x00\x01\x08\x0b\x0c\x1b\x7f\x85 nl\nCR\rtab\t & < > \" ' \ufffe\uffff end"


def test_svg_is_well_formed_with_control_characters(tmp_path: Path) -> None:
    report = _report(tmp_path, {"controls": CONTROLS, "plain": "plain"})
    drawn = sorted((report / "plots").rglob("*.svg"))
    assert len(drawn) == 5  # leaderboard, accuracy, differences and a breakdown per run
    texts = []
    for path in drawn:
        root = ElementTree.fromstring(path.read_bytes())  # raises on any ill-formed byte
        texts += ["".join(element.itertext()) for element in root.iter("{http://www.w3.org/2000/svg}text")]
    shown = [text for text in texts if text.startswith("ctl ")]
    assert shown, "the label is drawn"
    for text in shown:  # one line, every control character visible, the markup characters as text
        assert "\\x00\\x01\\x08" in text and "\\x1b\\x7f" in text and "\\ufffe\\uffff" in text
        assert " nl CR tab " in text and " & < > \" ' " in text
    for path in (report / "plots").rglob("*.png"):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # A lone surrogate (which no UTF-8 file can hold) in a chart's text, e.g. from a log's model name.
    chart = Chart(
        title="runs \ud800",
        xlabel="accuracy",
        xlim=(0.0, 100.0),
        ylim=(-0.5, 0.5),
        yticks=((0.0, "model \udfff <b>"),),
        series=(Series("#1f77b4", (Point(0.0, 50.0, 40.0, 60.0, "50.0"),), "legend \ud83d"),),
        row_height=45,
    )
    drawing = layout(chart)
    root = ElementTree.fromstring(svg(drawing))
    assert root.find("{http://www.w3.org/2000/svg}title").text == "runs \\ud800"
    assert png(drawing)[:8] == b"\x89PNG\r\n\x1a\n"


UNICODE_LABELS = [
    "[draft] a label starting with a bracket",
    "🚀 emoji 😀",
    "模型 CJK 中文",
    "نموذج عربي",
    "Ελληνικά and Кириллица",
    "combining e\u0301 and a lone \u0301 mark",
    "Müller, ß, æ, ø, ł, ą, ı, ñ, ç, ő",
    "controls \x01\x1b\x7f tab\tline\nbreak",
    "noncharacters \ufffe\uffff and a lone \ud800",
    "specials \\ { } $ & # ^ _ % ~ < > | [ ]",
]


@pytest.mark.latex
def test_latex_table_compiles_with_any_unicode_label(tmp_path: Path) -> None:
    rows = []
    for index, label in enumerate(UNICODE_LABELS):
        row = {"run": f"r{index}", "label": label, "task": "ifeval", "title": "strict", "value": 0.5}
        rows.append(row | {"ci_low": 0.25, "ci_high": 0.75, "correct": 3, "total": 6, "level": 0.95})
        rows[-1] |= {"interval": "percentile", "resamples": 10}
    text = runs_latex(Table.of(rows), "ifeval")
    snippet = tmp_path / "runs.tex"
    snippet.write_bytes(text.encode("utf-8"))
    log = compile_snippets([snippet], tmp_path)
    assert "Output written on paper.pdf (1 page" in log
    assert text.isascii()  # whatever the document's encoding: pdflatex's fonts lack most of Unicode
    assert "{[}U+1F680{]}" in text and r"M\"{u}ller" in text and "\\textbackslash{}x1b" in text


def test_config_check_caps_label_length(tmp_path: Path) -> None:
    run = {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "gpt4_responses"}
    project_config({"runs": {"x": run | {"label": "L" * 200}}}, tmp_path)  # at the cap: fine
    huge = "L" * 300_000
    cases = [
        ({"label": huge}, "runs.x.label", 200),
        ({"published": {"source": huge}}, "runs.x.published.source", 500),
        ({"published": {"source": "a paper", "note": huge}}, "runs.x.published.note", 2000),
        ({"responses": None, "model": {"model": huge, "base_url": "http://127.0.0.1:9/v1"}}, "runs.x.model.model", 200),
    ]
    for extra, where, cap in cases:
        spec = {key: value for key, value in (run | extra).items() if value is not None}
        with pytest.raises(ConfigError) as raised:
            project_config({"runs": {"x": spec}}, tmp_path)
        line = str(raised.value)
        assert raised.value.where == where, line
        assert line == f"config: {where}: is 300,000 characters long, more than the {cap} allowed"
    # Any other refused value is quoted cut short: the line stays a line.
    with pytest.raises(ConfigError) as raised:
        project_config({"runs": {"x": run | {"task": huge}}}, tmp_path)
    assert raised.value.where == "runs.x.task" and len(str(raised.value)) < 400 and "\n" not in str(raised.value)
