"""The package's folders are its layers, and imports point one way: down.

core (records, metrics, statistics: no I/O) < io (files, sources, pins, HTTP) < checkers (text
checks and gates) < judging (the LLM judge) < tasks and inputs (side by side; neither imports the
other) < steps (one module per DAG step, in one folder per stage: planning < grading < auditing <
reporting < artifact, each importing only its own stage and those before it) < cli_parser (the command's vocabulary: subcommands, options,
help) and analysis (a results folder as pandas DataFrames) < cli (the command: parses with
cli_parser, turns options into a step's typed settings, calls the step). Imports inside functions and under TYPE_CHECKING
count too: a layer that needs a higher one at run time is not below it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "src" / "ifaudit"
RANKS = {
    "core": 0,
    "io": 1,
    "checkers": 2,
    "judging": 3,
    "tasks": 4,
    "inputs": 4,
    "steps": 5,
    "cli_parser": 6,
    "analysis": 6,
    "cli": 7,
}


def layer_of(module: str) -> str | None:
    """`ifaudit.io.remote.pins` -> "io"; the package itself (its version) belongs to no layer."""
    parts = module.split(".")
    if parts[0] != "ifaudit" or len(parts) == 1:
        return None
    return parts[1]


def is_module(name: str) -> bool:
    """Is `ifaudit.<name>` a module or a package (not a value of the package, such as its version)?"""
    return (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file()


def imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            # `from ifaudit import judging` names a module, not a value
            if node.module == "ifaudit":
                found |= {f"ifaudit.{alias.name}" for alias in node.names if is_module(alias.name)}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if layer_of(name) is not None}


def module_name(path: Path) -> str:
    return ".".join(("ifaudit", *path.relative_to(PACKAGE).with_suffix("").parts))


def test_every_module_belongs_to_a_layer() -> None:
    modules = [module_name(path) for path in PACKAGE.rglob("*.py") if path.name != "__init__.py"]
    strays = [name for name in modules if layer_of(name) not in RANKS]
    assert not strays, f"modules outside the layers {sorted(RANKS)}: {strays}"


def test_imports_point_down() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = layer_of(module_name(path))
        if importer is None:
            continue
        for imported in sorted(imported_modules(path)):
            target = layer_of(imported)
            assert target is not None
            same_rank_sibling = RANKS[target] == RANKS[importer] and target != importer
            if RANKS[target] > RANKS[importer] or same_rank_sibling:
                upward.append(f"{path.relative_to(REPO)} ({importer}) imports {imported} ({target})")
    assert not upward, "\n".join(upward)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """Not vacuous: the reader finds imports inside functions and under TYPE_CHECKING."""
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ifaudit.steps.reporting.report import x\n"
        "def f():\n    from ifaudit.tasks.registry import TASKS\n    import ifaudit.cli\n"
        "from ifaudit import judging\n",
        encoding="utf-8",
    )
    assert imported_modules(module) == {
        "ifaudit.steps.reporting.report",
        "ifaudit.tasks.registry",
        "ifaudit.cli",
        "ifaudit.judging",
    }
    assert layer_of("ifaudit.checkers.arabic.inception_registry") == "checkers"


def module_graph() -> dict[str, set[str]]:
    """Each module of the package and the modules of the package it imports (a package's
    `__init__` by the package's name), imports inside functions and under TYPE_CHECKING included."""
    modules = {
        module_name(path).removesuffix(".__init__"): imported_modules(path) for path in sorted(PACKAGE.rglob("*.py"))
    }
    return {
        name: {target for target in found if target in modules and target != name} for name, found in modules.items()
    }


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_module_imports_itself_round_a_circle() -> None:
    """Within a layer too: two modules that import each other (one hiding it in a function) are
    one idea in two files, or one of them holds what belongs lower."""
    assert import_cycles(module_graph()) == []


def test_the_circle_check_sees_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]


def test_the_small_jobs_start_without_the_tasks(tmp_path: Path) -> None:
    """verify, combine-canaries, combine-audits and counted (a DAG's per-run and per-task
    bookkeeping, and make run's last word) import no task, checker or grader: the registry's
    imports were ≈ 60 ms of each such job's ≈ 110 ms."""
    import subprocess
    import sys

    audit = tmp_path / "audit.json"
    audit.write_text('{"substituted": []}\n')
    probe = (
        "import sys\n"
        "from ifaudit.cli import main\n"
        f"assert main(['combine-audits', {str(audit)!r}, {str(audit)!r}, '--out', {str(tmp_path / 'out.json')!r}]) == 0\n"
        f"assert main(['counted', '--results', {str(tmp_path)!r}]) == 0\n"
        "import ifaudit.steps.grading.canary, ifaudit.steps.grading.passes\n"
        "print(sorted(m for m in sys.modules if m.startswith(('ifaudit.tasks', 'ifaudit.checkers', 'ifaudit.judging'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    expected = "['ifaudit.tasks', 'ifaudit.tasks.canary_files', 'ifaudit.tasks.names']"
    assert done.stdout.split("\n")[-2] == expected, done.stdout + done.stderr


STAGES = {"planning": 0, "grading": 1, "auditing": 2, "reporting": 3, "artifact": 4}


def stage_of(module: str) -> str | None:
    """`ifaudit.steps.grading.canary` -> "grading"; None outside steps/."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "steps" else None


def test_every_step_is_in_a_stage_folder() -> None:
    strays = [
        path.relative_to(PACKAGE).as_posix()
        for path in (PACKAGE / "steps").rglob("*.py")
        if path.name != "__init__.py" and stage_of(module_name(path)) not in STAGES
    ]
    assert not strays, f"steps outside the stage folders {sorted(STAGES)}: {strays}"


def test_stages_import_only_earlier_stages() -> None:
    """The pipeline read from the imports: a stage may use what an earlier stage made, never a later one."""
    backward = []
    for path in sorted((PACKAGE / "steps").rglob("*.py")):
        stage = stage_of(module_name(path))
        if stage is None:
            continue
        for imported in sorted(imported_modules(path)):
            target = stage_of(imported)
            if target is not None and STAGES[target] > STAGES[stage]:
                backward.append(f"{path.relative_to(REPO)} ({stage}) imports {imported} ({target})")
    assert not backward, "\n".join(backward)


def test_no_folder_holds_more_than_18_modules() -> None:
    """A folder a newcomer reads at a glance: past 18 modules it holds more than one idea."""
    crowded = {
        folder.relative_to(PACKAGE).as_posix() or ".": count
        for folder in [PACKAGE, *(path for path in PACKAGE.rglob("*") if path.is_dir())]
        if (count := len([m for m in folder.glob("*.py") if m.name != "__init__.py"])) > 18
    }
    assert not crowded, f"folders with more than 18 modules: {crowded}"


def long_functions(path: Path, limit: int) -> list[str]:
    """Every function (methods and nested ones included) of more than `limit` lines, as name:line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
            length = node.end_lineno - node.lineno + 1
            if length > limit:
                found.append(f"{path.name}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_longer_than_120_lines() -> None:
    long = [found for path in sorted(PACKAGE.rglob("*.py")) for found in long_functions(path, 120)]
    assert not long, "\n".join(long)


def test_the_length_check_sees_a_long_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n" + "    x = 1\n" * 120 + "def g():\n    pass\n", encoding="utf-8")
    assert long_functions(module, 120) == ["m.py:1 f (121 lines)"]
    assert long_functions(module, 121) == []
