"""From the audit into the paper: the report's `paper/` folder (booktabs snippets, the artifact
appendix's text) and `ifaudit.analysis.load` (a results folder as pandas DataFrames).

The snippets' figures are checked against each run's summary.json and stats.json and the paired
comparison files, read here directly; they are compiled by a real TeX engine (Debian's pdflatex,
which .ci/run installs: a missing engine fails, never skips). docs/analysis.md's examples are run
exactly as written, and must print what the doc shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_workflow import snakemake, write_config

from conftest import REPO, copy_of_scenario
from ifaudit.io.formats.table import Table
from ifaudit.steps.reporting.paper import paper_files, render_paper
from ifaudit.steps.reporting.paper_latex import PREAMBLE, counts, latex_escape, runs_latex
from ifaudit.steps.reporting.report import in_run_order

LM_EVAL_LOGS = Path(__file__).parent / "data" / "harness_logs" / "lm_eval"
IMPORTED = "as_claimed_by_lm_eval"  # docs/analysis.md's third example names it
SPECIALS = "a_b 50% & #1 $x {y} ~z ^w \\v <u> |t"


def test_latex_escape_writes_each_special_character_as_latex_text() -> None:
    assert latex_escape(SPECIALS) == (
        r"a\_b 50\% \& \#1 \$x \{y\} \textasciitilde{}z \textasciicircum{}w \textbackslash{}v "
        r"\textless{}u\textgreater{} \textbar{}t"
    )
    assert latex_escape("gpt4_google − gpt4_x3\nsecond line") == r"gpt4\_google $-$ gpt4\_x3 second line"


def test_a_fractional_count_is_set_in_parentheses_before_its_total() -> None:
    assert counts(417, 541) == "417/541"
    assert counts("1760/3", 834) == "(1760/3)/834"


def test_paper_files_are_one_runs_table_per_task_and_prompt_set_and_one_claims_table_per_imported_run() -> None:
    """A task whose runs share a prompt set has one runs table; one whose runs are of several
    (IFBench's 294 and 300 rows: different benchmarks) has one per prompt set."""
    plan = {
        "runs": {
            "a": {"task": "ifeval", "prompts": "p"},
            "b": {"task": "ifeval_langcheck", "prompts": "p"},
            "c": {"task": "ifeval", "prompts": "p"},
            "d": {"task": "ifbench", "prompts": "ifbench_prompts_294"},
            "e": {"task": "ifbench", "prompts": "ifbench_prompts_300"},
            "f": {"task": "ifbench", "prompts": "ifbench_prompts_294"},
        },
        "claims": {"c": "results/c/claims.json"},
    }
    assert paper_files(plan) == [
        "paper/runs_ifeval.tex",
        "paper/runs_ifeval_langcheck.tex",
        "paper/runs_ifbench--ifbench_prompts_294.tex",
        "paper/runs_ifbench--ifbench_prompts_300.tex",
        "paper/comparisons.tex",
        "paper/claims_c.tex",
        "paper/artifact.md",
    ]


# ---------------------------------------------------------------------------------------------
# TeX


def pdflatex() -> str:
    found = shutil.which("pdflatex")
    assert found, "pdflatex is not installed: apt-get install -y texlive-latex-base texlive-latex-recommended"
    return found


def compile_snippets(snippets: list[Path], folder: Path, layout: str = "") -> str:
    """A minimal `article` (with `layout` among its options: "twocolumn") that `\\input`s each
    snippet as it is, no scaling, compiled by pdflatex in `folder`; its log."""
    body = "\n\n".join(f"\\input{{{path}}}\n\\bigskip" for path in snippets)
    document = folder / "paper.tex"
    document.write_text(
        f"\\documentclass[{layout}]{{article}}\n{PREAMBLE}\n\\begin{{document}}\n{body}\n\\end{{document}}\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [pdflatex(), "-interaction=nonstopmode", "-halt-on-error", document.name],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    log = (folder / "paper.log").read_text(encoding="utf-8", errors="replace")
    assert done.returncode == 0, done.stdout[-3000:]
    assert (folder / "paper.pdf").stat().st_size > 1000
    return log


@pytest.mark.latex
def test_a_label_with_every_latex_special_compiles(tmp_path: Path) -> None:
    row = {"run": "r_1", "label": SPECIALS, "task": "ifeval", "title": "50% & more", "value": 0.5}
    row |= {"ci_low": 0.25, "ci_high": 0.75, "correct": "3/2", "total": 3, "level": 0.95}
    row |= {"interval": "percentile", "resamples": 10}
    snippet = tmp_path / "runs.tex"
    snippet.write_text(runs_latex(Table.of([row]), "ifeval"), encoding="utf-8")
    log = compile_snippets([snippet], tmp_path)
    assert "Output written on paper.pdf (1 page" in log


# ---------------------------------------------------------------------------------------------
# The session's DAG runs


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def imported_run(scenario_run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The audit docs/analysis.md's examples read: the default run with config/analysis.yaml on top
    (the committed lm-eval log imported as IMPORTED), through the DAG; the config's paths, relative
    to the project, anchored at it."""
    workdir = copy_of_scenario(scenario_run, "offline_default", tmp_path_factory.mktemp("imported"))
    config = yaml.safe_load((REPO / "config/analysis.yaml").read_text(encoding="utf-8"))
    for dataset in config["datasets"].values():
        dataset["path"] = str(REPO / dataset["path"])
    assert list(config["runs"]) == [IMPORTED]
    write_config(workdir, config)
    snakemake(workdir)
    return workdir


@pytest.fixture
def folder(request: pytest.FixtureRequest, scenario_run) -> Path:
    """The workdir of the scenario the test is parametrized with ("imported": IMPORTED's)."""
    name = request.param
    return request.getfixturevalue("imported_run") if name == "imported" else scenario_run(name).workdir


FOLDERS = pytest.mark.parametrize("folder", ["offline_default", "comparison", "imported"], indirect=True)


def points(value: float) -> str:
    return f"{100 * value:.2f}"


def signed(value: float) -> str:
    return f"{100 * value:+.2f}"


def read_back(latex: str) -> str:
    """A cell as the text a reader sees in it: LaTeX's minus signs as "-", no break points."""
    return latex.strip().replace("$-$", "-").replace("\\allowbreak{}", "")


def tex_groups(text: str) -> dict[str, list[list[str]]]:
    """The body of a long table (between \\midrule and \\bottomrule): each group's heading, read
    back, and its rows as cells, read back."""
    body = text.split("\\midrule\n", 1)[1].split("\\bottomrule", 1)[0]
    groups: dict[str, list[list[str]]] = {}
    heading = ""
    for line in body.splitlines():
        if line.startswith("\\multicolumn"):
            heading = read_back(line.split("{\\textit{", 1)[1].removesuffix("}} \\\\"))
            groups[heading] = []
        elif line != "\\addlinespace":
            groups[heading].append([read_back(cell) for cell in line.removesuffix(" \\\\").split(" & ")])
    return groups


def as_read(label: str) -> str:
    """A label as tex_groups reads it back."""
    return read_back(latex_escape(label))


def count_text(correct: int | str, total: int) -> str:
    return f"({correct})/{total}" if isinstance(correct, str) else f"{correct}/{total}"


@pytest.mark.e2e
@FOLDERS
def test_runs_tables_hold_each_runs_summary_counts_and_stats_intervals(folder: Path) -> None:
    results = folder / "results"
    plan = read_json(results / "tables.json")["plan"]
    checked = 0
    for run, spec in plan["runs"].items():
        summary, stats = read_json(results / run / "summary.json"), read_json(results / run / "stats.json")
        groups = tex_groups((results / "paper" / f"runs_{spec['task']}.tex").read_text(encoding="utf-8"))
        heading = run if summary["label"] == run else f"{summary['label']} ({run})"
        rows = groups[as_read(heading)]
        expected = []
        for metric, estimate in stats["estimates"].items():
            figures = summary["metrics"][metric]
            assert estimate["value"] == float(Fraction(str(figures["correct"])) / figures["total"])
            expected.append(
                [
                    as_read(estimate["title"]),
                    points(estimate["value"]),
                    f"[{points(estimate['ci_low'])}, {points(estimate['ci_high'])}]",
                    count_text(figures["correct"], figures["total"]),
                ]
            )
        assert sorted(rows) == sorted(expected), run
        checked += len(expected)
    assert checked >= 4 * len(plan["runs"])


@pytest.mark.e2e
@FOLDERS
def test_comparisons_table_holds_each_paired_difference_and_within_run_difference(folder: Path) -> None:
    results = folder / "results"
    groups = tex_groups((results / "paper/comparisons.tex").read_text(encoding="utf-8"))
    found = {(heading, row[0]): row[1:] for heading, rows in groups.items() for row in rows}
    expected = {}
    for path in sorted((results / "comparisons").glob("*/*.json")):
        a, b = path.parent.name, path.stem
        titles = read_json(results / a / "stats.json")["estimates"]
        for metric, diff in read_json(path)["a_minus_b"].items():
            expected[(as_read(f"{a} − {b}"), as_read(titles[metric]["title"]))] = diff
    for run in read_json(results / "tables.json")["plan"]["runs"]:
        stats = read_json(results / run / "stats.json")
        for diff in stats["within_run"]:
            a, b = (stats["estimates"][diff[side]]["title"] for side in ("a", "b"))
            expected[(as_read(f"{a} − {b}, within each run"), as_read(run))] = diff
    assert set(found) == set(expected)
    for key, diff in expected.items():
        interval = f"[{signed(diff['ci_low'])}, {signed(diff['ci_high'])}]"
        tie = diff["value"] == 0 and diff["bootstrap_se"] == 0  # A = B in every resample
        share = "tie" if tie else f"{diff['share_a_greater']:.3f}"
        assert found[key][:3] == [signed(diff["value"]), interval, share], key


@pytest.mark.e2e
def test_claims_table_holds_the_imported_runs_claims(imported_run: Path) -> None:
    claims = read_json(imported_run / f"results/{IMPORTED}/claims.json")
    groups = tex_groups((imported_run / f"results/paper/claims_{IMPORTED}.tex").read_text(encoding="utf-8"))
    assert len(groups) == len(claims["metrics"]) == 4
    for title, rows in groups.items():
        (metric,) = [m for m in claims["metrics"].values() if m["title"] == title]
        recomputed, audited, diff = (
            metric["recomputed_from_harness"],
            metric["audited"],
            metric["audited_minus_claimed"],
        )
        assert rows == [
            ["reported by the harness", points(metric["reported"]), "", ""],
            [
                "recomputed from its verdicts",
                points(recomputed["value"]),
                f"{recomputed['correct']}/{recomputed['total']}",
                "",
            ],
            ["audited (pinned grader)", points(audited["value"]), f"{audited['correct']}/{audited['total']}", ""],
            ["audited - claimed", signed(diff["value"]), "", f"[{signed(diff['ci_low'])}, {signed(diff['ci_high'])}]"],
        ]
    assert groups["prompt-level loose"][1:3] == [
        ["recomputed from its verdicts", "79.48", "430/541", ""],
        ["audited (pinned grader)", "79.67", "431/541", ""],
    ]


@pytest.mark.e2e
@pytest.mark.latex
@FOLDERS
@pytest.mark.parametrize("layout", ["", "twocolumn"])
def test_every_table_of_the_run_compiles_and_fits_the_line_of_a_one_and_a_two_column_article(
    folder: Path, layout: str, tmp_path: Path
) -> None:
    """`comparison` is four runs of two tasks (one language-gated: nine metrics), `imported` adds
    a claims table: each snippet as written, no scaling, within \\linewidth in both layouts."""
    snippets = sorted((folder / "results/paper").glob("*.tex"))
    plan = read_json(folder / "results/tables.json")["plan"]
    assert [f"paper/{path.name}" for path in snippets] == sorted(n for n in paper_files(plan) if n.endswith(".tex"))
    log = compile_snippets(snippets, tmp_path, layout)
    assert "Undefined control sequence" not in log and "Missing $ inserted" not in log
    overfull = [line for line in log.splitlines() if line.startswith("Overfull \\hbox")]
    assert not overfull, overfull[:5]
    print(f"compiled {len(snippets)} snippets ({layout or 'one column'}): {tmp_path / 'paper.pdf'}")


@contextlib.contextmanager
def working_in(folder: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


@pytest.mark.e2e
@FOLDERS
def test_paper_folder_is_what_the_report_tables_render_again(folder: Path) -> None:
    """Deterministic and from the report's own tables: rendered again in this process from the
    plan and tables that tables.json records, every file of paper/ is byte-identical."""
    tables = read_json(folder / "results/tables.json")
    plan = in_run_order(tables["plan"])  # as write_report orders it (tables.json sorts its keys)
    with working_in(folder):  # the plan names files relative to the workdir; nothing is written
        texts = render_paper(plan, Table.of(tables["metrics"]), Table.of(tables["comparisons"]))
    assert list(texts) == paper_files(tables["plan"])
    for name, text in texts.items():
        assert (folder / "results" / name).read_bytes() == text.encode("utf-8"), name
    assert not re.search(r"20\d\d-\d\d-\d\dT\d\d", "".join(texts.values()))  # no time stamps


@pytest.mark.e2e
@FOLDERS
def test_artifact_text_names_the_runs_their_counts_the_pinned_commit_and_the_verify_command(folder: Path) -> None:
    results = folder / "results"
    artifact = (results / "paper/artifact.md").read_text(encoding="utf-8")
    commit = tomllib.loads((REPO / "vendor/google_ifeval/pin.toml").read_text())["commit"]
    for run in read_json(results / "tables.json")["plan"]["runs"]:
        summary = read_json(results / run / "summary.json")
        assert summary["grader"]["version"] == commit
        assert f"| `{run}` | " in artifact and f" | {summary['prompts']} | {summary['responses']} | " in artifact
    assert f"pinned at commit `{commit}`" in artifact
    assert "ifaudit verify-bundle NAME.tar.gz --expect ROOT_DIGEST" in artifact
    assert "`ifaudit bundle` prints it" in artifact and "`results/report.digest.md`" in artifact
    google = read_json(results / "gpt4_google/summary.json")["metrics"]["prompt_level_strict_acc"]
    assert f"prompt-level strict 77.08 [73.57, 80.59] ({google['correct']}/{google['total']})" in artifact


# ---------------------------------------------------------------------------------------------
# ifaudit.analysis


@pytest.mark.e2e
def test_load_gives_the_default_runs_1668_instruction_grades_with_dtypes_and_the_grader(scenario_run) -> None:
    from ifaudit.analysis import load

    results = load(scenario_run("offline_default").workdir / "results")
    grades = results.grades
    assert len(grades) == 1668 == 2 * 834
    assert grades.groupby("mode").size().to_dict() == {"loose": 834, "strict": 834}
    assert grades.groupby("mode")["followed"].sum().to_dict() == {"loose": 714, "strict": 698}
    assert {name: str(dtype) for name, dtype in grades.dtypes.items()} == {
        "run": "string",
        "key": "int64",
        "sample": "int64",
        "index": "int64",
        "instruction": "string",
        "mode": "string",
        "followed": "bool",
    }
    commit = tomllib.loads((REPO / "vendor/google_ifeval/pin.toml").read_text())["commit"]
    for frame in (results.runs, results.metrics, grades, results.comparisons, results.claims):
        assert frame.attrs["grader"]["version"] == commit and frame.attrs["grader"]["kind"] == "upstream"
        assert frame.attrs["graders"] == {"gpt4_google": frame.attrs["grader"]}
    metrics = results.metrics.set_index("metric")
    assert metrics.loc["prompt_level_strict_acc", ["correct", "total"]].tolist() == [417.0, 541]
    assert results.runs.loc[0, ["run", "prompts", "responses", "counted"]].tolist() == ["gpt4_google", 541, 541, True]
    assert results.claims.empty and list(results.claims.columns)[:3] == ["run", "metric", "title"]


@pytest.mark.e2e
def test_load_reads_the_imported_runs_claims_and_disagreements(imported_run: Path) -> None:
    from ifaudit.analysis import load

    results = load(imported_run / "results")
    claims = results.claims.set_index("metric")
    assert claims.loc["prompt_level_loose_acc", ["recomputed_correct", "audited_correct"]].tolist() == [430.0, 431.0]
    assert str(claims["audited_total"].dtype) == "Int64"
    (row,) = results.disagreements.to_dict("records")
    assert (row["run"], row["key"], row["mode"], row["cause"]) == (IMPORTED, 1122, "loose", "substituted_setting")
    assert results.runs.set_index("run").imported.to_dict() == {"gpt4_google": False, IMPORTED: True}


def doc_examples() -> list[tuple[str, str, str]]:
    """docs/analysis.md's examples: where each runs, its code, and the output the doc shows."""
    text = (REPO / "docs/analysis.md").read_text(encoding="utf-8")
    return re.findall(r"<!-- example: (\w+) -->\n```python\n(.*?)```\n\n```text\n(.*?)```", text, re.S)


def test_the_analysis_doc_has_its_three_examples() -> None:
    assert [where for where, _, _ in doc_examples()] == ["imported", "imported", "imported"]


def run_example(code: str, folder: Path) -> subprocess.CompletedProcess:
    """An example as a user runs it: its code, as written, by .venv's Python in the folder."""
    return subprocess.run([sys.executable, "-"], input=code, cwd=folder, capture_output=True, text=True)


@pytest.mark.e2e
@pytest.mark.parametrize("number", [0, 1, 2])
def test_analysis_doc_example_runs_as_written_and_prints_what_the_doc_shows(number: int, imported_run: Path) -> None:
    _, code, shown = doc_examples()[number]
    done = run_example(code, imported_run)
    assert done.returncode == 0, done.stderr
    assert [line.rstrip() for line in done.stdout.splitlines()] == shown.splitlines()


@pytest.mark.e2e
@pytest.mark.parametrize("number", [1, 2])
def test_analysis_doc_example_fails_on_a_results_folder_without_the_runs_it_reads(number: int, scenario_run) -> None:
    """The default run alone has no imported run: an example that reads one stops on an assert,
    it does not print empty frames and pass."""
    _, code, _ = doc_examples()[number]
    done = run_example(code, scenario_run("offline_default").workdir)
    assert done.returncode == 1 and "AssertionError" in done.stderr, (done.stdout, done.stderr)


def test_analysis_in_make_runs_environment_stops_with_one_line_naming_pandas() -> None:
    """`make run`'s environment holds no pandas: importing ifaudit.analysis there says so, and
    where it is, in one line (no traceback ending in ModuleNotFoundError)."""
    runtime = REPO / ".venv-runtime" / "bin" / "python"
    if not runtime.is_file():
        pytest.fail(f"no runtime venv at {runtime}: build it with `make .venv-runtime/.installed`")
    assert subprocess.run([runtime, "-c", "import pandas"], capture_output=True).returncode == 1  # none there
    done = subprocess.run([runtime, "-c", "from ifaudit.analysis import load"], capture_output=True, text=True)
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert "needs pandas" in line and ".venv/bin/python" in line and "Traceback" not in line
