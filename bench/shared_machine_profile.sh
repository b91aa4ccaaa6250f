#!/bin/bash
# Where a job's time goes beside one busy process: `perf record -g` of examples/softmax.json
# (10,000 steps, 2 threads) beside `while :; do :; done`, for each build given, then each
# profile by shared object and its top symbols, and each run's wall and CPU time
# (docs/benchmarks.md#a-shared-machine).
#   bench/shared_machine_profile.sh OLD_BUILD NEW_BUILD ...    (build directories; needs perf)
set -euo pipefail
cd "$(dirname "$0")/.."
(($#)) || { echo "usage: $0 BUILD_DIR..." >&2; exit 2; }
work=$(mktemp -d)
trap 'kill $hog 2>/dev/null || true; rm -rf "$work"' EXIT
/usr/bin/python3 -c "import json,sys; s=json.load(open('examples/softmax.json')); s['max_steps']=10000; json.dump(s, open(sys.argv[1],'w'))" "$work/softmax.json"
# An older build's engine ran on OpenBLAS: the kernels it would pick if it knew this CPU.
core=$(cd bench && /usr/bin/python3 -c "from compare_builds import openblas_core; print(openblas_core() or '')")
sh -c 'while :; do :; done' & hog=$!
i=0
for build in "$@"; do
  i=$((i + 1))
  /usr/bin/time -f "$build: %e s wall, %U s user, %S s sys" env ${core:+OPENBLAS_CORETYPE=$core} \
    perf record -q -F 499 -g -o "$work/$i.data" -- "$build/daemon/trainingd" run "$work/softmax.json" \
    --threads 2 --checkpoint-dir "$work/run$i" > /dev/null 2> "$work/$i.err"
  tail -1 "$work/$i.err"
done
kill $hog
i=0
for build in "$@"; do
  i=$((i + 1))
  echo "== $build: by shared object"
  perf report -i "$work/$i.data" --no-children --sort dso --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -6
  echo "== $build: top symbols"
  perf report -i "$work/$i.data" --no-children --sort dso,sym --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -10
done
