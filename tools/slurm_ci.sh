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

step "a 50-run audit in batches on Slurm (batch_runs: 10, docs/scale.md)"
mkdir -p "$work/batched"
head -n 20 "$shared/data/ifeval/input_response_data_gpt4_20231107_145030.jsonl" > "$work/first_20.jsonl"
"$repo/.venv/bin/python" - "$work/first_20.jsonl" "$work/batched/batched.yaml" <<'PY'
import json
import sys

responses, out = sys.argv[1], sys.argv[2]
run = {"task": "ifeval", "prompts": "ifeval_prompts_github", "responses": "first_20"}
runs = {"gpt4_google": None, **{f"copy_{index:02d}": run for index in range(1, 51)}}
config = {"batch_runs": 10, "datasets": {"first_20": {"path": responses}}, "runs": runs}
open(out, "w").write(json.dumps(config))
PY
before=$(grep -c '_slurm_rpc_submit_batch_job' "$work/log/slurmctld.log" || true)
(cd "$work/batched" && snakemake -s "$repo/Snakefile" --configfile "${configs[@]}" "$work/batched/batched.yaml" \
    --profile "$repo/profiles/slurm" --slurm-no-account --slurm-init-seconds-before-status-checks 5 --quiet rules host)
after=$(grep -c '_slurm_rpc_submit_batch_job' "$work/log/slurmctld.log" || true)
echo "Slurm jobs for 50 runs in batches of 10: $((after - before))"
cd "$work/batched/results"
[ "$(ls -d copy_*/ | wc -l)" -eq 50 ]
for summary in copy_*/summary.json; do grep -q '"counted": true' "$summary"; done
[ "$(sha256sum copy_*/grades.jsonl | cut -d' ' -f1 | sort -u | wc -l)" -eq 1 ]
echo "cluster step: 50 runs graded in 5 batches on Slurm, each counted, their grades one and the same bytes"
