# Shared by the bench scripts (sourced; not run on its own). The sourcing
# script sets LOG_PREFIX and keeps the pids of what it starts; the
# start_* helpers below also use its $work directory, its pids array and
# SLOTRAFT_BASE_PORT.

log() { echo "${LOG_PREFIX}: $*" >&2; }

# stop_pids PID...: SIGTERM each process, then wait for all of them.
stop_pids() {
	local pid
	for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "$@"; do wait "$pid" 2>/dev/null || true; done
}

# bench_setup NAME TOOL...: exits unless every TOOL is on the PATH, makes
# the scratch directory $work and an empty pids array, and on exit stops
# what bench_pids lists (default: the pids array) and removes $work.
bench_setup() {
	local name=$1 tool
	shift
	for tool in "$@"; do
		command -v "$tool" >/dev/null || { echo "$name: $tool not found (make test-deps installs the redis tools)" >&2; exit 1; }
	done
	work=$(mktemp -d "${TMPDIR:-/tmp}/slotraft-$name.XXXXXX")
	pids=()
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

# bench_pids: the pids bench_cleanup stops; a script that keeps its pids
# elsewhere redefines it.
bench_pids() { echo "${pids[@]}"; }

bench_cleanup() {
	# shellcheck disable=SC2046 # one word per pid
	stop_pids $(bench_pids)
	rm -rf "$work"
}

# wait_for DESCRIPTION SECONDS COMMAND...: poll COMMAND until it succeeds.
wait_for() {
	local what=$1 secs=$2 deadline
	shift 2
	deadline=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			log "$what not ready after ${secs}s"
			return 1
		fi
		sleep 0.2
	done
}

# start_slotraft: build bin/slotraft, start a 3-node `slotraft dev` cluster on
# SLOTRAFT_BASE_PORT.. under $work/slotraft and wait until it is ready; with
# SLOTRAFT_PROXY_BASE_PORT set, node N serves proxy mode on it + N - 1.
start_slotraft() {
	log "building bin/slotraft"
	CGO_ENABLED=0 go build -trimpath -o bin/slotraft ./cmd/slotraft
	log "starting slotraft on 127.0.0.1:${SLOTRAFT_BASE_PORT}-$((SLOTRAFT_BASE_PORT + 2))"
	bin/slotraft dev --base-port "$SLOTRAFT_BASE_PORT" --data-dir "$work/slotraft" --log-level warn \
		--log-store "${BENCH_LOG_STORE:-pebble}" --sentinel-base-port 0 \
		--proxy-base-port "${SLOTRAFT_PROXY_BASE_PORT:-0}" >"$work/slotraft-dev.out" 2>&1 &
	pids+=("$!")
	local dev=$!
	if ! wait_for "slotraft cluster" 90 grep -q "cluster_state:ok" "$work/slotraft-dev.out"; then
		cat "$work/slotraft-dev.out" >&2
		tail -n 20 "$work"/slotraft/node*.log >&2 || true
		exit 1
	fi
	kill -0 "$dev"
	# Leader spreading moves leaderships for a few seconds after start;
	# redis-benchmark gives up when a master it knows turns replica.
	wait_for "one slotraft master per node" 60 masters_spread "$SLOTRAFT_BASE_PORT" 3
}

# masters_spread PORT N: CLUSTER NODES on PORT shows N masters, each with slots.
masters_spread() {
	[ "$(redis-cli -p "$1" cluster nodes | awk '$3 ~ /master/ && NF > 8' | wc -l)" -eq "$2" ]
}

# start_redis NAME PORT ARGS...: a redis-server with its own dir.
start_redis() {
	local name=$1 port=$2
	shift 2
	mkdir -p "$work/$name"
	log "starting redis-server $name on 127.0.0.1:$port ($*)"
	redis-server --bind 127.0.0.1 --port "$port" --dir "$work/$name" --daemonize no \
		--logfile "$work/$name/redis.log" "$@" &
	pids+=("$!")
	wait_for "redis-server $name" 30 redis-cli -p "$port" ping
}
