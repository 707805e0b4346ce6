#!/bin/bash
# Rendered by Hangar (hangar.launch.targets.slurm_render): one copy runs in each node's
# srun step, its role as the first argument. A private temp dir, raised limits, this
# node's IP and environment, then vLLM (or Ray, then vLLM). The trap stops the children
# it started, by PID, and removes the temp dir, on EXIT and on TERM.
set -euo pipefail

ROLE=${1:?usage: node.sh ROLE}
RUN_DIR=/shared/hangar/runs/20261201-120000-abcd
PYTHON=python3
IFACE=''
GPUS_PER_NODE=1
STOP_GRACE_S=20
KILL_WAIT=${HANGAR_KILL_WAIT:-30}
if ! [[ "$KILL_WAIT" =~ ^[0-9]+$ ]]; then KILL_WAIT=30; fi
if ((STOP_GRACE_S > KILL_WAIT - 2)); then STOP_GRACE_S=$((KILL_WAIT > 3 ? KILL_WAIT - 2 : 1)); fi
HELPER="$RUN_DIR/hangar_node.py"
NODE=${SLURMD_NODENAME:-$(hostname -s)}
export HANGAR_RUN_ID=20261201-120000-abcd

# Node-local and private: created here (mkdir fails if the path exists, so a shared
# tmp_root or somebody else's directory is never used), the same path on every node
# (Ray <= 2.54 gives its workers the head's temp path).
TMP_ROOT=${SLURM_TMPDIR:-/tmp}
JOB_TMP="$TMP_ROOT/hg${SLURM_JOB_ID:?}.${SLURM_RESTART_COUNT:-0}"
if ! mkdir -m 0700 -- "$JOB_TMP"; then
  echo "hangar: cannot create the private temp dir $JOB_TMP on $NODE; target.slurm.tmp_root must be node-local (not shared) and writable" >&2
  exit 1
fi

CHILD_PIDS=()
# shellcheck disable=SC2317  # run by the traps below, which shellcheck cannot follow
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*)}
  [[ ${stat:1:1} != Z ]]
}
# shellcheck disable=SC2317  # run by the traps below, which shellcheck cannot follow
stop_children() {
  local pid deadline
  for pid in ${CHILD_PIDS[@]+"${CHILD_PIDS[@]}"}; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  deadline=$((SECONDS + STOP_GRACE_S))
  for pid in ${CHILD_PIDS[@]+"${CHILD_PIDS[@]}"}; do
    while alive "$pid" && ((SECONDS < deadline)); do
      sleep 0.2  # poll until it is gone, bounded by the deadline
    done
    kill -KILL "$pid" 2>/dev/null || true
  done
}
# shellcheck disable=SC2317  # run by the traps below, which shellcheck cannot follow
cleanup() {
  # Ignore, not default: scancel TERMs this task and the batch step's USR2 arrives
  # moments later; with the default action the second signal kills us before the rm.
  trap - EXIT
  trap '' TERM INT USR2
  stop_children
  rm -rf -- "$JOB_TMP"
}
trap cleanup EXIT
# USR2: the batch step's "stop" (srun forwards it; a SIGTERM to srun would SIGKILL us).
trap 'cleanup; exit 143' TERM INT USR2

# A finite address-space limit breaks CUDA's virtual reservations; raise both soft limits
# to the hard ones and log the result in one fixed format (the doctor reads it).
if ! ulimit -S -v unlimited 2>/dev/null; then
  ulimit -S -v "$(ulimit -H -v)"
  echo "hangar: the hard ulimit -v on $NODE is $(ulimit -H -v) KiB and cannot be raised; CUDA may fail to reserve memory (ask the site to lift it)" >&2
fi
ulimit -S -n "$(ulimit -H -n)" 2>/dev/null || true
echo "hangar: ulimit -v $(ulimit -S -v) -n $(ulimit -S -n) on $NODE"

export TMPDIR="${JOB_TMP}"
export RAY_TMPDIR="${JOB_TMP}"
export VLLM_CACHE_ROOT="${JOB_TMP}"/vllm
export TORCHINDUCTOR_CACHE_DIR="${JOB_TMP}"/torchinductor
export TRITON_CACHE_DIR="${JOB_TMP}"/triton
export PYTHONUNBUFFERED=1
export HF_HUB_CACHE="${HANGAR_HF_HUB}"
export VLLM_WORKAROUND=1
# This node's own address, set here in its step (one exported at the top of the batch
# script would give every node the head's IP).
if [[ "$NODE" == "$HANGAR_HEAD_NODE" ]]; then
  VLLM_HOST_IP=$HANGAR_HEAD_IP
else
  VLLM_HOST_IP=$("$PYTHON" "$HELPER" ip --iface "$IFACE" --peer "$HANGAR_HEAD_IP")
fi
export VLLM_HOST_IP
echo "hangar: $ROLE on $NODE, VLLM_HOST_IP=${VLLM_HOST_IP:-unset}, temp dir $JOB_TMP"

if [[ -n "${SLURM_GPUS_ON_NODE:-}" && "$SLURM_GPUS_ON_NODE" != "$GPUS_PER_NODE" ]]; then
  echo "hangar: $NODE has $SLURM_GPUS_ON_NODE GPU(s) in its step (SLURM_GPUS_ON_NODE), the deployment expects $GPUS_PER_NODE per node (resources.gpus)" >&2
  exit 1
fi

run_main() {
  "$@" &
  local pid=$!
  CHILD_PIDS+=("$pid")
  local rc=0
  wait "$pid" || rc=$?
  exit "$rc"
}

case "$ROLE" in
  single)
    SERVE=(python3 -m vllm.entrypoints.cli.main serve org/tiny-llama --host "${VLLM_HOST_IP}" --port 8000 --served-model-name org/tiny-llama --wk)
    run_main "${SERVE[@]}"
    ;;
  *)
    echo "hangar: unknown role $ROLE" >&2
    exit 2
    ;;
esac
