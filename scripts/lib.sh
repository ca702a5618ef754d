# Shared by the bench scripts (sourced; not run on its own). The sourcing
# script sets LOG_PREFIX and keeps the pids of what it starts.

log() { echo "${LOG_PREFIX}: $*" >&2; }

# stop_pids PID...: SIGTERM each process, then wait for all of them.
stop_pids() {
	local pid
	for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "$@"; do wait "$pid" 2>/dev/null || true; done
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
