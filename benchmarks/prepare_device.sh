#!/usr/bin/env bash
# Prepare, on the development machine, what benchmarks/run_device.sh needs on a machine
# that has no network: the folder .device-carry (ignored by git), to be carried with
# the working tree.
#
#   bash benchmarks/prepare_device.sh [KSDAGG_GIT_DIR]
#
# - .device-carry/wheels: the pure-Python wheels of skstein's dependencies that such a
#   machine may lack (array-api-compat; array-api-strict for the tests).
# - .device-carry/ksdagg: KSDAgg's ``ksdagg`` package from a clone of its public
#   repository (antoninschrab/ksdagg) given as a git directory, taken at measurement
#   time and never committed here.
set -eu
cd "$(dirname "$0")/.."
DEST=.device-carry
rm -rf "$DEST"
mkdir -p "$DEST/wheels"
python3 -m pip download -q --no-deps --only-binary=:all: -d "$DEST/wheels" \
    "array-api-compat>=1.9" "array-api-strict>=2.2"
if [ $# -ge 1 ]; then
    git --git-dir="$1" archive HEAD ksdagg | tar -x -C "$DEST"
fi
ls -R "$DEST"
