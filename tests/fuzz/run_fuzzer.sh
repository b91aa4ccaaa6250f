#!/usr/bin/env bash
# Runs one libFuzzer target for a while with the project's options; `make fuzz` and the smoke
# tests (tests/fuzz/CMakeLists.txt) both call it, so both check the same things.
#
#   run_fuzzer.sh BINARY NAME SECONDS WORKDIR [extra libFuzzer flags...]
#
# The working corpus is WORKDIR/corpus/NAME (created, kept between runs, outside the repository);
# the repository's seeds (tests/fuzz/corpus/NAME) and regression inputs
# (tests/fuzz/regressions/NAME) are read-only inputs that libFuzzer replays first. A crash's input
# lands in WORKDIR/artifacts/NAME/. Exit status: libFuzzer's (0 = nothing found).
set -euo pipefail
if (($# < 4)); then
  echo "usage: $0 BINARY NAME SECONDS WORKDIR [libFuzzer flags...]" >&2
  exit 2
fi
binary=$1 name=$2 seconds=$3 work=$4
shift 4
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
corpus="$work/corpus/$name"
artifacts="$work/artifacts/$name"
mkdir -p "$corpus" "$artifacts"
inputs=("$corpus")
for dir in "$here/corpus/$name" "$here/regressions/$name"; do
  [[ -d $dir ]] && inputs+=("$dir")
done
# -malloc_limit_mb: no input of a few KB may make a reader allocate 64 MiB (sizes in the input
# must be checked against the input, not trusted). -timeout: one input in 10 s is a hang.
# -max_len: room for deeply nested JSON and multi-request HTTP inputs. -entropic=0: libFuzzer's
# default (entropic) scheduler spent half of the HTTP target's time in its own bookkeeping
# (InputCorpus::UpdateFeatureFrequency, perf): 248 exec/s with it, 1192 without, same corpus.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=64 \
  -max_len=65536 -entropic=0 -print_final_stats=1 -artifact_prefix="$artifacts/" "$@" "${inputs[@]}"
