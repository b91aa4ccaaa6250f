#!/bin/bash
# daemon_profile.sh: where a training daemon's CPU goes while a CNN job runs with 4 event-stream
# clients attached: samples per thread, and how many fall in the daemon's own code (HTTP, events,
# JSON, SQLite) rather than the engine. The CPU view of the daemon's overhead (docs/benchmarks.md).
# Usage: bench/daemon_profile.sh [BUILD_DIR=build] [SECONDS=30]   (needs perf, as root)
set -euo pipefail
BUILD=${1:-build}
SECONDS_TO_SAMPLE=${2:-30}
HERE=$(cd "$(dirname "$0")/.." && pwd)
D=$(mktemp -d /tmp/daemon_profile.XXXX)
PORT=18099
/usr/bin/python3 - "$HERE/examples/cnn.json" "$D/spec.json" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["max_steps"] = 100000  # stopped after sampling
spec["hooks"]["step_counter"] = {"every_steps": 50}
spec["hooks"]["evaluation"] = False
spec["hooks"]["final_eval"] = False
json.dump(spec, open(sys.argv[2], "w"))
PY
"$BUILD/daemon/trainingd" serve --listen 127.0.0.1:$PORT --data-dir "$D/data" >"$D/daemon.log" 2>&1 &
PID=$!
CLIENTS=()
cleanup() {
  kill "${CLIENTS[@]}" 2>/dev/null || true
  kill $PID 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$D"
}
trap cleanup EXIT
for _ in $(seq 50); do curl -sf http://127.0.0.1:$PORT/healthz >/dev/null && break; sleep 0.1; done
ID=$(curl -sf -X POST -H 'Content-Type: application/json' --data @"$D/spec.json" \
  http://127.0.0.1:$PORT/api/v1/jobs | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
for _ in 1 2 3 4; do
  curl -sN http://127.0.0.1:$PORT/api/v1/jobs/$ID/events >/dev/null &
  CLIENTS+=($!)
done
sleep 8  # past data loading
perf record -q -F 499 -p $PID -o "$D/perf.data" -- sleep "$SECONDS_TO_SAMPLE" 2>/dev/null
perf script -i "$D/perf.data" -F tid,ip,sym,dso 2>/dev/null | /usr/bin/python3 -c '
import collections, re, sys
service = re.compile(r"trainingd::(daemon|api)::|boost::|nlohmann|sqlite|asio|beast")
per_thread, in_service = collections.Counter(), collections.Counter()
for line in sys.stdin:
    parts = line.split(None, 2)
    if len(parts) < 2:
        continue
    per_thread[parts[0]] += 1
    if service.search(parts[2] if len(parts) > 2 else ""):
        in_service[parts[0]] += 1
total = sum(per_thread.values())
ranked = per_thread.most_common()
compute = ranked[:2]
others = sum(n for _, n in ranked[2:])
print("samples: %d over %s s" % (total, sys.argv[1]))
for tid, n in ranked:
    print("  thread %s: %d samples (%.3f%%), %d in daemon/API/JSON/Asio/SQLite code"
          % (tid, n, 100.0 * n / total, in_service[tid]))
print("the two compute threads of the job: %.3f%% of samples, %d of them in daemon code"
      % (100.0 * sum(n for _, n in compute) / total, sum(in_service[t] for t, _ in compute)))
print("all other daemon threads: %d samples (%.3f%%)" % (others, 100.0 * others / total))
' "$SECONDS_TO_SAMPLE"
