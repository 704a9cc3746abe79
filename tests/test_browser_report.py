"""Snakemake's HTML report of the default run, opened in a real browser: headless Chromium (Debian's
`chromium`, installed by .ci/run; a machine without it fails these tests, never skips them).

The report is a React page: its first page (the workflow description, our runs table first) and
its plots exist only after its JavaScript ran. So the DOM is read as Chromium left it
(`--dump-dom` after a virtual-time budget), and a probe page, the report with one script added at
its end, measures what a reader sees: where each figure's cell lies in the first screen and
whether it is the topmost element there, and, shown the way the report's own "show" button shows
it, whether each plot's image decodes to the size of the PNG on disk.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_workflow import snakemake

from conftest import copy_of_scenario

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

WINDOW = (1280, 2000)  # the screenshot's size: the first screen checked here
# Added at the end of the report's <body>: measures the first screen, then shows each image item as
# the report's ButtonViewManager.handleImg does (app.setView with its data URI) and waits for it.
PROBE = """
(() => setTimeout(async () => {
  const out = {viewport: [window.innerWidth, window.innerHeight], cells: {}, plots: {}};
  const pause = ms => new Promise(done => setTimeout(done, ms));
  try {
    for (const td of document.querySelectorAll("td")) {
      const r = td.getBoundingClientRect();
      const top = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
      out.cells[td.textContent] = {rect: [r.top, r.bottom, r.left, r.right], topmost: !!top && td.contains(top)};
    }
    for (const [path, entry] of Object.entries(results)) {
      if (!entry.mime_type.startsWith("image/")) continue;
      app.setView({content: "img", contentPath: entry.data_uri, resultPath: path});
      let img = null;
      for (let tries = 0; tries < 50 && !(img && img.complete && img.naturalWidth); tries++) {
        await pause(100);
        img = [...document.querySelectorAll("img")].find(i => i.getAttribute("src") === entry.data_uri) || null;
      }
      out.plots[path] = img && {complete: img.complete, width: img.naturalWidth, height: img.naturalHeight};
    }
  } catch (error) {
    out.error = String(error);
  }
  const pre = document.createElement("pre");
  pre.id = "ifaudit-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
}, 1000))();
"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "Chromium is not installed: apt-get install -y chromium (.ci/run installs it)"
    return found


def headless(*args: str, window: tuple[int, int] = WINDOW) -> subprocess.CompletedProcess:
    command = [chromium(), "--headless", "--disable-gpu", "--no-sandbox", f"--window-size={window[0]},{window[1]}"]
    done = subprocess.run([*command, "--virtual-time-budget=30000", *args], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def report(scenario_run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """results/report.html rendered by `snakemake --report` in a copy of the default run."""
    workdir = copy_of_scenario(scenario_run, "offline_default", tmp_path_factory.mktemp("html_report"))
    snakemake(workdir, "--report", "results/report.html")
    return workdir / "results/report.html"


def probe(report: Path, folder: Path) -> dict[str, Any]:
    page = report.read_text(encoding="utf-8")
    end = page.rindex("</body>")
    probed = folder / "probe.html"
    probed.write_text(page[:end] + f"<script>{PROBE}</script>" + page[end:], encoding="utf-8")
    dom = headless("--dump-dom", probed.as_uri()).stdout
    found = re.search(r'<pre id="ifaudit-probe">(.*?)</pre>', dom, re.S)
    assert found, "the probe never reported: the report's scripts did not run"
    measured = json.loads(html.unescape(found.group(1)))
    assert "error" not in measured, measured["error"]
    return measured


def default_cells(report: Path) -> list[str]:
    """The default run's figures as the leaderboard shows them, from metrics.csv: the primary
    metric with its interval, then the other three metrics' values."""
    with (report.parent / "metrics.csv").open(newline="") as table:
        rows = [row for row in csv.DictReader(table) if row["run"] == "gpt4_google"]
    assert len(rows) == 4
    points = {key: [f"{100 * float(row[key]):.2f}" for row in rows] for key in ("value", "ci_low", "ci_high")}
    return [f"{points['value'][0]} [{points['ci_low'][0]}, {points['ci_high'][0]}]", *points["value"][1:]]


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_first_screen_shows_the_leaderboard_with_the_default_runs_figures(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report_first_screen.png"
    headless(f"--screenshot={shot}", report.as_uri())
    print(f"screenshot of the report's first screen: {shot}")
    assert png_size(shot.read_bytes()) == WINDOW
    dom = headless("--dump-dom", report.as_uri()).stdout
    cells = default_cells(report)
    assert cells[0] == "77.08 [73.57, 80.59]"  # the README's figure
    for cell in cells:  # rendered by React into the page, not only held in a script's string
        assert f'<td class="num">{cell}</td>' in dom, cell
    assert re.search(r"<h2[^>]*>Leaderboard</h2>", dom)
    measured = probe(report, tmp_path)
    width, height = measured["viewport"]
    for cell in cells:
        where = measured["cells"][cell]
        top, bottom, left, right = where["rect"]
        assert top >= 0 and bottom <= height and left >= 0 and right <= width, (cell, where, measured["viewport"])
        assert where["topmost"], f"{cell} is covered by another element"


def test_every_plot_of_the_report_loads_in_chromium(report: Path, tmp_path: Path) -> None:
    page = report.read_text(encoding="utf-8")
    items = json.loads(re.search(r"var results = (\{.*?\});\n", page, re.S).group(1))
    plots = sorted(path for path, item in items.items() if item["mime_type"] == "image/png")
    assert plots == [
        "results/plots/accuracy.png",
        "results/plots/breakdown/gpt4_google.png",
        "results/plots/differences.png",
        "results/plots/leaderboard.png",
    ]
    workdir = report.parents[1]
    for path in plots:  # each item embeds exactly the plot the report step wrote
        uri = items[path]["data_uri"]
        assert base64.b64decode(uri.split(";base64,", 1)[1]) == (workdir / path).read_bytes(), path
    measured = probe(report, tmp_path)
    for path in plots:
        shown = measured["plots"][path]
        assert shown and shown["complete"], (path, shown)
        assert (shown["width"], shown["height"]) == png_size((workdir / path).read_bytes()), path
    dom = headless("--dump-dom", report.as_uri()).stdout
    sources = re.findall(r'<img[^>]*?\ssrc="([^"]*)"', dom)
    assert sources, "no img element in the rendered page"
    for source in sources:  # every image of the rendered first page resolves
        assert source.startswith("data:") or (report.parent / source).is_file(), source[:120]
