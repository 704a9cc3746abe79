"""Each `ifaudit` job of a finished run, run again alone: its CPU, this checkout's code against a
base version's, alternating (the fixed costs of issue 39: what each process pays to start).

    .venv/bin/python bench/commands.py --work DIR [--base LABEL=SRC ...] [--repeat 5] [--only grade stats]

DIR is the folder of a finished DAG run made with Snakemake's `-p` (bench/README.md shows the
command): each job's shell command is read from its newest log in DIR/.snakemake/log/ and run
again in DIR, in `make run`'s environment (.venv-runtime first on PATH), with the same inputs; it
rewrites its outputs with the same bytes. `--base LABEL=SRC` names a base version's `src` folder
(e.g. `git archive COMMIT src | tar -x -C /tmp/base`), put first on PYTHONPATH for its turn; the
versions take turns, this checkout's last.
CPU is user + sys of the command's process tree (getrusage(RUSAGE_CHILDREN)); the table shows
each side's median and range. `ifaudit counted` (`make run`'s last
word) is timed too; the jobs that make resources (vendor, fetch) and the ones that are not
ifaudit's are left out. Both sides run from bytecode (a first, untimed run of each
compiles it).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv-runtime" / "bin"
SKIPPED = ("vendor", "fetch")
# What Snakemake's shell() sets to a job's threads (1 for every rule of ours): without them
# OpenBLAS's threads spin in every process that imports numpy.
JOB_THREADS = (
    "OMP_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def shell_commands(work: Path) -> list[tuple[str, str]]:
    """(subcommand, shell command) of every ifaudit job in the newest Snakemake log of `work`."""
    logs = sorted((work / ".snakemake" / "log").glob("*.snakemake.log"))
    if not logs:
        raise SystemExit(f"commands.py: no Snakemake log in {work / '.snakemake' / 'log'}")
    found = []
    for line in logs[-1].read_text(encoding="utf-8").splitlines():
        command = line.removeprefix("Shell command: ")
        match = re.match(r"(?:\w+=\S+ )*ifaudit ([\w-]+)", command)
        if command != line and match and match.group(1) not in SKIPPED:
            found.append((match.group(1), command))
    if not found:
        raise SystemExit(f"commands.py: no ifaudit job in {logs[-1]} (was the DAG run with -p?)")
    return [*found, ("counted", "ifaudit counted")]  # make run's last word, after the DAG


def cpu_of(command: str, work: Path, env: dict[str, str]) -> float:
    """User + sys seconds of `command` and its children, run by sh in `work`. `counted` may say
    no (the jobs run again rewrote the run's manifest, so its recorded content changed): it has
    done all of its work by then."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        ["sh", "-c", command], cwd=work, env=env, check=command != "ifaudit counted", stdout=subprocess.DEVNULL
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument(
        "--base",
        nargs="*",
        default=(),
        metavar="LABEL=SRC",
        help="base versions' src folders, timed in turn with this one",
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=(), help="these subcommands only")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IFAUDIT_") and k not in ("PYTHONPATH",)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(dict.fromkeys(JOB_THREADS, "1"))
    sides = {
        label: {**env, "PYTHONPATH": str(Path(src).resolve())}
        for label, _, src in (b.partition("=") for b in args.base)
    }
    sides["this"] = env
    jobs = [(name, command) for name, command in shell_commands(args.work) if not args.only or name in args.only]
    times: dict[tuple[int, str], list[float]] = {}
    for index, (_, command) in enumerate(jobs):
        for side, side_env in sides.items():
            cpu_of(command, args.work, side_env)  # compiles the side's bytecode, warms the page cache
            times[index, side] = []
        for _ in range(args.repeat):  # the sides alternate, so a change of load meets both
            for side, side_env in sides.items():
                times[index, side].append(cpu_of(command, args.work, side_env))
    print("| job | " + " | ".join(f"{side} CPU, median (range)" for side in sides) + " |")
    print("|---|" + "---|" * len(sides))
    for index, (name, _) in enumerate(jobs):
        cells = [
            f"{statistics.median(found):.3f} s ({min(found):.3f}-{max(found):.3f})"
            for found in (times[index, side] for side in sides)
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
