#!/usr/bin/env bash
# make bench-eviction: the hit rate of a cache under maxmemory, slotraft vs
# redis-server on the same trace. Starts a 3-node slotraft cluster (3 groups
# x 3 replicas, so every node holds every key and each node's limit is the
# whole cache's, as redis-server's is) and a redis-server without
# persistence, sets the same maxmemory and policy on both, and runs the same
# cache-aside Zipf trace with `slotraft bench eviction` (GET a key, SET it on
# a miss). Everything started here is stopped on exit.
#
# Knobs (environment): EVICT_MAXMEMORY (12mb), EVICT_POLICY (allkeys-lru),
# EVICT_KEYS (500000), EVICT_OPS (600000), EVICT_WARMUP (150000),
# EVICT_ZIPF (1.01), EVICT_VALUE_SIZE (100), EVICT_SEED (1),
# SLOTRAFT_BASE_PORT (7501; bus ports +10000), REDIS_EVICT_PORT (7601).
#
# The last line is exactly:
#   hit rate: slotraft X%, redis-server Y%, difference D points (goal <= 5)
set -euo pipefail
cd "$(dirname "$0")/.."
LOG_PREFIX=bench-eviction
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

EVICT_MAXMEMORY=${EVICT_MAXMEMORY:-12mb}
EVICT_POLICY=${EVICT_POLICY:-allkeys-lru}
EVICT_KEYS=${EVICT_KEYS:-500000}
EVICT_OPS=${EVICT_OPS:-600000}
EVICT_WARMUP=${EVICT_WARMUP:-150000}
EVICT_ZIPF=${EVICT_ZIPF:-1.01}
EVICT_VALUE_SIZE=${EVICT_VALUE_SIZE:-100}
EVICT_SEED=${EVICT_SEED:-1}
SLOTRAFT_BASE_PORT=${SLOTRAFT_BASE_PORT:-7501}
REDIS_EVICT_PORT=${REDIS_EVICT_PORT:-7601}

bench_setup bench-eviction redis-server redis-cli go

# trace TARGET ARGS...: one run; its CSV goes to $work/TARGET.csv.
trace() {
	local target=$1
	shift
	log "cache-aside trace on $target"
	bin/slotraft bench eviction "$@" --keys "$EVICT_KEYS" --ops "$EVICT_OPS" --warmup "$EVICT_WARMUP" \
		--zipf "$EVICT_ZIPF" --value-size "$EVICT_VALUE_SIZE" --seed "$EVICT_SEED" \
		--maxmemory "$EVICT_MAXMEMORY" --policy "$EVICT_POLICY" --csv >"$work/$target.csv"
}

# col TARGET N: column N of the result row.
col() { awk -F, -v c="$2" 'NR == 2 { print $c }' "$work/$1.csv"; }

start_slotraft
start_redis redis-evict "$REDIS_EVICT_PORT" --appendonly no --save ''

trace slotraft --cluster \
	--addrs "127.0.0.1:$SLOTRAFT_BASE_PORT,127.0.0.1:$((SLOTRAFT_BASE_PORT + 1)),127.0.0.1:$((SLOTRAFT_BASE_PORT + 2))"
trace redis-server --addrs "127.0.0.1:$REDIS_EVICT_PORT"

echo
echo "maxmemory $EVICT_MAXMEMORY $EVICT_POLICY; $EVICT_OPS GET (SET on a miss) over $EVICT_KEYS keys, Zipf s=$EVICT_ZIPF,"
echo "${EVICT_VALUE_SIZE}-byte values, the first $EVICT_WARMUP not counted; slotraft: 3 nodes, 3 groups x 3 replicas;"
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), no persistence; $(nproc) cores"
echo
printf "%-14s %10s %10s %9s %8s %12s %10s %8s\n" target lookups hits "hit rate" errors evicted "keys held" seconds
for target in slotraft redis-server; do
	awk -F, -v t="$target" 'NR == 2 { printf "%-14s %10s %10s %8s%% %8s %12s %10s %8s\n", t, $1, $2, $3, $4, $5, $6, $7 }' "$work/$target.csv"
done
echo
s=$(col slotraft 3)
r=$(col redis-server 3)
awk -v s="$s" -v r="$r" 'BEGIN { d = s - r; if (d < 0) d = -d; printf "hit rate: slotraft %.2f%%, redis-server %.2f%%, difference %.2f points (goal <= 5)\n", s, r, d }'
