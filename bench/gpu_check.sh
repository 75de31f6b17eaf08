#!/usr/bin/env bash
# devlint trace on a real NVIDIA GPU: the demo and every crash-class fixture.
#
#   bash bench/gpu_check.sh                      # on the GPU machine, from anywhere
#   DEVLINT_GPU_CHECK_DRY=1 bash bench/gpu_check.sh   # CPU machine: local .venv, no install,
#                                                # no GPU checks (the tracer simulates)
#
# Reports go to $OUT (default ./gpu-out): NAME.json (devlint's report),
# NAME.log, NAME.rc, and doctor.json (`devlint doctor --json`).
# Only reads the GPU (nvidia-smi -L and the CUDA version in its header); it
# changes no setting. Safe to run again: the venv is reused, reports are
# overwritten. Everything is sized to end within 5 minutes.
#
# Environment: OUT, GPU_CHECK_VENV (default /tmp/devlint-gpu-venv),
# TORCH_SPEC (overrides the torch pin chosen below), GPU_CHECK_BUDGET
# (seconds, default 290), GPU_CHECK_TIMEOUT (per program, default 60),
# GPU_CHECK_JOBS (programs at once, default 8).
set -uo pipefail

START=$SECONDS
BUDGET=${GPU_CHECK_BUDGET:-290}
PER_PROGRAM=${GPU_CHECK_TIMEOUT:-60}
JOBS=${GPU_CHECK_JOBS:-8}
DRY=${DEVLINT_GPU_CHECK_DRY:-0}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-./gpu-out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$REPO" || exit 2

left() { echo $((BUDGET - (SECONDS - START))); }
say() { printf '== %s (%ss)\n' "$*" $((SECONDS - START)); }

if [ "$DRY" = 1 ]; then
    say "dry run: local .venv, no install, no GPU assertions"
    PY=$REPO/.venv/bin/python
else
    say "GPUs"
    nvidia-smi -L || { echo "nvidia-smi failed: no NVIDIA driver here" >&2; exit 2; }
    # The driver's highest CUDA version decides which PyPI wheels can run:
    # PyPI's default Linux torch wheels are CUDA 13.0 builds from 2.11 on
    # (driver >= 580), CUDA 12.8 for 2.8-2.10 (driver >= 570) and CUDA 12.6
    # for 2.7. 2.13-2.14 are what the CPU test suite runs (2.13).
    DRIVER_CUDA=$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9]*\)\.\([0-9]*\).*/\1\2/p' | head -1)
    DRIVER_CUDA=${DRIVER_CUDA:-0}
    if [ "$DRIVER_CUDA" -ge 130 ]; then DEFAULT_SPEC='torch>=2.13,<2.15'
    elif [ "$DRIVER_CUDA" -ge 128 ]; then DEFAULT_SPEC='torch>=2.9,<2.11'
    else DEFAULT_SPEC='torch>=2.7,<2.8'; fi
    SPEC=${TORCH_SPEC:-$DEFAULT_SPEC}

    VENV=${GPU_CHECK_VENV:-/tmp/devlint-gpu-venv}
    say "venv $VENV"
    # System site-packages: a CUDA torch already installed there is used as is.
    [ -x "$VENV/bin/python" ] || python3 -m venv --system-site-packages "$VENV" || exit 2
    PY=$VENV/bin/python
    if "$PY" -c 'import sys, torch; sys.exit(not (torch.version.cuda and torch.cuda.is_available()))' 2>/dev/null; then
        say "torch with CUDA already there: not installing torch"
    else
        say "installing $SPEC (driver CUDA $DRIVER_CUDA)"
        timeout 200 "$PY" -m pip install -q --disable-pip-version-check "$SPEC" \
            || { echo "torch install failed or timed out" >&2; exit 2; }
    fi
    say "installing devlint from $REPO"
    # devlint's own dependencies do not include torch, so this keeps the torch chosen above.
    timeout 90 "$PY" -m pip install -q --disable-pip-version-check "$REPO" \
        || { echo "devlint install failed" >&2; exit 2; }
fi

say "devlint doctor (its --json is a recording of this machine for tests/doctor_recordings/)"
timeout 200 "$PY" -m devlint doctor --json >"$OUT/doctor.json" 2>"$OUT/doctor.log"
echo $? >"$OUT/doctor.rc"
"$PY" -m devlint doctor --replay "$OUT/doctor.json" | tail -3

say "torch"
"$PY" -c "import torch; print(torch.__version__, torch.cuda.is_available(), torch.cuda.device_count())" || exit 2
if [ "$DRY" != 1 ] && ! "$PY" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())'; then
    echo "torch sees no GPU: devlint trace would only simulate; stopping" >&2
    exit 2
fi

mapfile -t PROGRAMS < <("$PY" bench/gpu_check.py select)
PROGRAMS=(examples/train_demo.py "${PROGRAMS[@]}")
say "${#PROGRAMS[@]} programs, $JOBS at a time, ${PER_PROGRAM}s each at most"

run_one() {  # one program under devlint trace; the verdict step reads what it leaves
    local program=$1 limit=$2 stem
    stem=$OUT/$(basename "$(dirname "$program")")__$(basename "$program" .py)
    rm -f "$stem".json "$stem".rc
    # Each program in its own scratch directory: fixtures write checkpoints.
    local scratch
    scratch=$(mktemp -d)
    (cd "$scratch" && OMP_NUM_THREADS=1 timeout -k 5 "$limit" "$PY" -m devlint trace \
        --out "$stem.json" --root "$REPO/$(dirname "$program")" \
        "$REPO/$program" >"$stem.log" 2>&1)
    echo $? >"$stem.rc"
    rm -rf "$scratch"
}

skipped=0
for program in "${PROGRAMS[@]}"; do
    remaining=$(( $(left) - 15 ))  # keep time for the verdicts
    if [ "$remaining" -lt 20 ]; then
        [ "$skipped" = 1 ] || say "budget spent: $program and the rest not run"
        skipped=1
        # No .rc means "not run"; drop an earlier run's files so none is mistaken for this one's.
        stem=$OUT/$(basename "$(dirname "$program")")__$(basename "$program" .py)
        rm -f "$stem".json "$stem".log "$stem".rc
        continue
    fi
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    run_one "$program" $(( remaining < PER_PROGRAM ? remaining : PER_PROGRAM )) &
done
wait

say "verdicts (confirmed: a device error or device-mismatch event at or through an expected line)"
"$PY" bench/gpu_check.py verdict "$OUT" "${PROGRAMS[@]}" | tee "$OUT/verdicts.txt"
say "done; reports in $OUT"
