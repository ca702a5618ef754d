#!/usr/bin/env bash
# make bench-memory: what one small string key costs slotraft and
# redis-server. Starts a 3-node slotraft cluster (3 groups x 3 replicas, so
# every node holds every key) and a redis-server without persistence, loads
# the same BENCH_MEMORY_N keys key:0… with 3-byte values into each with
# `slotraft bench memory`, and reads every node's memory before and after
# (after MEMORY PURGE: a full GC on slotraft, a jemalloc purge on
# redis-server). slotraft's heap is INFO's used_memory (Go heap objects);
# per key is per node: (after - before) / keys the node gained, the mean of
# the three nodes. Everything started here is stopped on exit.
#
# Knobs (environment): BENCH_MEMORY_N keys (default 1000000),
# BENCH_MEMORY_VALUE_SIZE (3), BENCH_MEMORY_EXPIRE (a time to live for
# every key, e.g. 1h; default none), SLOTRAFT_BASE_PORT (7301; bus ports
# +10000), REDIS_MEM_PORT (7401).
#
# The last line is exactly:
#   memory per key: slotraft N B, redis-server M B, ratio R
set -euo pipefail
cd "$(dirname "$0")/.."
LOG_PREFIX=bench-memory
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

BENCH_MEMORY_N=${BENCH_MEMORY_N:-1000000}
BENCH_MEMORY_VALUE_SIZE=${BENCH_MEMORY_VALUE_SIZE:-3}
BENCH_MEMORY_EXPIRE=${BENCH_MEMORY_EXPIRE:-0}
SLOTRAFT_BASE_PORT=${SLOTRAFT_BASE_PORT:-7301}
REDIS_MEM_PORT=${REDIS_MEM_PORT:-7401}

bench_setup bench-memory redis-server redis-cli go

# measure TARGET ARGS...: one `slotraft bench memory` run; its CSV goes to
# $work/TARGET.csv and its rows to the terminal.
measure() {
	local target=$1
	shift
	log "loading $BENCH_MEMORY_N keys into $target"
	bin/slotraft bench memory "$@" --keys "$BENCH_MEMORY_N" --value-size "$BENCH_MEMORY_VALUE_SIZE" \
		--expire "$BENCH_MEMORY_EXPIRE" --csv \
		>"$work/$target.csv" 2>"$work/err.txt" || { cat "$work/err.txt" >&2; return 1; }
	sed "s/^/  /" "$work/err.txt" >&2
}

# mean TARGET COLUMN: the mean row's heap (7) or rss (8) bytes per key.
mean() { awk -F, -v c="$2" '$1 == "\"mean\"" { gsub(/"/, "", $c); print $c }' "$work/$1.csv"; }

start_slotraft
start_redis redis-mem "$REDIS_MEM_PORT" --appendonly no --save ''

measure slotraft --cluster \
	--addrs "127.0.0.1:$SLOTRAFT_BASE_PORT,127.0.0.1:$((SLOTRAFT_BASE_PORT + 1)),127.0.0.1:$((SLOTRAFT_BASE_PORT + 2))"
measure redis-server --addrs "127.0.0.1:$REDIS_MEM_PORT"

echo
ttl=""
[[ $BENCH_MEMORY_EXPIRE != 0 ]] && ttl=", time to live $BENCH_MEMORY_EXPIRE"
echo "$BENCH_MEMORY_N keys key:N, ${BENCH_MEMORY_VALUE_SIZE}-byte values$ttl; slotraft: 3 nodes, 3 groups x 3 replicas;"
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), no persistence; $(nproc) cores; $(uname -sr)"
echo
printf "%-14s %-21s %10s %12s %12s\n" target node keys "heap B/key" "rss B/key"
for target in slotraft redis-server; do
	awk -F, -v t="$target" 'NR > 1 { gsub(/"/, ""); printf "%-14s %-21s %10s %12s %12s\n", t, $1, $2, $7, $8 }' "$work/$target.csv"
done
echo
s_heap=$(mean slotraft 7)
r_heap=$(mean redis-server 7)
s_rss=$(mean slotraft 8)
r_rss=$(mean redis-server 8)
awk -v s="$s_rss" -v r="$r_rss" 'BEGIN { printf "rss per key: slotraft %.0f B, redis-server %.0f B, ratio %.2f\n", s, r, s / r }'
awk -v s="$s_heap" -v r="$r_heap" 'BEGIN { printf "memory per key: slotraft %.0f B, redis-server %.0f B, ratio %.2f\n", s, r, s / r }'
