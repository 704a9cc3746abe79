#!/usr/bin/env bash
# CI's cluster step: a real single-node Slurm cluster on localhost (Debian's slurm-wlm and munge,
# accounting off), the offline DAG run through `snakemake --profile profiles/slurm`, and the
# grades compared byte for byte with a local run of the same DAG. The daemons stop at the end.
# Runs as root (CI does). Works with config/offline.yaml as it stands, stand-in or upstream:
# its relative paths are resolved against the project first, since each run has its own folder.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
shared=$(cd "${IFAUDIT_SHARED:-../shared}" && pwd)
work=$(mktemp -d /tmp/ifaudit-slurm.XXXXXX) && chmod 755 "$work"  # munged runs as munge
# Slurm's own place for its configuration: steps inside a job (srun) look for it there. A
# configuration already there is put back at the end.
export SLURM_CONF=/etc/slurm/slurm.conf
pids=()
stop() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done; done
    if [ -e "$work/slurm.conf.before" ]; then mv "$work/slurm.conf.before" "$SLURM_CONF"; else rm -f "$SLURM_CONF"; fi
    rm -rf "$work"
}
trap stop EXIT

step() { printf '\n== %s (%ss)\n' "$1" "$SECONDS"; }

step "slurm-wlm and munge from Debian"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
apt-get install -o DPkg::Lock::Timeout=600 -y -qq slurm-wlm munge >/dev/null
dpkg-query -W slurm-wlm munge

step "munge: a fresh key, munged on its own socket"
mkdir -p "$work/munge" "$work/spool/ctld" "$work/spool/d" "$work/log"
chown munge: "$work/munge" && chmod 755 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1 count=1024 status=none
chown munge: "$work/munge/munge.key" && chmod 400 "$work/munge/munge.key"
runuser -u munge -- /usr/sbin/munged --key-file "$work/munge/munge.key" \
    --socket "$work/munge/munge.socket" --pid-file "$work/munge/munged.pid" \
    --log-file "$work/munge/munged.log" --seed-file "$work/munge/munged.seed"
pids+=("$(cat "$work/munge/munged.pid")")

step "slurmctld and slurmd on localhost (accounting off)"
cpus=$(nproc)
memory_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
mkdir -p "$(dirname "$SLURM_CONF")"
[ -e "$SLURM_CONF" ] && mv "$SLURM_CONF" "$work/slurm.conf.before"
cat > "$SLURM_CONF" <<CONF
ClusterName=ifaudit-ci
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=300
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
StateSaveLocation=$work/spool/ctld
SlurmdSpoolDir=$work/spool/d
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=ci Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -i
until [ -s "$work/slurmctld.pid" ]; do sleep 0.2; done
pids+=("$(cat "$work/slurmctld.pid")")
slurmd -N localhost
until [ -s "$work/slurmd.pid" ]; do sleep 0.2; done
pids+=("$(cat "$work/slurmd.pid")")
for _ in $(seq 60); do sinfo -h -o %T | grep -qx idle && break; sleep 1; done
sinfo

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
