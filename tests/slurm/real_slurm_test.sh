#!/usr/bin/env bash
# A real single-node Slurm in a temporary folder (Debian's munged, slurmctld and slurmd, on ports
# of their own, nothing installed system-wide touched): `paceline sweep --slurm` submits a
# two-point simulated sweep, Slurm runs both array tasks, and `paceline sweep --collect` builds
# the sweep's report from them.
#   real_slurm_test.sh PACELINE_BINARY
# Exit 77 (skipped) when Slurm or munge is not installed, or when not run as root (slurmd).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
paceline=${1:?usage: real_slurm_test.sh PACELINE_BINARY}
for tool in munged munge slurmctld slurmd sbatch squeue sinfo; do
  if ! command -v "$tool" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$tool" ]; then
    echo "SKIPPED: $tool is not installed (scripts/setup installs slurmctld, slurmd and munge)"
    exit 77
  fi
done
# slurmd starts job steps as the submitting user and needs root for that; a CI that runs as
# another user skips rather than fails on a daemon it cannot start.
if [ "$(id -u)" != 0 ]; then
  echo "SKIPPED: slurmd needs root (this runs as $(id -un))"
  exit 77
fi
PATH=$PATH:/usr/sbin
tmp=$(mktemp -d -t paceline-slurm-test.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for log in slurmctld.log slurmd.log munged.log; do
    [ -f "$tmp/$log" ] && { echo "--- $log"; tail -n 20 "$tmp/$log"; }
  done
  exit 1
}

mkdir -p "$tmp/state" "$tmp/spool"
head -c 1024 /dev/urandom >"$tmp/munge.key"
chmod 400 "$tmp/munge.key"
# --force: munged refuses a key and socket outside its own folders otherwise.
munged --foreground --force --key-file="$tmp/munge.key" --socket="$tmp/munge.sock" \
  --pid-file="$tmp/munged.pid" --log-file="$tmp/munged.log" --seed-file="$tmp/munge.seed" \
  >"$tmp/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do [ -S "$tmp/munge.sock" ] && break; sleep 0.1; done
[ -S "$tmp/munge.sock" ] || fail "munged did not start"

host=$(hostname -s)
user=$(id -un)
# Ports below the kernel's ephemeral range (32768 and up), so that no outgoing connection of a
# busy machine can hold one; a port that is taken anyway makes slurmctld exit at once, and the
# next attempt takes others.
write_conf() {
cat >"$tmp/slurm.conf" <<CONF
ClusterName=paceline-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$tmp/munge.sock
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
}
export SLURM_CONF=$tmp/slurm.conf
started=""
for attempt in 1 2 3 4 5 6; do
  port=$((20000 + ((RANDOM + $$ * attempt) % 5000) * 2))
  write_conf
  : >"$tmp/slurmctld.out"
  slurmctld -D -i -f "$SLURM_CONF" >"$tmp/slurmctld.out" 2>&1 &
  ctld=$!
  sleep 1
  if kill -0 "$ctld" 2>/dev/null && ! grep -q "Address already in use" "$tmp/slurmctld.out"; then
    pids+=("$ctld")
    started=yes
    break
  fi
  kill "$ctld" 2>/dev/null || true
  wait "$ctld" 2>/dev/null || true
done
[ -n "$started" ] || fail "slurmctld did not start on any of 6 port pairs: $(tail -n 3 "$tmp/slurmctld.out")"
slurmd -D -f "$SLURM_CONF" -N "$host" >"$tmp/slurmd.out" 2>&1 &
pids+=($!)
deadline=$((SECONDS + 60))
while [ "$SECONDS" -lt "$deadline" ]; do
  timeout 5 sinfo -h -o '%t' 2>/dev/null | grep -q idle && break
  sleep 0.2
done
timeout 5 sinfo -h -o '%t' 2>/dev/null | grep -q idle || fail "the node did not come up idle: $(timeout 5 sinfo 2>&1)"

"$paceline" sweep --slurm --sim --concurrency 1,2 --out "$tmp/sweep" \
  --traces "$root/../shared/traces/agentx" --duration 20 --isl-scale 0.05 --osl-scale 0.05 \
  --warmup-requests-per-lane 0 >"$tmp/submit.out" 2>&1 || { cat "$tmp/submit.out"; fail "submission"; }
job=$(jq -r '.job_id' "$tmp/sweep/slurm.json")
[ -n "$job" ] && [ "$job" != null ] || fail "no job id in slurm.json"
echo "submitted job $job"
deadline=$((SECONDS + 180))
while [ "$SECONDS" -lt "$deadline" ]; do
  [ -z "$(timeout 5 squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 0.2
done
[ -z "$(timeout 5 squeue -h -j "$job" 2>/dev/null)" ] || fail "job $job still queued or running after 180 s"

"$paceline" sweep --collect "$tmp/sweep" >"$tmp/collect.out" 2>&1 ||
  { cat "$tmp/collect.out" "$tmp"/sweep/slurm/*.out; fail "collect"; }
grep -q '| CONC |' "$tmp/collect.out" || { cat "$tmp/collect.out"; fail "no table"; }
[ "$(jq '.runs | length' "$tmp/sweep/sweep.json")" = 2 ] || fail "sweep.json does not list 2 runs"
[ -f "$tmp/sweep/report.html" ] || fail "no report.html"
for c in 1 2; do
  [ "$(cat "$tmp/sweep/conc-$c/exit_status")" = 0 ] || fail "task of conc-$c did not exit 0"
done
echo "PASS"
