"""A paper's whole life, as its documents tell it: the authors run the workflow in their project
(three runs, declared out of alphabetical order: the default run, a generated run against a
loopback model endpoint on 20 of the 541 prompts, and an imported lm-eval log), then bundle it with
the README's commands; a reviewer, in a fresh folder, runs every ```sh block of docs/reviewers.md
exactly as written, offline where the step is (`unshare -rn`), substituting only the documented
placeholders. The project is the working tree as a scratch git checkout, so the bundle ships the
code under test."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from conftest import DATA, IFEVAL_PROMPTS, NLTK_MIRROR, REPO, UPSTREAM_SOURCE, GPT4_RESPONSES
from vllm_like import VllmLikeServer

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent
LOGS = Path("tests/data/harness_logs/lm_eval")  # committed in the project, so a relative `path:`
# The config's order, not alphabetical: Snakemake starts from the --configfile files, so the
# paper's runs come before the default run of the Snakefile's own config/config.yaml.
RUNS = ["loopback_20", "as_claimed_by_lm_eval", "gpt4_google"]
NAME = "paper-artifact"
KEY = "sk-" + secrets.token_urlsafe(30)  # random: 8 characters shared with an answer are redacted from it


def sh_blocks(markdown: Path) -> list[str]:
    """The ```sh blocks of a document, in order, as written."""
    return re.findall(r"^ *```sh\n(.*?)^ *```", markdown.read_text(encoding="utf-8"), flags=re.M | re.S)


def dedent_block(block: str) -> str:
    """A block indented under a list item, as the shell reads it."""
    indent = min(len(line) - len(line.lstrip()) for line in block.splitlines() if line.strip())
    return "".join(line[indent:] + "\n" for line in block.splitlines())


def offline() -> tuple[str, ...]:
    """`unshare -rn`, or the test fails: a step the document calls offline never runs with network."""
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True) if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        pytest.fail("this machine cannot drop the network (unshare -rn): the offline steps cannot run", pytrace=False)
    return ("unshare", "-rn")


def author_env() -> dict[str, str]:
    """An author's shell: none of the test run's ifaudit, NLTK or Python path variables, and not
    inside `make test` (a make run from a make says "Entering directory" on its stdout)."""
    left_out = ("IFAUDIT_", "NLTK_", "PYTHONPATH", "MAKEFLAGS", "MAKELEVEL", "MFLAGS")
    env = {k: v for k, v in os.environ.items() if not k.startswith(left_out)}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", LOOPBACK_KEY=KEY)
    return env


def reviewer_env(home: Path) -> dict[str, str]:
    """No ifaudit of ours on PATH, no ifaudit or virtualenv variables: only what the doc builds."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("IFAUDIT_", "NLTK_", "PYTHONPATH", "VIRTUAL_ENV", "LOOPBACK"))
    }
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != BIN)
    env["XDG_CACHE_HOME"] = env.get("XDG_CACHE_HOME", str(Path.home() / ".cache"))  # pip's cache, kept
    # pip compiles every installed module to bytecode; the few a reviewer's steps import compile
    # when first imported instead (a third of the venv's build, ≈ 15-20 s of CPU, in every test run).
    env["PIP_COMPILE"] = "false"  # pip's --no-compile (PIP_NO_COMPILE=1 would mean the opposite)
    env["HOME"] = str(home)
    return env


def shell(block: str, cwd: Path, env: dict[str, str], prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """A document's block run by bash as written; the first failing command fails it."""
    return subprocess.run(
        [*prefix, "bash", "-e", "-o", "pipefail", "-c", block], cwd=cwd, env=env, capture_output=True, text=True
    )


def as_run_in_the_project(block: str) -> str:
    """A README block as the author runs it after `make run`, whose environment (.venv-runtime, which
    `make bundle` calls) is here the tests' own: the block is run as written, with the Makefile told
    where that environment is instead of building another from the locks."""
    assert "make bundle" in block and ".venv-runtime/bin/" in block, block
    return block.replace("make bundle", f"make bundle RUN_VENV={BIN.parent}").replace(".venv-runtime/bin/", f"{BIN}/")


def working_tree_project(target: Path) -> Path:
    """A git checkout whose HEAD is this working tree (committed state, uncommitted changes and
    new files), so the bundle's project/ is the code under test and the checkout is clean."""
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(target)], check=True)
    diff = subprocess.run(["git", "-C", str(REPO), "diff", "--binary", "HEAD"], capture_output=True, check=True)
    if diff.stdout:
        subprocess.run(["git", "-C", str(target), "apply", "--binary", "-"], input=diff.stdout, check=True)
    new = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "--others", "--exclude-standard", "-z"], capture_output=True, check=True
    )
    for name in filter(None, new.stdout.decode().split("\0")):
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, target / name)
    return target


def paper_config(project: Path, server: VllmLikeServer) -> None:
    """The authors' own config, committed: a generated run on 20 prompts, then the imported log."""
    prompts = project / "paper/first_20_prompts.jsonl"
    prompts.parent.mkdir()
    prompts.write_text("".join(IFEVAL_PROMPTS.read_text(encoding="utf-8").splitlines(keepends=True)[:20]))
    model = {
        "model": "loopback/gpt-4-0613",
        "base_url": server.base_url,
        "temperature": 0.7,
        "max_tokens": 1024,
        "seed": 0,
        "samples": 2,
        "api_key_env": "LOOPBACK_KEY",
        "timeout_seconds": 30.0,
    }
    config = {
        "datasets": {
            "first_20_prompts": {"path": "paper/first_20_prompts.jsonl"},
            "lm_eval_samples": {"path": str(next((REPO / LOGS).glob("samples_*.jsonl")).relative_to(REPO))},
            "lm_eval_results": {"path": str(next((REPO / LOGS).glob("results_*.json")).relative_to(REPO))},
        },
        "runs": {
            "loopback_20": {
                "task": "ifeval",
                "prompts": "first_20_prompts",
                "label": "loopback model, 20 prompts, 2 samples",
                "model": model,
            },
            "as_claimed_by_lm_eval": {
                "task": "ifeval",
                "prompts": "ifeval_prompts_github",
                "responses": "lm_eval_samples",
                "import": {"format": "lm-eval", "results": "lm_eval_results"},
            },
        },
    }
    (project / "config/paper.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    git = ["git", "-C", str(project), "-c", "user.name=Author", "-c", "user.email=author@example.org"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "the paper's runs"], check=True)


def author_snakemake(project: Path, *args: str, **env: str) -> str:
    """As `make run ARGS="--configfile config/offline.yaml config/paper.yaml"` in the project (the
    Snakefile loads config/config.yaml itself), the mirrors given where this machine has them."""
    done = subprocess.run(
        [
            str(BIN / "snakemake"),
            "--cores",
            "2",
            "--configfile",
            "config/offline.yaml",
            "config/paper.yaml",
            "--config",
            f"mirror={DATA}",
            f"nltk_mirror={NLTK_MIRROR}",
            f"grader_sources=[{UPSTREAM_SOURCE.replace(os.pathsep, ', ')}]",
            *args,
        ],
        cwd=project,
        env=author_env() | env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def server() -> Iterator[VllmLikeServer]:
    served = VllmLikeServer(GPT4_RESPONSES).start()
    yield served
    served.stop()


@pytest.fixture(scope="module")
def paper(tmp_path_factory: pytest.TempPathFactory, server: VllmLikeServer) -> dict:
    """The authors' side, once: the three runs and Snakemake's HTML report, as `make run` leaves
    them, then the README's bundle block run in the project."""
    root = tmp_path_factory.mktemp("paper")
    project = working_tree_project(root / "project")
    paper_config(project, server)
    author_snakemake(project, IFAUDIT_HTML_REPORT="results/report.html")  # as make run renders it: in the DAG's process
    assert (project / "results/report.html").is_file()
    readme = [block for block in sh_blocks(REPO / "README.md") if "make bundle" in block]
    assert len(readme) == 1, readme
    block = as_run_in_the_project(dedent_block(readme[0]).replace("DIR", NAME))
    bundled = shell(block, project, author_env())
    assert bundled.returncode == 0, bundled.stderr
    digest = bundled.stdout.strip().splitlines()[0]
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest), bundled.stdout
    return {"root": root, "project": project, "bundle": project / NAME, "digest": digest, "bundled": bundled}


def test_the_workflow_records_the_config_files_it_merged_in_order_with_their_sha256(paper: dict) -> None:
    import hashlib

    project = paper["project"]
    record = json.loads((project / "results/MANIFEST.json").read_text())
    assert [(e["path"], e["relative_to"], e["loaded_by"]) for e in record["configfiles"]] == [
        ("config/config.yaml", "project", "Snakefile"),  # its values first: the others override them
        ("config/offline.yaml", "project", "--configfile"),
        ("config/paper.yaml", "project", "--configfile"),
    ]
    for entry in record["configfiles"]:
        assert entry["sha256"] == hashlib.sha256((project / entry["path"]).read_bytes()).hexdigest()
    assert record["runs"] == RUNS
    assert record["config_overrides"]["mirror"] == str(DATA)
    assert record["config"]["runs"]["loopback_20"]["prompts"] == "first_20_prompts"
    before = (project / "results/MANIFEST.json").read_bytes()
    assert "Nothing to be done" in author_snakemake(project)  # the same configs again: the same record
    assert (project / "results/MANIFEST.json").read_bytes() == before


def test_the_readme_bundle_block_ships_the_recorded_configs_and_exactly_the_configured_runs(paper: dict) -> None:
    bundle = paper["bundle"]
    # What was given with --configfile; the Snakefile's own config/config.yaml is in project/.
    assert sorted(p.name for p in (bundle / "config").iterdir()) == ["00-offline.yaml", "01-paper.yaml"]
    assert (bundle / "config/01-paper.yaml").read_bytes() == (paper["project"] / "config/paper.yaml").read_bytes()
    description = json.loads((bundle / "BUNDLE.json").read_text())
    assert description["project"]["dirty"] is False  # the bundle written inside the project is not a change
    assert sorted(description["runs"]) == sorted(RUNS)
    assert {p.name for p in (bundle / "results").iterdir() if (p / "MANIFEST.json").is_file()} == set(RUNS)
    assert (bundle / "results/MANIFEST.json").is_file() and (bundle / "results/report.html").is_file()
    # the README's own check of the archive
    assert "bundle's bytes verify (--checksums-only)" in paper["bundled"].stderr


def test_a_result_folder_of_a_run_the_configs_do_not_name_is_refused_in_one_line(paper: dict, tmp_path: Path) -> None:
    project = paper["project"]
    stale = [project / "results/old_run", project / "results/older_run"]
    try:
        for folder in stale:
            folder.mkdir()
            (folder / "MANIFEST.json").write_text("{}")
        done = subprocess.run(
            [str(BIN / "ifaudit"), "bundle", "--out", str(tmp_path / "b")],
            cwd=project,
            env=author_env(),
            capture_output=True,
            text=True,
        )
    finally:
        for folder in stale:
            shutil.rmtree(folder)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, lines
    assert "2 result folder(s) of runs the configs do not name: results/old_run/, results/older_run/" in lines[0]
    assert not (tmp_path / "b").exists()


def test_files_added_inside_a_bundle_are_counted_and_only_a_few_named(paper: dict, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(paper["bundle"], bundle)
    for index in range(40):
        (bundle / f".venv/lib/f{index:02d}.py").parent.mkdir(parents=True, exist_ok=True)
        (bundle / f".venv/lib/f{index:02d}.py").write_text("x\n")
    done = subprocess.run(
        [str(BIN / "ifaudit"), "verify-bundle", str(bundle), "--checksums-only"],
        cwd=tmp_path,
        env=author_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 3, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert "40 file(s) not in CHECKSUMS.sha256: .venv/lib/f00.py" in error and "and 35 more" in error, error
    assert error.count(".venv/") == 5 and len(error) < 600, error


def test_every_reviewer_block_passes_as_written_in_a_fresh_folder(paper: dict, tmp_path: Path) -> None:
    """docs/reviewers.md, top to bottom: build the environment beside the bundle (PyPI), verify
    the archive against the cited digest, the ACM badges' commands, and the whole workflow run
    again offline with every result byte-identical."""
    review = tmp_path / "review"
    review.mkdir()
    shutil.copyfile(paper["project"] / f"{NAME}.tar.gz", review / f"{NAME}.tar.gz")
    env = reviewer_env(tmp_path / "home")
    blocks = sh_blocks(REPO / "docs/reviewers.md")
    assert len(blocks) == 5, blocks
    for index, written in enumerate(blocks):
        block = written.replace("NAME", NAME).replace("sha256:THE-DIGEST-IN-THE-PAPER", paper["digest"])
        needs_pypi = "pip install" in block and "--no-index" not in block
        done = shell(block, review, env, () if needs_pypi else offline())
        assert done.returncode == 0, f"block {index}:\n{block}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
        assert all(len(line) < 2000 for line in done.stderr.splitlines()), f"block {index}: a line too long"
        if "verify-bundle" in block and "--checksums-only" not in block:
            regraded = f"regraded byte-identically (both passes): {', '.join(RUNS)}"  # the config's order
            assert regraded in done.stderr, done.stderr
            assert "authenticity NOT checked" not in done.stderr
        if "snakemake" in block:
            said = done.stdout + done.stderr
            assert not re.search(r"^cmp: |\bdiffer: (byte|char)", said, flags=re.M), said[-3000:]
            jobs = done.stderr.split("Job stats:")[1].split("Select jobs")[0]
            assert "fetch" not in jobs and "generate" in jobs, jobs  # bundled data; the store replayed
    rerun = review / "rerun/results"
    assert [json.loads((rerun / run / "summary.json").read_text())["run"] for run in RUNS] == RUNS
    assert (rerun / "report.md").read_bytes() == (paper["bundle"] / "results/report.md").read_bytes()
    assert sorted(p.name for p in review.iterdir()) == [
        "ifaudit-bundle",
        "ifaudit-source",
        "ifaudit-venv",
        f"{NAME}.tar.gz",
        "rerun",
    ]
