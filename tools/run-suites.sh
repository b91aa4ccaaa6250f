#!/usr/bin/env bash
# make test: runs the named suites in order -- `make <suite>-build` (or `make build` for release),
# then `make test-<suite>` -- and stops at the first that fails. At the end, whether or not they
# passed, it prints how long each build and each test run took, the total, and the ten slowest
# tests of each suite that ran (from the JUnit file ctest wrote beside its build).
#
# The first suite's build runs alone. Each later suite's build starts in the background, as an
# idle task (SCHED_IDLE), as soon as the suite before it is built, and runs beside that suite's
# tests: they wait on daemons, browsers, MPI ranks and Slurm for about a third of their time (the
# Release suite's MPI and Slurm tests, which run alone, for half of theirs), and the build takes
# those idle cycles. The tests keep the CPU whenever they want it: a task that wakes preempts an
# idle-policy one at once, where a nice-19 one runs on to the end of its slice
# (e2e.distributed_daemon, whose ranks exchange many small messages, took 34 s alone, 45 s beside
# two SCHED_IDLE busy loops and 99 s beside two at nice 19). A background build's output is
# printed when its tests are about to start.
# Usage: tools/run-suites.sh release asan tsan   (fuzz: the coverage build's smoke tests)
set -uo pipefail
cd "$(dirname "$0")/.."
make=${MAKE:-make}

declare -A build_dir=([release]=${BUILD:-build} [asan]=${ASAN_BUILD:-build-asan}
                      [fuzz]=${FUZZ_BUILD:-build-fuzz} [tsan]=${TSAN_BUILD:-build-tsan})
declare -A build_target=([release]=build [asan]=asan-build [fuzz]=fuzz-build [tsan]=tsan-build)
for suite in "$@"; do
  [[ -n ${build_target[$suite]:-} ]] || { echo "run-suites: unknown suite '$suite'" >&2; exit 2; }
done

start=$SECONDS
summary=()
ran=()
status=0
logs=$(mktemp -d)
bg_pid=
bg_suite=
bg_start=0
stop_background() {
  [[ -n $bg_pid ]] && kill -TERM -- "-$bg_pid" 2>/dev/null && wait "$bg_pid" 2>/dev/null
  bg_pid=
}
trap 'stop_background; rm -rf "$logs"' EXIT
trap 'exit 130' INT TERM

note() {  # note LABEL SECONDS RC [REMARK]: appends "LABEL  N s" to the summary
  summary+=("$(printf '%-14s %5d s%s%s' "$1" "$2" "${4:+  ($4)}" "$( (($3)) && echo '  FAILED')")")
}
timed() {  # timed LABEL make-target: runs it in the foreground
  local label=$1 target=$2 t0=$SECONDS
  "$make" --no-print-directory "$target"
  local rc=$?
  note "$label" $((SECONDS - t0)) $rc
  return $rc
}
# In a process group of its own, so that a failure can stop all of it; but not in a session of its
# own (setsid): with the kernel's autogroups (sched_autogroup_enabled) each session is scheduled
# as one, and a session of idle tasks would share the CPU half and half with the tests' session.
build_in_background() {
  bg_suite=$1
  bg_start=$SECONDS
  /usr/bin/python3 -c 'import os, sys; os.setpgrp(); os.execvp(sys.argv[1], sys.argv[1:])' \
    chrt --idle 0 "$make" --no-print-directory "${build_target[$1]}" \
    >"$logs/$1.log" 2>&1 </dev/null &
  bg_pid=$!
}
wait_background() {  # prints the build's output and notes its time; returns its status
  local rc=0
  wait "$bg_pid" || rc=$?
  bg_pid=
  echo "== $bg_suite build, run in the background as an idle task (its output):"
  cat "$logs/$bg_suite.log"
  note "$bg_suite build" $((SECONDS - bg_start)) $rc "$1"
  return $rc
}

previous=
for i in $(seq 1 $#); do
  suite=${!i}
  if [[ -z $previous ]]; then
    timed "$suite build" "${build_target[$suite]}" || { status=$?; break; }
  else
    wait_background "beside $previous tests" || { status=$?; break; }
  fi
  if ((i < $#)); then
    next=$((i + 1))
    build_in_background "${!next}"
  fi
  rm -f "${build_dir[$suite]}/ctest-junit.xml"
  ran+=("$suite")
  timed "$suite tests" "test-$suite" || { status=$?; break; }
  previous=$suite
done
stop_background

echo
total=$((SECONDS - start))
echo "== make test: $((total / 60)) min $((total % 60)) s in all ($(nproc) cores; a build beside" \
  "tests overlaps them)"
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
