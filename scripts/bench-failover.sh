#!/usr/bin/env bash
# make bench-failover: how long writes to a killed master's slots fail, for
# slotraft and for Redis Cluster, on this machine in one run.
#
# slotraft: 3 `slotraft server` processes (3 slot groups x 3 replicas, one
# leader per node). Redis Cluster: 6 redis-servers in cluster mode (3 masters
# + 3 replicas, made by `redis-cli --cluster create --cluster-replicas 1`),
# once per cluster-node-timeout in FAILOVER_NODE_TIMEOUTS.
#
# Each run is `slotraft bench failover`: writers SET keys of one master's
# slots in a loop (a client that follows MOVED and reloads CLUSTER SLOTS
# after any other error), the master's process is killed with SIGKILL, and
# the run reports the time from the kill (recovery) and from the last
# successful write before it (gap) to the first success of a write started
# after it. The killed node is then restarted on its data dir and the next
# run waits for the cluster to be whole again. Runs rotate over the slot
# ranges, so every node is killed in turn. Prints every run, then the median
# and max per target. Everything started here is stopped on exit.
#
# Knobs (environment): FAILOVER_RUNS per target (default 5),
# FAILOVER_NODE_TIMEOUTS Redis Cluster cluster-node-timeout values in ms
# ("15000 2000"), FAILOVER_WRITERS (4), FAILOVER_TARGETS ("slotraft redis"),
# SLOTRAFT_FAILOVER_PORT (7121: 7121-7123, bus ports +10000),
# REDIS_CLUSTER_PORT (7221: 7221-7226, bus ports +10000).
set -euo pipefail
cd "$(dirname "$0")/.."
LOG_PREFIX=bench-failover
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

FAILOVER_RUNS=${FAILOVER_RUNS:-5}
FAILOVER_NODE_TIMEOUTS=${FAILOVER_NODE_TIMEOUTS:-"15000 2000"}
FAILOVER_WRITERS=${FAILOVER_WRITERS:-4}
FAILOVER_TARGETS=${FAILOVER_TARGETS:-"slotraft redis"}
SLOTRAFT_FAILOVER_PORT=${SLOTRAFT_FAILOVER_PORT:-7121}
REDIS_CLUSTER_PORT=${REDIS_CLUSTER_PORT:-7221}

bench_setup bench-failover redis-server redis-cli go
declare -A pid_of=() # client port -> pid of the process serving it
bench_pids() { echo "${pid_of[@]}"; }

# cluster_ok PORT...: every node answers cluster_state:ok.
cluster_ok() {
	local p
	for p in "$@"; do
		redis-cli -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
	done
}

# no_failed_nodes PORT...: no node flags another as fail or fail?.
no_failed_nodes() {
	local p
	for p in "$@"; do
		redis-cli -p "$p" cluster nodes 2>/dev/null | grep -q . || return 1
		! redis-cli -p "$p" cluster nodes | awk '{ print $3 }' | grep -q 'fail' || return 1
	done
}

# replica_synced PORT: a redis-server replica whose link to its master is up.
replica_synced() {
	redis-cli -p "$1" info replication | tr -d '\r' | grep -q '^master_link_status:up'
}

# stop_all: SIGTERM every process started here and wait for it.
stop_all() {
	local port
	for port in "${!pid_of[@]}"; do kill -TERM "${pid_of[$port]}" 2>/dev/null || true; done
	for port in "${!pid_of[@]}"; do wait "${pid_of[$port]}" 2>/dev/null || true; done
	pid_of=()
}

# --- slotraft ---------------------------------------------------------------

slotraft_ports() { echo "$SLOTRAFT_FAILOVER_PORT" $((SLOTRAFT_FAILOVER_PORT + 1)) $((SLOTRAFT_FAILOVER_PORT + 2)); }

# start_slotraft_node PORT: (re)start the node serving PORT on its data dir.
start_slotraft_node() {
	local port=$1 i=$(($1 - SLOTRAFT_FAILOVER_PORT + 1)) peers="" p j=1
	for p in $(slotraft_ports); do
		peers+="${peers:+,}node$j=127.0.0.1:$p"
		j=$((j + 1))
	done
	bin/slotraft server --id "node$i" --bind "127.0.0.1:$port" --peers "$peers" \
		--data-dir "$work/slotraft/node$i" --log-level warn >>"$work/slotraft/node$i.log" 2>&1 &
	pid_of[$port]=$!
}

slotraft_ready() {
	# shellcheck disable=SC2046
	wait_for "slotraft cluster" 90 cluster_ok $(slotraft_ports)
}

start_slotraft() {
	log "building bin/slotraft"
	CGO_ENABLED=0 go build -trimpath -o bin/slotraft ./cmd/slotraft
	mkdir -p "$work/slotraft"
	log "starting slotraft on 127.0.0.1:$SLOTRAFT_FAILOVER_PORT-$((SLOTRAFT_FAILOVER_PORT + 2))"
	local p
	for p in $(slotraft_ports); do start_slotraft_node "$p"; done
	slotraft_ready || { tail -n 20 "$work"/slotraft/node*.log >&2; exit 1; }
}

# --- Redis Cluster ------------------------------------------------------------

redis_ports() { seq "$REDIS_CLUSTER_PORT" $((REDIS_CLUSTER_PORT + 5)); }

# start_redis_node PORT: (re)start a cluster-mode redis-server on its dir
# (nodes.conf there makes a restarted node rejoin as itself).
start_redis_node() {
	local port=$1
	mkdir -p "$work/redis-$NODE_TIMEOUT/$port"
	redis-server --bind 127.0.0.1 --port "$port" --dir "$work/redis-$NODE_TIMEOUT/$port" --daemonize no \
		--logfile "$work/redis-$NODE_TIMEOUT/$port/redis.log" --save '' --appendonly no \
		--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout "$NODE_TIMEOUT" &
	pid_of[$port]=$!
}

redis_ready() {
	# shellcheck disable=SC2046
	wait_for "redis cluster" 90 cluster_ok $(redis_ports) &&
		# shellcheck disable=SC2046
		wait_for "redis cluster nodes" 90 no_failed_nodes $(redis_ports)
}

start_redis_cluster() {
	log "starting Redis Cluster (cluster-node-timeout $NODE_TIMEOUT) on 127.0.0.1:$REDIS_CLUSTER_PORT-$((REDIS_CLUSTER_PORT + 5))"
	local p addrs=()
	for p in $(redis_ports); do
		start_redis_node "$p"
		addrs+=("127.0.0.1:$p")
	done
	for p in $(redis_ports); do wait_for "redis-server $p" 30 redis-cli -p "$p" ping; done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$work/create.out" 2>&1 ||
		{ cat "$work/create.out" >&2; exit 1; }
	redis_ready
	for p in $(redis_ports); do
		if redis-cli -p "$p" role | head -1 | grep -q slave; then
			wait_for "replica $p in sync" 60 replica_synced "$p"
		fi
	done
}

# --- runs -----------------------------------------------------------------------

# run_failovers TARGET START_NODE READY PORT...: FAILOVER_RUNS runs of
# `slotraft bench failover`, restarting the victim after each. Rows go to
# results.csv as target,run,victim,recovery_ms,gap_ms,ok_before,ok_after,failed,failed_after_recovery.
run_failovers() {
	local target=$1 start_node=$2 ready=$3 run p addrs pids out row victim port status
	shift 3
	for run in $(seq 1 "$FAILOVER_RUNS"); do
		addrs="" pids=""
		for p in "$@"; do
			addrs+="${addrs:+,}127.0.0.1:$p"
			pids+="${pids:+,}127.0.0.1:$p=${pid_of[$p]}"
		done
		log "$target: run $run of $FAILOVER_RUNS"
		status=0
		# The block's stderr hides bash's "Killed" notice for the victim,
		# which the shell prints before the command after its death.
		{
			out=$(bin/slotraft bench failover --addrs "$addrs" --pids "$pids" --pick "$run" \
				--writers "$FAILOVER_WRITERS" --csv 2>"$work/failover.err") || status=$?
			row=$(tail -n 1 <<<"$out" | tr -d '"')
			IFS=, read -r _ victim _ <<<"$row"
			port=${victim##*:}
			((status != 0)) || wait "${pid_of[$port]}" || true
		} 2>/dev/null
		if ((status != 0)); then
			cat "$work/failover.err" >&2
			return 1
		fi
		sed 's/^/  /' "$work/failover.err" >&2
		echo "$target,$run,$(cut -d, -f2,4- <<<"$row")" >>"$work/results.csv"
		log "$target: run $run: killed $victim: writes back after $(cut -d, -f4 <<<"$row") ms; restarting it"
		"$start_node" "$port"
		"$ready"
		if [[ $target == redis* ]]; then
			wait_for "restarted $port in sync" 60 replica_synced "$port"
		fi
	done
}

: >"$work/results.csv"
for target in $FAILOVER_TARGETS; do
	case $target in
	slotraft)
		start_slotraft
		# shellcheck disable=SC2046
		run_failovers slotraft start_slotraft_node slotraft_ready $(slotraft_ports)
		stop_all
		;;
	redis)
		CGO_ENABLED=0 go build -trimpath -o bin/slotraft ./cmd/slotraft
		for NODE_TIMEOUT in $FAILOVER_NODE_TIMEOUTS; do
			start_redis_cluster
			# shellcheck disable=SC2046
			run_failovers "redis-cluster-$NODE_TIMEOUT" start_redis_node redis_ready $(redis_ports)
			stop_all
		done
		;;
	*)
		log "unknown target $target (want slotraft or redis)"
		exit 2
		;;
	esac
done

echo
echo "failover: kill -9 the master of one slot range while $FAILOVER_WRITERS writers SET keys of its slots"
echo "slotraft: 3 nodes, 3 groups x 3 replicas.  redis-cluster-T: 3 masters + 3 replicas, cluster-node-timeout T ms ($(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'))"
echo "$(nproc) cores; $(uname -sr); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf "%-20s %3s %-16s %12s %12s %9s %9s %7s %7s\n" target run victim "recovery ms" "gap ms" "ok before" "ok after" failed "f.after"
awk -F, '{ printf "%-20s %3s %-16s %12.0f %12.0f %9s %9s %7s %7s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }' "$work/results.csv"
echo
printf "%-20s %4s %16s %16s %12s %12s\n" target runs "recovery p50 ms" "recovery max ms" "gap p50 ms" "gap max ms"
for target in $(cut -d, -f1 "$work/results.csv" | uniq); do
	rec=$(awk -F, -v t="$target" '$1 == t { print $4 }' "$work/results.csv" | sort -n)
	gap=$(awk -F, -v t="$target" '$1 == t { print $5 }' "$work/results.csv" | sort -n)
	n=$(wc -l <<<"$rec")
	printf "%-20s %4d %16.0f %16.0f %12.0f %12.0f\n" "$target" "$n" \
		"$(sed -n "$(((n + 1) / 2))p" <<<"$rec")" "$(tail -n 1 <<<"$rec")" \
		"$(sed -n "$(((n + 1) / 2))p" <<<"$gap")" "$(tail -n 1 <<<"$gap")"
done
echo
echo "recovery: kill to the first successful write started after it.  gap: last success before the kill to that write."
echo "ok before/after: successful writes on either side of the kill (writes go on for 1 s after the recovery);"
echo "failed: failed attempts (a writer retries every 5 ms); f.after: those that started after the recovery."
echo "p50 is the median run (the lower middle one for an even count)."
if grep -q '^slotraft,' "$work/results.csv"; then
	rec=$(awk -F, '$1 == "slotraft" { print $4 }' "$work/results.csv" | sort -n)
	n=$(wc -l <<<"$rec")
	med=$(sed -n "$(((n + 1) / 2))p" <<<"$rec")
	max=$(tail -n 1 <<<"$rec")
	echo
	echo "goals (issue #16):"
	awk -v med="$med" -v max="$max" 'BEGIN {
		printf "  %-30s %8.0f ms  < 1000 ms  %s\n", "slotraft recovery median", med, med < 1000 ? "met" : "missed"
		printf "  %-30s %8.0f ms  < 1500 ms  %s\n", "slotraft recovery max", max, max < 1500 ? "met" : "missed"
	}'
fi
