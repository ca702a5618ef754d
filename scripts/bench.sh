#!/usr/bin/env bash
# make bench: drive a 3-node slotraft cluster and two reference redis-servers
# (AOF with appendfsync always; no persistence) with redis-benchmark in one
# run, then print ops/s, p50 and p99 per target and slotraft's throughput
# ratio to each reference. Everything started here is stopped on exit.
#
# Tests: SET GET (BENCH_N requests each), then LPUSH LPOP SADD HSET ZADD
# (redis-benchmark -t) and ZRANGE myzset 0 9 (a custom command; the key
# carries redis-benchmark's {tag} in cluster mode), SETBIT, PFADD, GEOADD, EVALSHA of
# the lock-release script, and XADD then XREADGROUP on one stream, with BENCH_COLL_N each.
# Then what redis-benchmark cannot drive, with `slotraft bench`: MULTI/EXEC
# transactions of 5 writes on one hash tag per client (BENCH_TX_N of them,
# BENCH_C clients, pipeline 1), and PUBLISH to 1, 10 and 100 subscribers
# spread over the nodes (BENCH_PUBSUB_N messages per round): messages
# delivered per second and publish-to-delivery latency. A target without
# pub/sub shows n/a.
#
# Knobs (environment): BENCH_N requests per test (default 200000),
# BENCH_COLL_N requests per collection test (50000; 0 skips them),
# BENCH_C clients (50), BENCH_R keyspace size for -r (100000),
# BENCH_PIPELINES ("1 16"), BENCH_TX_N (20000; 0 skips), BENCH_PUBSUB_N
# (10000; 0 skips), BENCH_C1_N (10000; 0 skips SET-c1), BENCH_LOG_STORE
# (pebble; bolt or wal: slotraft's --log-store), BENCH_PUBSUB_SUBS ("1,10,100"), BENCH_PUBSUB_PUBLISHERS
# (4), SLOTRAFT_BASE_PORT (7101; bus ports +10000), SLOTRAFT_PROXY_BASE_PORT
# (7301: node1's proxy, which SET and GET also run through, without --cluster),
# REDIS_AOF_PORT (7201), REDIS_MEM_PORT (7202).
set -euo pipefail
cd "$(dirname "$0")/.."
LOG_PREFIX=bench
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

BENCH_N=${BENCH_N:-200000}
BENCH_COLL_N=${BENCH_COLL_N:-50000}
BENCH_C=${BENCH_C:-50}
BENCH_R=${BENCH_R:-100000}
BENCH_PIPELINES=${BENCH_PIPELINES:-"1 16"}
BENCH_C1_N=${BENCH_C1_N:-10000}
BENCH_LOG_STORE=${BENCH_LOG_STORE:-pebble}
BENCH_TX_N=${BENCH_TX_N:-20000}
BENCH_PUBSUB_N=${BENCH_PUBSUB_N:-10000}
BENCH_PUBSUB_SUBS=${BENCH_PUBSUB_SUBS:-"1,10,100"}
BENCH_PUBSUB_PUBLISHERS=${BENCH_PUBSUB_PUBLISHERS:-4}
SLOTRAFT_BASE_PORT=${SLOTRAFT_BASE_PORT:-7101}
SLOTRAFT_PROXY_BASE_PORT=${SLOTRAFT_PROXY_BASE_PORT:-7301}
REDIS_AOF_PORT=${REDIS_AOF_PORT:-7201}
REDIS_MEM_PORT=${REDIS_MEM_PORT:-7202}

bench_setup bench redis-server redis-cli redis-benchmark go

# run_benchmark TARGET PIPELINE ARGS...: one redis-benchmark run (a custom
# command must come last in ARGS); its CSV
# rows are appended to results.csv as target,test,pipeline,rps,p50,p99 (a
# custom command's test is its first word).
run_benchmark() {
	local target=$1 pipeline=$2
	shift 2
	redis-benchmark -c "$BENCH_C" -r "$BENCH_R" -P "$pipeline" --csv "$@" >"$work/out.csv" 2>"$work/err.txt" ||
		{ cat "$work/err.txt" >&2; return 1; }
	append_results "$target" "$pipeline"
}

# append_results TARGET PIPELINE [SUFFIX]: out.csv's result rows
# (redis-benchmark's --csv columns) to results.csv; SUFFIX is appended to
# the test's name (SET-c1).
append_results() {
	# --cluster also prints the masters it found: keep only the result rows.
	awk -F, -v t="$1" -v p="$2" -v s="${3:-}" '$1 ~ /^"[A-Z]/ {
		gsub(/"/, ""); split($1, w, " "); print t "," w[1] s "," p "," $2 "," $5 "," $7
	}' "$work/out.csv" >>"$work/results.csv"
}

# single_client TARGET PORT [EXTRA...]: SET from one client at pipeline 1
# (BENCH_C1_N requests): the latency of one write with nothing to batch
# it with, reported as test SET-c1.
single_client() {
	local target=$1 port=$2
	shift 2
	((BENCH_C1_N > 0)) || return 0
	log "redis-benchmark $target -c 1 -n $BENCH_C1_N"
	redis-benchmark -h 127.0.0.1 -p "$port" "$@" -c 1 -r "$BENCH_R" -P 1 -n "$BENCH_C1_N" -t set --csv \
		>"$work/out.csv" 2>"$work/err.txt" || { cat "$work/err.txt" >&2; return 1; }
	append_results "$target" 1 -c1
}

# raft_terms PORT: the sum of every slot group's current term, as the
# node on PORT sees its leaders (SLOTRAFT STATUS). Each election or
# leadership transfer starts a term, so the growth of this sum over a run
# counts the leader changes in it.
raft_terms() {
	redis-cli -p "$1" SLOTRAFT STATUS | grep -o '"state":"Leader","term":[0-9]*' |
		awk -F: '{ s += $NF } END { print s + 0 }'
}

# run_tool TARGET WORKLOAD ARGS...: one `slotraft bench` run at pipeline 1;
# its rows use redis-benchmark's CSV columns.
run_tool() {
	local target=$1
	shift
	log "slotraft bench $* ($target)"
	bin/slotraft bench "$@" --csv >"$work/out.csv" 2>"$work/err.txt" ||
		{ cat "$work/err.txt" >&2; return 1; }
	sed 's/^/  /' "$work/err.txt" >&2
	append_results "$target" 1
}

# tools TARGET ADDRS [--cluster]: the transaction and pub/sub workloads.
# Pub/sub that fails on a target is reported as n/a, not as a failed run.
tools() {
	local target=$1 addrs=$2 cluster=${3:-} subs
	if ((BENCH_TX_N > 0)); then
		run_tool "$target" tx --addrs "$addrs" $cluster --clients "$BENCH_C" --requests "$BENCH_TX_N"
	fi
	((BENCH_PUBSUB_N > 0)) || return 0
	if ! run_tool "$target" pubsub --addrs "$addrs" --subscribers "$BENCH_PUBSUB_SUBS" \
		--messages "$BENCH_PUBSUB_N" --publishers "$BENCH_PUBSUB_PUBLISHERS"; then
		log "pub/sub failed on $target: reported as n/a"
		for subs in ${BENCH_PUBSUB_SUBS//,/ }; do
			echo "$target,PUBSUB-$subs,1,n/a,n/a,n/a" >>"$work/results.csv"
		done
	fi
}

# The compare-and-delete script that releases a lock taken with SET NX PX.
UNLOCK_SCRIPT='if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end'

# owner_port PORT KEY: the port of the node serving KEY (read off a MOVED
# redirect; PORT itself when it serves KEY or is a plain redis-server).
owner_port() {
	local out
	out=$(redis-cli -p "$1" EXISTS "$2" 2>&1)
	if [[ $out == *MOVED* ]]; then
		echo "${out##*:}"
	else
		echo "$1"
	fi
}

# bench TARGET PORT PIPELINE [EXTRA...]: every test against one target.
bench() {
	local target=$1 port=$2 pipeline=$3 tag=""
	shift 3
	[[ " $* " == *" --cluster "* ]] && tag="{tag}"
	log "redis-benchmark $target -P $pipeline -n $BENCH_N"
	run_benchmark "$target" "$pipeline" -h 127.0.0.1 -p "$port" "$@" -t set,get -n "$BENCH_N"
	((BENCH_COLL_N > 0)) || return 0
	log "redis-benchmark $target -P $pipeline -n $BENCH_COLL_N (collections)"
	run_benchmark "$target" "$pipeline" -h 127.0.0.1 -p "$port" "$@" -t lpush,lpop,sadd,hset,zadd -n "$BENCH_COLL_N"
	run_benchmark "$target" "$pipeline" -h 127.0.0.1 -p "$port" "$@" -n "$BENCH_COLL_N" ZRANGE "myzset$tag" 0 9
	# Bitmaps and geo. No __rand_int__ in a bit offset: it expands to a
	# 12-digit number that both servers reject as an offset.
	run_benchmark "$target" "$pipeline" -h 127.0.0.1 -p "$port" "$@" -n "$BENCH_COLL_N" SETBIT "bitmap$tag:__rand_int__" 100 1
	run_benchmark "$target" "$pipeline" -h 127.0.0.1 -p "$port" "$@" -n "$BENCH_COLL_N" PFADD "hll$tag" "ele:__rand_int__"
	run_benchmark "$target" "$pipeline" -h 127.0.0.1 -p "$port" "$@" -n "$BENCH_COLL_N" GEOADD "geo$tag" 13.__rand_int__ 38.__rand_int__ "m:__rand_int__"
	# EVALSHA of the lock-release (compare-and-delete) script, loaded on
	# every node first (SCRIPT LOAD reaches the groups a node leads).
	local sha node nodes=("$port")
	[[ -n $tag ]] && nodes=("$port" $((port + 1)) $((port + 2)))
	for node in "${nodes[@]}"; do
		sha=$(redis-cli -p "$node" SCRIPT LOAD "$UNLOCK_SCRIPT")
	done
	run_benchmark "$target" "$pipeline" -h 127.0.0.1 -p "$port" "$@" -n "$BENCH_COLL_N" EVALSHA "$sha" 1 "lock$tag:__rand_int__" token
	# Streams on one key: redis-benchmark --cluster cannot create a consumer
	# group for each {tag}, so every target gets one stream, driven on the
	# node that serves it. XREADGROUP reads the entries XADD just added.
	local skey="bench:{stream}" sport
	sport=$(owner_port "$port" "$skey")
	redis-cli -p "$sport" DEL "$skey" >/dev/null
	redis-cli -p "$sport" XGROUP CREATE "$skey" g 0 MKSTREAM >/dev/null
	run_benchmark "$target" "$pipeline" -h 127.0.0.1 -p "$sport" -n "$BENCH_COLL_N" XADD "$skey" MAXLEN '~' 1000000 '*' f v
	run_benchmark "$target" "$pipeline" -h 127.0.0.1 -p "$sport" -n "$BENCH_COLL_N" XREADGROUP GROUP g c COUNT 1 STREAMS "$skey" '>'
}

# proxy_bench PIPELINE: SET and GET through node1's proxy, as a client that
# does not speak Redis Cluster sees slotraft (redis-benchmark without
# --cluster; docs/proxy.md).
proxy_bench() {
	log "redis-benchmark proxy -P $1 -n $BENCH_N"
	run_benchmark proxy "$1" -h 127.0.0.1 -p "$SLOTRAFT_PROXY_BASE_PORT" -t set,get -n "$BENCH_N"
}

# proxy_ratios RESULTS: the proxy's ops/s and p50 over the direct cluster
# path's for each test and pipeline both ran.
proxy_ratios() {
	awk -F, '
		{ rps[$1, $2, $3] = $4; p50[$1, $2, $3] = $5; if ($1 == "proxy") rows[++n] = $2 SUBSEP $3 }
		END {
			printf "  %-10s %3s %12s %12s %8s %10s\n", "test", "P", "proxy ops/s", "direct ops/s", "x ops/s", "x p50"
			for (i = 1; i <= n; i++) {
				split(rows[i], k, SUBSEP)
				d = rps["slotraft", k[1], k[2]]; q = rps["proxy", k[1], k[2]]
				if (d + 0 == 0 || q == "n/a") continue
				lat = (p50["slotraft", k[1], k[2]] + 0 > 0) ? sprintf("%.2f", p50["proxy", k[1], k[2]] / p50["slotraft", k[1], k[2]]) : ""
				printf "  %-10s %3s %12.0f %12.0f %8.2f %10s\n", k[1], k[2], q, d, q / d, lat
			}
		}' "$1"
}

# goals RESULTS LEADER_CHANGES: each goal of the write-path issue, the
# measured value and whether it is met.
goals() {
	awk -F, -v changes="$2" '
		{ rps[$1, $2, $3] = $4; p50[$1, $2, $3] = $5 }
		function ratio(test, p, ref) {
			if (rps["slotraft", test, p] == "" || rps[ref, test, p] + 0 == 0) return ""
			return rps["slotraft", test, p] / rps[ref, test, p]
		}
		function row(what, v, op, want) {
			if (v == "") { printf "  %-44s %8s   %s %-5s %s\n", what, "n/a", op, want, ""; return }
			ok = (op == ">=") ? v >= want : v <= want
			printf "  %-44s %8s   %s %-5s %s\n", what, (v == int(v) ? v : sprintf("%.2f", v)), op, want, ok ? "met" : "missed"
		}
		END {
			row("SET -P 1, x redis AOF-always", ratio("SET", 1, "redis-aof"), ">=", 0.5)
			row("SET -P 16, x redis AOF-always", ratio("SET", 16, "redis-aof"), ">=", 0.5)
			row("GET -P 1, x redis no persistence", ratio("GET", 1, "redis-mem"), ">=", 0.8)
			row("GET -P 16, x redis no persistence", ratio("GET", 16, "redis-mem"), ">=", 0.5)
			c1 = ""
			if (p50["redis-aof", "SET-c1", 1] + 0 > 0) c1 = p50["slotraft", "SET-c1", 1] / p50["redis-aof", "SET-c1", 1]
			row("SET -c 1 p50, / redis AOF-always p50", c1, "<=", 3)
			n = split("LPUSH LPOP SADD HSET ZADD SETBIT PFADD GEOADD EVALSHA XADD", dt, " ")
			for (i = 1; i <= n; i++) row(dt[i] " -P 1, x redis AOF-always", ratio(dt[i], 1, "redis-aof"), ">=", 0.4)
			row("leader changes during the bench", changes, "<=", 0)
		}' "$1"
}

start_slotraft
start_redis redis-aof "$REDIS_AOF_PORT" --appendonly yes --appendfsync always --save ''
start_redis redis-mem "$REDIS_MEM_PORT" --appendonly no --save ''

: >"$work/results.csv"
terms_before=$(raft_terms "$SLOTRAFT_BASE_PORT")
single_client slotraft "$SLOTRAFT_BASE_PORT" --cluster
single_client redis-aof "$REDIS_AOF_PORT"
single_client redis-mem "$REDIS_MEM_PORT"
for p in $BENCH_PIPELINES; do
	bench slotraft "$SLOTRAFT_BASE_PORT" "$p" --cluster
	proxy_bench "$p"
	bench redis-aof "$REDIS_AOF_PORT" "$p"
	bench redis-mem "$REDIS_MEM_PORT" "$p"
done
tools slotraft "127.0.0.1:$SLOTRAFT_BASE_PORT,127.0.0.1:$((SLOTRAFT_BASE_PORT + 1)),127.0.0.1:$((SLOTRAFT_BASE_PORT + 2))" --cluster
tools redis-aof "127.0.0.1:$REDIS_AOF_PORT"
tools redis-mem "127.0.0.1:$REDIS_MEM_PORT"
terms_after=$(raft_terms "$SLOTRAFT_BASE_PORT")

echo
echo "slotraft (3 nodes, 3 groups x 3 replicas, --log-store $BENCH_LOG_STORE) vs redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')"
echo "redis-benchmark -c $BENCH_C -n $BENCH_N -r $BENCH_R; $(nproc) cores; $(uname -sr)"
echo "redis-aof: appendonly yes, appendfsync always.  redis-mem: no persistence."
echo
awk -F, '
	{ key = $2 SUBSEP $3; rps[$1, key] = $4; rows[NR] = $0 }
	END {
		printf "%-10s %-10s %3s %12s %8s %8s %10s %10s\n", "target", "test", "P", "ops/s", "p50 ms", "p99 ms", "x aof", "x mem"
		for (i = 1; i <= NR; i++) {
			split(rows[i], f, ",")
			key = f[2] SUBSEP f[3]
			ra = rm = ""
			if (f[4] == "n/a") {
				printf "%-10s %-10s %3s %12s %8s %8s %10s %10s\n", f[1], f[2], f[3], "n/a", "n/a", "n/a", "", ""
				continue
			}
			if (f[1] == "slotraft") {
				if (rps["redis-aof", key] + 0 > 0) ra = sprintf("%.2f", f[4] / rps["redis-aof", key])
				if (rps["redis-mem", key] + 0 > 0) rm = sprintf("%.2f", f[4] / rps["redis-mem", key])
			}
			printf "%-10s %-10s %3s %12.0f %8.3f %8.3f %10s %10s\n", f[1], f[2], f[3], f[4], f[5], f[6], ra, rm
		}
	}' "$work/results.csv"
echo
echo "x aof / x mem: slotraft's ops/s divided by the reference's for the same test and pipeline."
echo "MULTI/EXEC: transactions/s and latency of MULTI; INCR; SET; LPUSH; HINCRBY; EXPIRE; EXEC (one round trip each)."
echo "PUBSUB-N: messages delivered/s to N subscribers spread over the nodes, PUBLISH-to-delivery latency."
echo "SET-c1: one client, pipeline 1: the latency of a lone write."
echo
echo "proxy mode (redis-benchmark without --cluster through node1's --proxy-bind) vs the direct cluster path:"
proxy_ratios "$work/results.csv"
echo
echo "goals (issue #16):"
goals "$work/results.csv" "$((terms_after - terms_before))"
