#!/usr/bin/env bash
# make test: runs the named suites one after the other -- `make <suite>-build` (or `make build` for
# release), then `make test-<suite>` -- and stops at the first that fails. At the end, whether or
# not they passed, it prints how long each build and each test run took, the total, and the ten
# slowest tests of each suite that ran (from the JUnit file ctest wrote beside its build).
# Usage: tools/run-suites.sh release asan tsan   (fuzz: the coverage build's smoke tests)
set -uo pipefail
cd "$(dirname "$0")/.."
make=${MAKE:-make}

declare -A build_dir=([release]=${BUILD:-build} [asan]=${ASAN_BUILD:-build-asan}
                      [fuzz]=${FUZZ_BUILD:-build-fuzz} [tsan]=${TSAN_BUILD:-build-tsan})
declare -A build_target=([release]=build [asan]=asan-build [fuzz]=fuzz-build [tsan]=tsan-build)

start=$SECONDS
summary=()
ran=()
status=0
timed() {  # timed LABEL make-target: runs it, appends "LABEL  N s" to the summary
  local label=$1 target=$2 t0=$SECONDS
  "$make" --no-print-directory "$target"
  local rc=$?
  summary+=("$(printf '%-14s %5d s%s' "$label" $((SECONDS - t0)) "$( ((rc)) && echo '  FAILED')")")
  return $rc
}
for suite in "$@"; do
  [[ -n ${build_target[$suite]:-} ]] || { echo "run-suites: unknown suite '$suite'" >&2; exit 2; }
  timed "$suite build" "${build_target[$suite]}" || { status=$?; break; }
  rm -f "${build_dir[$suite]}/ctest-junit.xml"
  ran+=("$suite")
  timed "$suite tests" "test-$suite" || { status=$?; break; }
done

echo
echo "== make test: $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s in all ($(nproc) cores)"
printf '   %s\n' "${summary[@]}"
for suite in "${ran[@]}"; do
  junit=${build_dir[$suite]}/ctest-junit.xml
  [[ -f $junit ]] || continue
  echo "== the slowest tests of $suite"
  /usr/bin/python3 - "$junit" <<'PY'
import sys
import xml.etree.ElementTree as ET

cases = [(float(c.get("time", 0)), c.get("name")) for c in ET.parse(sys.argv[1]).iter("testcase")]
for seconds, name in sorted(cases, reverse=True)[:10]:
    print("   %7.1f s  %s" % (seconds, name))
PY
done
exit $status
