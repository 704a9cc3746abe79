"""lighteval, evalscope and OpenCompass, each run for real on its own packaged IFEval (and IFBench)
task against the loopback replay server, with only the dataset pointed at a local file (the hub is
not reachable here). Called by make_logs.py (`--lighteval`, `--evalscope`, `--opencompass`); each
writes what the harness wrote, unedited, under `<out>/<harness>/`.

The environment of every run forbids the hubs (HF_HUB_OFFLINE, HF_DATASETS_OFFLINE,
MODELSCOPE_OFFLINE...); what a harness still tries to download fails (no network here) and is
left in its own log, which `offline.txt` beside the logs quotes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

MODEL = "gpt-4-0613-replay"
OFFLINE = {
    "OPENAI_API_KEY": "not-a-real-key",
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "MODELSCOPE_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "NO_PROXY": "127.0.0.1",
}


def _env(nltk_data: Path, home: Path) -> dict[str, str]:
    """The harness's environment: offline, the shared NLTK data, its caches in a scratch home."""
    return {**os.environ, **OFFLINE, "NLTK_DATA": str(nltk_data), "HOME": str(home), "XDG_CACHE_HOME": str(home)}


def _run(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
    """Run the harness with its console output kept in `log` (what it tried to fetch is there)."""
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run(command, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise SystemExit(f"{command[0]} failed ({done.returncode}); its log ends:\n{tail}")


def _copy(produced: list[Path], root: Path, target: Path, harness: str) -> None:
    """The harness's files, at their paths below its output folder `root`."""
    for path in produced:
        name = path.relative_to(root)
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target / name)
        print(f"{harness} wrote {name} ({path.stat().st_size} bytes)")


def _download_attempts(log: Path) -> list[str]:
    """The lines of a harness's console log that name a download or a hub it tried to reach."""
    words = (
        "download",
        "fetch",
        "huggingface.co",
        "githubusercontent",
        "modelscope",
        "nltk_data",
        "connection",
        "urlopen",
    )
    return [
        line
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
        if any(w in line.lower() for w in words)
    ]


def _note_offline(target: Path, harness: str, logs: list[Path]) -> None:
    lines = [f"{harness}: lines of its console output naming a download or a hub (no network here)"]
    for log in logs:
        found = _download_attempts(log)
        lines.append(f"## {log.name}: {len(found)} lines")
        lines += [line[:300] for line in found[:40]]
    (target / "offline.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


LIGHTEVAL_TASK = """\
# lighteval's own IFEval/IFBench task configs, with only the dataset pointed at a local folder.
from dataclasses import replace

from lighteval.tasks.tasks.ifeval.main import ifeval
{ifbench_import}
TASKS_TABLE = [replace(ifeval, name="ifeval_local", hf_repo={ifeval_dir!r}, hf_subset="default"){ifbench_entry}]
"""


def _tiny_benchmarks_placeholder(venv: Path) -> None:
    """lighteval imports every task module at start, and `tasks/tasks/tiny_benchmarks.py` fetches a
    pickle from GitHub when its metric is built (at import) unless a file is at its path; offline
    the fetch raises and lighteval stops before any task runs. An empty file there stops the fetch
    (only the tinyBenchmarks tasks would read it; IFEval and IFBench do not)."""
    found = sorted(venv.glob("lib/python3*/site-packages/lighteval/tasks/tasks/tiny_benchmarks.py"))
    if found and not (found[0].parent / "tinyBenchmarks.pkl").exists():
        (found[0].parent / "tinyBenchmarks.pkl").write_bytes(b"")
        print("lighteval: wrote an empty tinyBenchmarks.pkl beside tiny_benchmarks.py (its import-time download)")


def run_lighteval(venv: Path, data: dict[str, Path], base_url: str, out: Path, nltk_data: Path) -> None:
    _tiny_benchmarks_placeholder(venv)
    if "ifbench" in data:  # its IFBench checkers import spacy[ja,ko,th] (models and all): not installed here
        print("lighteval: IFEval only (its IFBench task requires spacy[ja,ko,th])")
        data = {"ifeval": data["ifeval"]}
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        folders = _folders(work, data)
        ifbench = "ifbench" in folders
        (work / "local_tasks.py").write_text(
            LIGHTEVAL_TASK.format(
                ifeval_dir=str(folders["ifeval"]),
                ifbench_import="from lighteval.tasks.tasks.ifbench.main import ifbench_test" if ifbench else "",
                ifbench_entry=(
                    f', replace(ifbench_test, name="ifbench_local", hf_repo={str(folders["ifbench"])!r}, '
                    'hf_subset="default")'
                    if ifbench
                    else ""
                ),
            ),
            encoding="utf-8",
        )
        tasks = "ifeval_local|0" + (",ifbench_local|0" if ifbench else "")
        log = work / "lighteval.log"
        _run(
            [
                str(venv / "bin" / "lighteval"),
                "endpoint",
                "litellm",
                f"model_name=openai/{MODEL},base_url={base_url},api_key=not-a-real-key,concurrent_requests=4",
                tasks,
                "--custom-tasks",
                str(work / "local_tasks.py"),
                "--output-dir",
                str(work / "out"),
                "--save-details",
            ],
            _env(nltk_data, work / "home"),
            work,
            log,
        )
        target = out / "lighteval"
        _copy(sorted(p for p in (work / "out").rglob("*") if p.is_file()), work / "out", target, "lighteval")
        _note_offline(target, "lighteval", [log])


def _folders(work: Path, data: dict[str, Path]) -> dict[str, Path]:
    """A folder per benchmark holding its prompt file as `train.jsonl` (the hub's split name)."""
    folders = {}
    for name, prompts in data.items():
        folder = work / f"{name}_data"
        folder.mkdir()
        shutil.copyfile(prompts, folder / "train.jsonl")
        folders[name] = folder
    return folders


def run_evalscope(venv: Path, data: dict[str, Path], base_url: str, out: Path, nltk_data: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        folders = _folders(work, data)
        log = work / "evalscope.log"
        _run(
            [
                str(venv / "bin" / "evalscope"),
                "eval",
                "--model",
                MODEL,
                "--api-url",
                base_url,
                "--api-key",
                "not-a-real-key",
                "--eval-type",
                "openai_api",
                "--datasets",
                *sorted(folders),
                "--dataset-args",
                json.dumps({name: {"dataset_id": str(folder)} for name, folder in folders.items()}),
                "--generation-config",
                json.dumps({"temperature": 0.0}),
                "--eval-batch-size",
                "4",
                "--work-dir",
                str(work / "out"),
                "--no-timestamp",
            ],
            _env(nltk_data, work / "home"),
            work,
            log,
        )
        target = out / "evalscope"
        # its reviews (each sample: the prompt record, the response, the text graded, the verdicts),
        # reports and task config; not `predictions/` (the same responses again), `logs/` nor the
        # HTML report (118 kB of page)
        root = work / "out"
        produced = [
            p
            for p in root.rglob("*")
            if p.is_file() and p.relative_to(root).parts[0] not in ("predictions", "logs") and p.suffix != ".html"
        ]
        _copy(sorted(produced), root, target, "evalscope")
        _note_offline(target, "evalscope", [log])


OPENCOMPASS_CONFIG = """\
# OpenCompass's own IFEval/IFBench dataset configs, with only `path` pointed at a local file, and
# its OpenAI-compatible API model pointed at the loopback replay server.
from mmengine.config import read_base
from opencompass.models import OpenAISDK

with read_base():
    from opencompass.configs.datasets.IFEval.IFEval_gen_353ae7 import ifeval_datasets
{ifbench_import}
datasets = [dict(ifeval_datasets[0], path={ifeval!r}){ifbench_entry}]
models = [
    dict(
        abbr={model!r},
        type=OpenAISDK,
        path={model!r},
        key="not-a-real-key",
        openai_api_base={base_url!r},
        query_per_second=8,
        max_out_len=4096,
        max_seq_len=8192,
        batch_size=4,
        temperature=0.0,
    )
]
"""


def tiktoken_cache(venvs: list[Path]) -> Path | None:
    """tiktoken's cache holding cl100k_base, which OpenCompass's API model loads to count tokens
    (and would fetch from the web): litellm's wheel ships it (`litellm_core_utils/tokenizers/`,
    named by the sha1 of its URL, 9b5ad71b...), so a venv with litellm (lighteval's) provides it."""
    for venv in venvs:
        for found in sorted(venv.glob("lib/python3*/site-packages/litellm/litellm_core_utils/tokenizers")):
            if (found / "9b5ad71b2ce5302211f9c61530b329a4922fc6a4").is_file():
                return found
    return None


def run_opencompass(
    venv: Path,
    data: dict[str, Path],
    base_url: str,
    out: Path,
    nltk_data: Path,
    cache: Path | None = None,
    runs: int = 2,
) -> None:
    """Twice: OpenCompass seeds no `random`, so two identical runs may report different figures."""
    if cache is None:
        raise SystemExit("OpenCompass needs tiktoken's cl100k_base offline: pass --lighteval too (litellm ships it)")
    target = out / "opencompass"
    logs = []
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        ifbench = "ifbench" in data
        config = work / "local_eval.py"
        config.write_text(
            OPENCOMPASS_CONFIG.format(
                ifeval=str(data["ifeval"]),
                ifbench_import=(
                    "    from opencompass.configs.datasets.IFBench.IFBench_gen import ifbench_datasets"
                    if ifbench
                    else ""
                ),
                ifbench_entry=f", dict(ifbench_datasets[0], path={str(data['ifbench'])!r})" if ifbench else "",
                model=MODEL,
                base_url=base_url,
            ),
            encoding="utf-8",
        )
        for run in range(1, runs + 1):
            log = work / f"opencompass-run{run}.log"
            logs.append(log)
            _run(
                [
                    str(venv / "bin" / "opencompass"),
                    str(config),
                    "--work-dir",
                    str(work / f"run{run}"),
                    "--max-num-workers",
                    "1",
                ],
                {**_env(nltk_data, work / "home"), "TIKTOKEN_CACHE_DIR": str(cache)},
                work,
                log,
            )
            produced = sorted(
                p for p in (work / f"run{run}").rglob("*.json") if p.parent.parent.name in ("predictions", "results")
            )
            stamp = next((work / f"run{run}").iterdir())  # OpenCompass's <time>/ folder
            _copy(produced, stamp.parent, target / f"run{run}", "opencompass")
        _note_offline(target, "opencompass", logs)
