"""The README and docs/ agree with each other, with the Makefile and with the command-line
interface: every command they write is one that exists, with options it takes, runnable as
written after `make run`; and the one folder they give for an author's own files is committed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

from conftest import REPO
from ifaudit.cli_parser import build_parser

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def code_lines(path: Path) -> list[tuple[int, str, str]]:
    """Every line of a fenced block, and every inline code span, of a Markdown file: its line
    number, its text, and the whole block it stands in (for a span, "": it is prose's)."""
    found: list[tuple[int, str, str]] = []
    block: list[tuple[int, str]] | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if re.match(r"\s*```", line):
            if block is not None:
                whole = "\n".join(text for _, text in block)
                found += [(n, text, whole) for n, text in block]
            block = None if block is not None else []
        elif block is not None:
            block.append((number, line))
        else:
            found += [(number, span, "") for span in re.findall(r"`([^`]+)`", line)]
    return found


def makefile_targets() -> set[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([\w.-]+):(?!=)", text, re.M))


def subcommands() -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_make_target_the_docs_write_is_in_the_makefile() -> None:
    targets = makefile_targets() | {".venv/.installed", ".venv-runtime/.installed"}  # the venv stamps' rules
    written = {
        (path.name, number, target)
        for path in DOCS
        for number, code, _ in code_lines(path)
        for target in re.findall(r"(?:^|[\s;&(])make (?:-f \S+ )?([\w./-]+)", code)
    }
    assert written, "no make command found in the docs"
    missing = [entry for entry in written if entry[2] not in targets and "=" not in entry[2]]
    assert not missing, missing
    assert {"run", "bundle"} <= {target for _, _, target in written}


def test_every_ifaudit_command_the_docs_write_exists_and_no_bundle_is_given_the_config_it_reads() -> None:
    """Each `ifaudit COMMAND --option` of the docs is one the parser takes; `ifaudit bundle` is
    written without `--config`: it packs the config files the DAG recorded (results/MANIFEST.json),
    and `--config` only overrides that record (the README's Bundles)."""
    commands = subcommands()
    checked = 0
    for path in DOCS:
        for number, code, _ in code_lines(path):
            for command, rest in re.findall(r"(?:^|[\s/;&(\"])ifaudit ([a-z][a-z-]*)([^#|;)`]*)", code):
                if command not in commands:  # prose such as "ifaudit also removes" is no command
                    assert not re.match(r"\s*(?:--|[A-Z./])", rest), f"{path.name}:{number}: ifaudit {command}"
                    continue
                options = set(commands[command]._option_string_actions)
                for option in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", rest):
                    assert option in options, f"{path.name}:{number}: ifaudit {command} has no {option}"
                    assert (command, option) != ("bundle", "--config"), f"{path.name}:{number}: {code}"
                checked += 1
    assert checked >= 10, checked


def test_no_command_the_docs_give_runs_a_bare_ifaudit_or_snakemake_that_make_run_leaves_off_path() -> None:
    """`make run` puts its environment's bin on PATH for its own Snakemake only: a command the docs
    give as `ifaudit ...` or `snakemake ...` runs only where the block says what PATH holds."""
    bare = [
        f"{path.name}:{number}: {text.strip()}"
        for path in DOCS
        for number, text, block in code_lines(path)
        if block  # a fenced block's line, not an inline span of prose
        and re.match(r"\s*(ifaudit|snakemake) ", text)
        and "PATH" not in block
    ]
    assert not bare, bare


def test_no_command_names_the_config_the_snakefile_always_loads_again() -> None:
    """The Snakefile loads config/config.yaml itself; a `--configfile` that names it again is what
    the README says not to do."""
    again = [
        f"{path.name}:{number}: {code}"
        for path in DOCS
        for number, code, _ in code_lines(path)
        if re.search(r"--configfile[^#`]*\bconfig/config\.yaml", code)
    ]
    assert not again, again


def test_the_folder_the_docs_give_for_an_authors_files_is_committed_not_ignored() -> None:
    """Every local `path:` the docs' configs read is under data/, and git ignores none of them: the
    bundle packs the project at its commit, so a reviewer's copy finds them."""
    paths = sorted(
        {
            found
            for path in DOCS
            for _, code, _ in code_lines(path)
            for found in re.findall(r"(?:^|\s)path: ([\w./-]+)", code)
        }
    )
    assert paths and all(path.startswith("data/") for path in paths), paths
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", "--verbose", "data/", *paths],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert ignored.returncode == 1, ignored.stdout  # 1: none of them is ignored
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "go in `data/` at the top of the" in readme


def test_the_makefile_reads_the_mark_the_workflow_leaves() -> None:
    """`make run` skips `ifaudit counted` when the DAG's last hook said it (workflow/rules/common.smk)."""
    from ifaudit.steps.planning import plan

    assert f"COUNTED_SAID := {plan.COUNTED_SAID}\n" in (REPO / "Makefile").read_text()
