"""The report's tables (ifaudit.table) and plots (ifaudit.chart, ifaudit.plots): the bytes and
values the report has always written, SVG and PNG drawn without a plotting library, and the
report's process importing neither pandas nor matplotlib."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from conftest import REPO
from ifaudit.io.formats.chart import Chart, Point, Series, layout, png, svg, ticks
from ifaudit.io.formats.table import Table


def test_csv_cells_are_the_ones_the_report_has_always_written() -> None:
    """A numeric column with a float or an empty cell is a float column (1 -> 1.0); empty cells
    are blank; floats are their shortest round-trip text; text is quoted only where CSV needs it."""
    table = Table.of(
        [
            {"run": "a,b", "published": 1, "counted": True, "correct": 406, "value": 0.1 + 0.2, "note": None},
            {"run": 'say "hi"', "published": None, "counted": False, "correct": "1678/3", "value": 1e-07, "note": None},
        ]
    )
    assert table.csv_bytes().decode() == (
        "run,published,counted,correct,value,note\n"
        '"a,b",1.0,True,406,0.30000000000000004,\n'
        '"say ""hi""",,False,1678/3,1e-07,\n'
    )
    assert table.records()[0]["published"] == 1.0 and isinstance(table.records()[0]["published"], float)
    assert table.records()[1] == {
        "run": 'say "hi"',
        "published": None,
        "counted": False,
        "correct": "1678/3",
        "value": 1e-07,
        "note": None,
    }
    assert Table.of([{"total": 3}, {"total": 4}]).records()[0]["total"] == 3  # whole column of ints stays ints


def test_an_empty_table_keeps_its_header() -> None:
    assert Table.of([], ["comparison", "value"]).csv_bytes() == b"comparison,value\n"
    assert Table.of([]).csv_bytes() == b"\n"


def _chart(points: int = 3) -> Chart:
    return Chart(
        title="Accuracy <of> each run",
        xlabel="accuracy (%)",
        xlim=(60.0, 100.0),
        ylim=(-0.5, points - 0.5),
        yticks=tuple((y, f"metric {y}") for y in range(points)),
        series=(
            Series("#1f77b4", tuple(Point(y, 70 + y, 65 + y, 75 + y, f"{70 + y:.1f}") for y in range(points)), "run A"),
        ),
        row_height=45,
    )


def test_the_svg_has_every_error_bar_its_labels_and_the_same_bytes_every_time() -> None:
    drawing = layout(_chart())
    data = svg(drawing)
    assert data == svg(layout(_chart()))
    root = ElementTree.fromstring(data)  # well-formed: the title's < and > are escaped
    namespace = "{http://www.w3.org/2000/svg}"
    texts = [element.text for element in root.iter(f"{namespace}text")]
    assert {"Accuracy <of> each run", "accuracy (%)", "metric 0", "metric 2", "run A", "70.0", "72.0"} <= set(texts)
    assert len(list(root.iter(f"{namespace}circle"))) == 3 + 1  # a dot per point and the legend's
    assert root.get("width") == "1125.00" and float(root.get("height", 0)) == drawing.height


def test_the_png_is_a_png_of_the_drawings_size() -> None:
    drawing = layout(_chart(25))
    data = png(drawing)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1125, drawing.height)


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (70.6, 102.0, [75.0, 80.0, 85.0, 90.0, 95.0, 100.0]),
        (0.0, 102.0, [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]),
        (-0.4, 5.3, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]),
    ],
)
def test_ticks_are_round_and_inside_the_axis(low: float, high: float, expected: list[float]) -> None:
    assert ticks(low, high) == expected


def test_the_report_imports_neither_pandas_nor_matplotlib() -> None:
    code = (
        "import json, sys, ifaudit.cli, ifaudit.steps.reporting.report, ifaudit.steps.reporting.plots, ifaudit.io.formats.chart;"
        "print(json.dumps(sorted(m for m in ('pandas', 'matplotlib') if m in sys.modules)))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(loaded) == []


def test_every_category_of_the_html_reports_sidebar_is_numbered() -> None:
    """The sidebar lists categories in the order of their numbers; an unnumbered one sorts after
    all of them under a name that reads as a different kind of entry."""
    rules = sorted((REPO / "workflow" / "rules").glob("*.smk"))
    categories = [found for path in rules for found in re.findall(r'category="([^"]*)"', path.read_text())]
    assert categories, "no report categories found"
    unnumbered = sorted({name for name in categories if not re.match(r"\d+\. \S", name)})
    assert not unnumbered, unnumbered
