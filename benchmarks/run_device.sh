#!/usr/bin/env bash
# Every measurement that needs a many-core machine with a GPU, in one run, each step
# bounded in time; everything goes under the folder $OUT (or the first argument).
#
#   OUT=/path/to/results KSDAGG=/path/to/ksdagg-checkout bash benchmarks/run_device.sh
#
# KSDAGG is the folder that holds KSDAgg's ``ksdagg`` package (its public repository,
# fetched at measurement time, never committed here); without it bench_gpu.py skips the
# KSDAgg rows. A step that fails or runs out of time is logged and the next one runs.
# Steps and limits (seconds): GPU tests 150, bench_gpu 240, bench_scaling at 1 and 16
# threads 240, bench_svgd 90: at most about 12 minutes.
set -u
cd "$(dirname "$0")/.."
OUT="${1:-${OUT:?set OUT or give the output folder}}"
mkdir -p "$OUT"
: > "$OUT/steps.txt"
export SCIPY_ARRAY_API=1
PY="${PYTHON:-python}"

step() {  # step NAME LIMIT COMMAND...
    local name=$1 limit=$2
    shift 2
    local start=$(date +%s)
    timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    echo "$name: rc=$rc, $(( $(date +%s) - start )) s" | tee -a "$OUT/steps.txt"
}

{
    date -u
    nproc
    grep -m1 "model name" /proc/cpuinfo
    nvidia-smi -L 2>&1
    "$PY" -c "import numpy, numba, scipy, sklearn
print(numpy.__version__, numba.__version__, scipy.__version__, sklearn.__version__)"
    git rev-parse HEAD 2>/dev/null
} > "$OUT/machine.txt" 2>&1

step gpu-tests 150 "$PY" -m pytest -q -p no:cacheprovider tests/test_svgd_array_api.py \
    tests/test_array_api.py
step bench-gpu 240 "$PY" benchmarks/bench_gpu.py "$OUT/gpu" ${KSDAGG:+--ksdagg "$KSDAGG"} \
    --profile --repeat 5
step bench-scaling 240 "$PY" benchmarks/bench_scaling.py "$OUT/scaling" --threads 1 16 \
    --profile --repeat 3
step bench-svgd 90 "$PY" benchmarks/bench_svgd.py --n 100 1000 --repeat 5
