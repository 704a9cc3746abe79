#!/usr/bin/env bash
# A real single-node Slurm cluster on localhost: Debian's slurm-wlm and munge, munged on its own
# socket with a fresh key, slurmctld and slurmd with accounting off, in a temporary folder; the
# daemons stop (and the folder goes) when the shell that brought it up exits. Runs as root.
#
# Sourced (tools/slurm_ci.sh): `source tools/slurm_local.sh` brings the cluster up, sets $work
# (the temporary folder, where slurmctld's log is log/slurmctld.log) and SLURM_CONF, and traps EXIT.
# Run: `bash tools/slurm_local.sh COMMAND [ARG...]` brings it up, runs COMMAND (with
# IFAUDIT_SLURM_WORK=$work) and stops it, exiting with COMMAND's status (bench/slurm.py).
set -euo pipefail
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

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    step "$*"
    IFAUDIT_SLURM_WORK=$work "$@"
fi
