#!/usr/bin/env bash
# make chaos: CHAOS_RUNS runs (default 20) of `slotraft chaos run` for
# CHAOS_DURATION each (default 60s) with every built fault kind and
# workload, each with its own seed (CHAOS_SEED + run number; CHAOS_SEED
# defaults to the clock), then one table of all of them. Each run's JSON
# summary, HTML report and progress log go to CHAOS_OUT (data/chaos). Exits
# non-zero unless every run passed. Needs Linux, root and nft (partitions).
set -euo pipefail
cd "$(dirname "$0")/.."
LOG_PREFIX=chaos
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

BIN=${BIN:-bin/slotraft}
CHAOS_RUNS=${CHAOS_RUNS:-20}
CHAOS_DURATION=${CHAOS_DURATION:-60s}
CHAOS_SEED=${CHAOS_SEED:-$(date +%s)}
CHAOS_OUT=${CHAOS_OUT:-data/chaos}

[ -x "$BIN" ] || { log "$BIN not found (make build)"; exit 1; }
mkdir -p "$CHAOS_OUT"
rm -f "$CHAOS_OUT"/run-*.json "$CHAOS_OUT"/run-*.html "$CHAOS_OUT"/run-*.log

summaries=()
for i in $(seq 1 "$CHAOS_RUNS"); do
	seed=$((CHAOS_SEED + i))
	name=$(printf 'run-%02d' "$i")
	log "$name of $CHAOS_RUNS: seed $seed, $CHAOS_DURATION"
	code=0
	"$BIN" chaos run --duration "$CHAOS_DURATION" --faults all --workload all --seed "$seed" \
		--json --report "$CHAOS_OUT/$name.html" >"$CHAOS_OUT/$name.json" 2>"$CHAOS_OUT/$name.log" || code=$?
	log "$name: exit $code ($(grep -m1 -o 'chaos run: [A-Z]*' "$CHAOS_OUT/$name.log" || echo 'no summary'))"
	if [ "$code" = 130 ]; then
		log "interrupted"
		exit 130
	fi
	summaries+=("$CHAOS_OUT/$name.json")
done
echo
"$BIN" chaos table "${summaries[@]}"
