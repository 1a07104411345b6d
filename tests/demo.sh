#!/bin/bash
# make demo: profile the built-in request-loop workload and split its
# handler at p95. The workload (tests/workloads/handler.c) runs
# slow_path() in exactly 1 of 32 calls of handle(): that is the answer
# the split should give.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${DEMO_OUT:-out/demo}
SECONDS_TO_RUN=${DEMO_SECONDS:-8}
mkdir -p "$OUT"

tests/build/handler cpu 600 &
WL=$!
trap 'kill $WL 2>/dev/null || true' EXIT
sleep 0.3

echo "demo: profiling tests/build/handler (pid $WL) for ${SECONDS_TO_RUN}s at 499 Hz;"
echo "demo: splitting handle() at p95 (1 call in 32 also runs slow_path)"
./liveprof -p "$WL" -F 499 -d "$SECONDS_TO_RUN" --no-tui --top 10 \
	--split handle@p95 -o "$OUT/split/" -o "$OUT/profile.svg" -o "$OUT/profile.folded" \
	-o "$OUT/profile.pb.gz" --json "$OUT/summary.json"

echo
echo "demo: files written:"
echo "  $OUT/profile.svg            flamegraph of the whole run (open in a browser)"
echo "  $OUT/split/diff.svg         slow vs fast calls of handle(): red = more in slow calls"
echo "  $OUT/split/slow.folded      samples taken inside slow calls"
echo "  $OUT/split/fast.folded      samples taken inside fast calls"
echo "  $OUT/split/latency.svg      latency histogram of handle() with the p95 threshold"
echo "  $OUT/profile.pb.gz          pprof (go tool pprof -top $OUT/profile.pb.gz)"
echo "  $OUT/summary.json           figures for scripts and CI"
