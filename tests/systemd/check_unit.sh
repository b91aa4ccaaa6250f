#!/usr/bin/env bash
# check_unit.sh UNIT TRAININGD: systemd-analyze verify passes on the unit (with ExecStart pointed
# at the built binary, since verify checks that it exists), LimitNOFILE= leaves room for the
# connections, and the offline security exposure is at most 2.0 (systemd-analyze's --threshold
# is on a 0-100 scale: 20).
set -euo pipefail
unit=$1 binary=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -E "s|^ExecStart=[^ ]+|ExecStart=$binary|" "$unit" > "$tmp/trainingd.service"
systemd-analyze verify "$tmp/trainingd.service"
# Room for max_connections (default 1024) and the daemon's own files; systemd's default soft
# limit is 1024.
limit=$(sed -n 's/^LimitNOFILE=\([0-9]*\)$/\1/p' "$unit")
if [ -z "$limit" ] || [ "$limit" -lt 4096 ]; then
  echo "LimitNOFILE= must be set to at least 4096, is '${limit}'"
  exit 1
fi
out=$(systemd-analyze security --offline=true --threshold=20 "$tmp/trainingd.service" 2>&1) || {
  echo "$out"
  echo "exposure above 2.0"
  exit 1
}
echo "$out" | tail -1
