#!/bin/bash
# tests/fresh_clone.sh [N] - the fresh-machine proof: clone the repository
# this script lives in (its committed HEAD, nothing uncommitted) into a new
# temporary directory and run `make test` there, N times (default 1), each
# in a clone of its own. Prints every run's pytest result line and duration
# and exits non-zero if any run failed. Run as root (the tests load BPF).
# Logs stay in $FRESH_LOGS (default /tmp/liveprof-fresh-logs) for the causes.
set -uo pipefail

N=${1:-1}
case "$N" in '' | *[!0-9]*) echo "usage: $0 [N]" >&2; exit 2 ;; esac
REPO=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel) || exit 2
REV=$(git -C "$REPO" rev-parse --short HEAD) || exit 2
LOGS=${FRESH_LOGS:-/tmp/liveprof-fresh-logs}
mkdir -p "$LOGS"

failed=0
for i in $(seq 1 "$N"); do
	dir=$(mktemp -d /tmp/liveprof-fresh.XXXXXX)
	log="$LOGS/run-$i-$(date -u +%Y%m%dT%H%M%S)-$$.log"
	t0=$(date +%s)
	if git clone -q "$REPO" "$dir/liveprof" >"$log" 2>&1; then
		# each run names the commit it cloned (the repository may move on)
		REV=$(git -C "$dir/liveprof" rev-parse --short HEAD)
		# -v names every test as it ends, so a run cut short still says
		# which one failed
		(cd "$dir/liveprof" && PYTEST_ADDOPTS="${PYTEST_ADDOPTS:-} -v" make test) >>"$log" 2>&1
		rc=$?
	else
		rc=1
	fi
	secs=$(($(date +%s) - t0))
	# pytest's last line: "==== 1 failed, 105 passed in 431.20s ===="
	result=$(grep -E '^=+ .*(passed|failed|error).* in [0-9.]+s' "$log" | tail -1 | tr -d '=' |
		sed 's/^ *//; s/ *$//')
	[ -n "$result" ] || result="no pytest summary (make failed before the tests)"
	status=PASS
	if [ "$rc" -ne 0 ]; then
		status=FAIL
		failed=$((failed + 1))
	fi
	printf 'run %d/%d (%s): %s, rc %d, %dm%02ds: %s  [log %s]\n' "$i" "$N" "$REV" "$status" \
		"$rc" $((secs / 60)) $((secs % 60)) "$result" "$log"
	if [ "$rc" -ne 0 ]; then
		grep -E '^(FAILED|ERROR) ' "$log" | sed 's/^/    /'
	fi
	rm -rf "$dir"
done
echo "fresh clones: $((N - failed)) of $N green"
[ "$failed" -eq 0 ]
