"""Make real harness logs for the importer tests: lm-eval and inspect, each run for real against
a loopback OpenAI-compatible server (replay_server.py) that answers with Google's published GPT-4
responses, on the pinned IFEval prompt file. The harnesses are not project dependencies: install
them in scratch venvs and pass their interpreters.

    python3 -m venv /tmp/venv-lmeval && /tmp/venv-lmeval/bin/pip install "lm-eval[api,ifeval]==0.4.13"
    python3 -m venv /tmp/venv-inspect && /tmp/venv-inspect/bin/pip install inspect-ai==0.3.285 inspect-evals==0.26.0 openai
    python tools/harness_logs/make_logs.py --lmeval /tmp/venv-lmeval --inspect /tmp/venv-inspect \
        --shared ../shared --out tests/data/harness_logs

lm-eval runs its own `ifeval` task config and grading code (`lm_eval/tasks/ifeval/ifeval.yaml`,
included as is); only the dataset is pointed at the local prompt file, since the hub is not
reachable here. inspect runs inspect_evals' own IFEval scorer and sample conversion on the same
local file (task file `inspect_ifeval_local.py`). Its scorer imports `instruction_following_eval`
(a packaging of Google's grader that is not on PyPI): `ife_adapter/` provides it from Google's
pinned files in ../shared/upstream, adding only the three names the scorer imports.

lighteval, evalscope and OpenCompass (more_harnesses.py) run each its packaged IFEval task, and
IFBench's where it has one (answered with IFBench's own sample outputs, on the 300-row prompt file
their hub copies hold), the same way. The pins below lighteval are the releases of its day (the
newest litellm has no disk cache, huggingface_hub 1.x no `list_models(model_name=)`, xxhash 4 no
str input, all of which lighteval 0.13.0 uses); OpenCompass pins numpy below 2, which the newest
pyarrow refuses; OpenCompass does not install `emoji`, which its IFBench copy needs (left out, as
its users get it). Its API model counts tokens with tiktoken's cl100k_base, taken from the litellm
that lighteval's venv holds (`--lighteval` with `--skip-lighteval-run` to use it alone):

    python3 -m venv /tmp/venv-lighteval && /tmp/venv-lighteval/bin/pip install "torch==2.13.0+cpu" \
        "lighteval[litellm]==0.13.0" langdetect syllapy emoji "litellm[caching]==1.79.3" \
        huggingface_hub==0.36.0 transformers==4.57.1 datasets==4.4.1 xxhash==3.5.0
    python3 -m venv /tmp/venv-evalscope && /tmp/venv-evalscope/bin/pip install "evalscope[ifeval,ifbench]==1.14.1"
    python3 -m venv /tmp/venv-opencompass && /tmp/venv-opencompass/bin/pip install "torch==2.13.0+cpu" \
        opencompass==0.5.4 langdetect "pyarrow<21"
    .venv/bin/python tools/harness_logs/make_logs.py --lighteval /tmp/venv-lighteval --evalscope /tmp/venv-evalscope \
        --opencompass /tmp/venv-opencompass --shared ../shared --out tests/data/harness_logs
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from more_harnesses import run_evalscope, run_lighteval, run_opencompass, tiktoken_cache  # noqa: E402
from replay_server import ReplayServer, load_answers  # noqa: E402

HERE = Path(__file__).resolve().parent
MODEL = "gpt-4-0613-replay"


def _site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages"))
    if not found:
        raise SystemExit(f"no site-packages under {venv}")
    return found[0]


def run_lmeval(venv: Path, prompts: Path, base_url: str, out: Path) -> None:
    task_yaml = _site_packages(venv) / "lm_eval" / "tasks" / "ifeval" / "ifeval.yaml"
    with tempfile.TemporaryDirectory() as include:
        (Path(include) / "ifeval_local.yaml").write_text(
            f"include: {task_yaml}\n"
            "task: ifeval_local\n"
            "dataset_path: json\n"
            "dataset_kwargs:\n"
            f"  data_files:\n    train: {prompts}\n",
            encoding="utf-8",
        )
        work = Path(include) / "out"
        subprocess.run(
            [
                str(venv / "bin" / "lm_eval"),
                "--model",
                "local-chat-completions",
                "--model_args",
                f"model={MODEL},base_url={base_url}/chat/completions,num_concurrent=4,"
                "max_retries=1,tokenized_requests=False",
                "--tasks",
                "ifeval_local",
                "--include_path",
                include,
                "--apply_chat_template",
                "--log_samples",
                "--output_path",
                str(work),
            ],
            check=True,
            env={**os.environ, "OPENAI_API_KEY": "not-a-real-key", "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"},
        )
        target = out / "lm_eval"
        target.mkdir(parents=True, exist_ok=True)
        for produced in sorted(work.rglob("*.json*")):
            shutil.copy2(produced, target / produced.name)
            print("lm-eval wrote", produced.name)


def run_inspect(venv: Path, prompts: Path, base_url: str, out: Path, upstream: Path) -> None:
    target = out / "inspect"
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        # The whole run as .eval (compressed); the first 25 samples again as .json, whose
        # uncompressed transcript would otherwise weigh 14 MB.
        for log_format, limit in (("eval", []), ("json", ["--limit", "25"])):
            subprocess.run(
                [
                    str(venv / "bin" / "inspect"),
                    "eval",
                    "inspect_ifeval_local.py",
                    *limit,
                    "-T",
                    f"path={prompts}",
                    "--model",
                    f"openai/{MODEL}",
                    "--model-base-url",
                    base_url,
                    "--log-dir",
                    work,
                    "--log-format",
                    log_format,
                    "--max-connections",
                    "4",
                    "--temperature",
                    "0",
                    "--no-log-images",
                    "--display",
                    "plain",
                ],
                check=True,
                cwd=HERE,
                env={
                    **os.environ,
                    "OPENAI_API_KEY": "not-a-real-key",
                    "INSPECT_LOG_LEVEL": "warning",
                    "PYTHONPATH": str(HERE / "ife_adapter"),
                    "IFEVAL_UPSTREAM": str(upstream),
                },
            )
        for produced in sorted(Path(work).iterdir()):
            shutil.copy2(produced, target / produced.name)
            print("inspect wrote", produced.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lmeval", type=Path, help="venv with lm-eval[api,ifeval]")
    parser.add_argument("--inspect", type=Path, help="venv with inspect-ai and inspect-evals")
    parser.add_argument("--lighteval", type=Path, help="venv with lighteval[litellm]")
    parser.add_argument("--evalscope", type=Path, help="venv with evalscope[ifeval,ifbench]")
    parser.add_argument("--opencompass", type=Path, help="venv with opencompass")
    parser.add_argument("--no-ifbench", action="store_true", help="IFEval only")
    parser.add_argument(
        "--skip-lighteval-run",
        dest="run_lighteval",
        action="store_false",
        help="use --lighteval's venv only for its litellm",
    )
    parser.add_argument("--shared", type=Path, default=Path("../shared"))
    parser.add_argument("--out", type=Path, default=Path("tests/data/harness_logs"))
    args = parser.parse_args()
    prompts = (args.shared / "data" / "ifeval" / "input_data.jsonl").resolve()
    responses = args.shared / "data" / "ifeval" / "input_response_data_gpt4_20231107_145030.jsonl"
    if not (args.lmeval or args.inspect):
        run_others(args)
        return
    server = ReplayServer(load_answers(responses), MODEL)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        if args.lmeval:
            run_lmeval(args.lmeval, prompts, server.base_url, args.out.resolve())
        if args.inspect:
            run_inspect(
                args.inspect,
                prompts,
                server.base_url,
                args.out.resolve(),
                (args.shared / "upstream" / "google_ifeval" / "instruction_following_eval").resolve(),
            )
    finally:
        server.shutdown()
    _say(server, "IFEval")
    if server.unknown:
        raise SystemExit(f"the server did not know {len(server.unknown)} prompts, e.g. {server.unknown[0]!r}")
    run_others(args)


def _say(server: ReplayServer, benchmark: str) -> None:
    print(
        f"{benchmark}: requests answered: {server.requests_seen}; matched only stripped: {server.stripped_matches}; "
        f"unknown prompts: {len(server.unknown)}"
    )


def _nltk_data(shared: Path) -> Path:
    """The NLTK data the graders read (punkt_tab, stop words, nltk >= 3.9's English tagger), made
    from ../shared as ifaudit makes its pinned copy, into a scratch folder."""
    sys.path.insert(0, str(HERE.parents[1] / "src"))
    from ifaudit.io.remote.nltk_resources import materialize_nltk
    from ifaudit.tasks.ifbench import NLTK_RESOURCES

    root = Path(tempfile.mkdtemp(prefix="harness-nltk-"))
    return materialize_nltk(root / "nltk_data", NLTK_RESOURCES, [(shared / "data" / "nltk").resolve()]).root


def run_others(args: argparse.Namespace) -> None:
    """lighteval, evalscope, OpenCompass: IFEval on Google's GPT-4 answers; IFBench (300 rows, as
    their hub copies) on IFBench's sample outputs, whose 294 prompts leave 7 unanswered (keys
    268-274: the server answers "" and counts them unknown)."""
    data = {"ifeval": (args.shared / "data" / "ifeval" / "input_data.jsonl").resolve()}
    answers = load_answers(args.shared / "data" / "ifeval" / "input_response_data_gpt4_20231107_145030.jsonl")
    if not args.no_ifbench:
        data["ifbench"] = (args.shared / "data" / "ifbench" / "IFBench_test_300.jsonl").resolve()
        answers.update(load_answers(args.shared / "data" / "ifbench" / "sample_output.jsonl"))
    nltk_data = _nltk_data(args.shared)
    cache = tiktoken_cache([v for v in (args.lighteval, args.opencompass) if v])
    runs: list[tuple[Path | None, Callable[..., None], tuple[Any, ...]]] = [
        (args.lighteval if args.run_lighteval else None, run_lighteval, ()),
        (args.evalscope, run_evalscope, ()),
        (args.opencompass, run_opencompass, (cache,)),
    ]
    for venv, run, extra in runs:
        if venv is None:
            continue
        server = ReplayServer(answers, MODEL)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            run(venv, data, server.base_url, args.out.resolve(), nltk_data, *extra)
        finally:
            server.shutdown()
        _say(server, run.__name__[4:])


if __name__ == "__main__":
    main()
