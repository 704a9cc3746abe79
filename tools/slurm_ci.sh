#!/usr/bin/env bash
# CI's cluster step: a real single-node Slurm cluster on localhost (tools/slurm_local.sh: Debian's
# slurm-wlm and munge, accounting off), the offline DAG run through `snakemake --profile
# profiles/slurm`, and the grades compared byte for byte with a local run of the same DAG. The
# daemons stop at the end.
# Runs as root (CI does). Works with config/offline.yaml as it stands, stand-in or upstream:
# its relative paths are resolved against the project first, since each run has its own folder.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
shared=$(cd "${IFAUDIT_SHARED:-../shared}" && pwd)
source tools/slurm_local.sh  # the cluster, up until this script exits ($work, SLURM_CONF)

step "the offline configuration, its paths made absolute"
configs=("$repo/config/config.yaml" "$work/offline.yaml")
.venv/bin/python - "$repo" "$shared" "$work/offline.yaml" <<'PY'
import sys
from pathlib import Path

import yaml

repo, shared, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
config = yaml.safe_load((repo / "config/offline.yaml").read_text())
config.update(mirror=str(shared / "data"), nltk_mirror=str(shared / "data/nltk"))
config["grader_sources"] = [str((repo / source).resolve()) for source in config.get("grader_sources", [])]
out.write_text(yaml.safe_dump(config))
print(yaml.safe_dump(config), end="")
PY
export PATH="$repo/.venv/bin:$PATH"
dag() { (cd "$1" && shift && snakemake -s "$repo/Snakefile" --configfile "${configs[@]}" "$@"); }

step "local run"
mkdir -p "$work/local"
dag "$work/local" --cores 2 --quiet rules host

step "Slurm run: snakemake --profile profiles/slurm"
mkdir -p "$work/cluster"
# The cluster has no accounts (accounting off); status checks start 5 s after submission.
dag "$work/cluster" --profile "$repo/profiles/slurm" --slurm-no-account \
    --slurm-init-seconds-before-status-checks 5 --quiet rules host
echo "Slurm jobs that ended with exit 0: $(grep -c '_job_complete: JobId=[0-9]* WEXITSTATUS 0' "$work/log/slurmctld.log")"

step "compare the grades"
cd "$work"
found=0
for grades in local/results/*/grades.jsonl; do
    run=${grades#local/results/}
    sha256sum "$grades" "cluster/results/$run"
    cmp "$grades" "cluster/results/$run"
    found=$((found + 1))
done
[ "$found" -gt 0 ]
echo "cluster step: $found runs' grades from Slurm are byte-identical to the local run's"
