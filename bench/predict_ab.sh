#!/bin/bash
# predict_ab.sh DIR MODEL BATCH ROUNDS SECONDS [THREADS]: two builds of predict_bench and
# onnxruntime in turn, ROUNDS rounds, so a busy machine's drift lands on all three
# (docs/benchmarks.md#batch-1-packed-dense-kernels). DIR holds MODEL/ (a checkpoint directory
# with model.json), MODEL.onnx (`trainingd export DIR/MODEL -o DIR/MODEL.onnx`) and the two
# binaries predict_bench_base and predict_bench_new. Prints "base|new|ort examples/s p50_ms"
# lines. EXAMPLE_SHAPE (onnx_bench.mjs) defaults to [28,28,1].
set -euo pipefail
dir=$1; m=$2; b=$3; rounds=$4; s=$5; t=${6:-2}
here=$(cd "$(dirname "$0")" && pwd)
for _ in $(seq "$rounds"); do
  for v in base new ort; do
    if [ "$v" = ort ]; then out=$(node "$here/onnx_bench.mjs" "$dir/$m.onnx" "$b" "$s" "$t")
    else out=$("$dir/predict_bench_$v" "$dir/$m" "$b" "$s" "$t"); fi
    echo "$v $(echo "$out" | /usr/bin/python3 -c 'import json, sys; d = json.loads(sys.stdin.read()); print(round(d["examples_per_sec"], 1), round(d["p50_ms"], 4))')"
  done
done
