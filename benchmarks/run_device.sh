#!/usr/bin/env bash
# Every measurement that needs a many-core machine with a GPU, in one run, each step
# bounded in time.
#
#   OUT=/path/to/results bash benchmarks/run_device.sh
#
# Prepare first, where there is a network: ``bash benchmarks/prepare_device.sh
# KSDAGG_GIT_DIR`` fills the ignored folder .device-carry (carry it with the working
# tree): wheels of the dependencies such a machine may lack, installed by this script
# under /tmp/skstein-site, and KSDAgg's ``ksdagg`` package (its public repository,
# fetched at measurement time, never committed here). KSDAGG may name another folder
# holding that package; without one bench_gpu.py skips the KSDAgg rows. skstein runs
# from this checkout (PYTHONPATH), uninstalled.
#
# Each step writes its log and files under $WORK; after each step $OUT gets steps.txt
# (every step's exit status and seconds) and results.tar.gz (all of $WORK so far), so
# two files come back whatever stops the run. A step that fails or runs out of time is
# logged and the next one runs. Steps, most wanted first, and limits (seconds):
# bench_gpu 200, bench_scaling at 1 and 16 threads 180, the GPU tests 100, bench_svgd
# 50, the maxSKSD rows with glibc's own malloc thresholds (SKSTEIN_MALLOC=0) 60: at
# most 590 s, inside one 600 s call (give it timeout_s=600).
#
# SMOKE=1 rehearses the run without a GPU: bench_gpu on array-api-strict with small
# cases, bench_scaling with --quick at 1 and 2 threads.
set -u
cd "$(dirname "$0")/.."
OUT="${1:-${OUT:?set OUT or give the output folder}}"
WORK="${WORK:-/tmp/skstein-device}"
mkdir -p "$OUT"
rm -rf "$WORK"
mkdir -p "$WORK"
: > "$WORK/steps.txt"
export SCIPY_ARRAY_API=1 PYTHONUNBUFFERED=1
PY="${PYTHON:-python3}"
CARRY=.device-carry
SITE=/tmp/skstein-site
if compgen -G "$CARRY/wheels/*.whl" > /dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" \
        "$CARRY"/wheels/*.whl > "$WORK/wheels.log" 2>&1 || echo "wheels: install failed"
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [ -z "${KSDAGG:-}" ] && [ -d "$CARRY/ksdagg" ]; then
    KSDAGG="$PWD/$CARRY"
fi

pack() {
    cp "$WORK/steps.txt" "$OUT/steps.txt"
    tar -czf "$OUT/results.tar.gz" -C "$WORK" .
}

step() {  # step NAME LIMIT COMMAND...
    local name=$1 limit=$2
    shift 2
    local start=$(date +%s)
    timeout "$limit" "$@" > "$WORK/$name.log" 2>&1
    local rc=$?
    echo "$name: rc=$rc, $(( $(date +%s) - start )) s" | tee -a "$WORK/steps.txt"
    pack
}

{
    date -u
    nproc
    grep -m1 "model name" /proc/cpuinfo
    nvidia-smi -L 2>&1
    "$PY" -c "import numpy, numba, scipy, sklearn, array_api_compat, skstein
print(numpy.__version__, numba.__version__, scipy.__version__, sklearn.__version__,
      array_api_compat.__version__, skstein.__file__)"
    git rev-parse HEAD 2>/dev/null
} > "$WORK/machine.txt" 2>&1
pack

if [ "${SMOKE:-0}" = 1 ]; then
    GPU_ARGS=(--lib strict --quick --repeat 2 --sampler-iters 3)
    SCALING_ARGS=(--threads 1 2 --quick --repeat 2 --trials 16)
    SVGD_ARGS=(--n 100 --repeat 2)
else
    GPU_ARGS=(--profile --repeat 5)
    SCALING_ARGS=(--threads 1 16 --profile --repeat 3)
    SVGD_ARGS=(--n 100 1000 --repeat 5)
fi
step bench-gpu 200 "$PY" benchmarks/bench_gpu.py "$WORK/gpu" ${KSDAGG:+--ksdagg "$KSDAGG"} \
    "${GPU_ARGS[@]}"
step bench-scaling 180 "$PY" benchmarks/bench_scaling.py "$WORK/scaling" "${SCALING_ARGS[@]}"
step gpu-tests 100 "$PY" -m pytest -q -p no:cacheprovider tests/test_svgd_array_api.py \
    tests/test_array_api.py
step bench-svgd 50 "$PY" benchmarks/bench_svgd.py "${SVGD_ARGS[@]}"
# the maxSKSD trials with glibc's dynamic malloc thresholds (the page faults that
# skstein's fixed thresholds remove), against the same rows of bench-scaling
SKSTEIN_MALLOC=0 step bench-malloc 60 "$PY" benchmarks/bench_scaling.py "$WORK/malloc" \
    "${SCALING_ARGS[@]}" --only maxsksd-trial maxsksd-crossfit
