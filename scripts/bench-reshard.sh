#!/usr/bin/env bash
# make bench-reshard: move a third of the slots between the slot groups of a
# 3-node slotraft cluster under a steady client load (issue #4), and report
# how fast keys move and what the move does to the client's latency.
#
# `slotraft bench reshard` does the run: it starts 3 `slotraft server`
# processes of its own (3 groups x 3 replicas, data in a temp dir, loopback
# ports the OS says are free), loads RESHARD_KEYS keys of 100 bytes with
# go-redis pipelines, runs a client doing GET (value checked) and SET on
# random loaded keys at RESHARD_RATE ops/s, measures its latency for 10 s,
# then moves the last third of every group's slots to the next group
# (SLOTRAFT MOVE-SLOTS; 1 -> 2, 2 -> 3, 3 -> 1: 5460 slots, and each group
# ends with as many slots as it had), follows SLOTRAFT MIGRATIONS until
# nothing is pending (failing after 30 min), reads every key back, and stops
# the servers. It fails if the client saw any error or a key did not read
# back intact.
#
# Knobs (environment): RESHARD_KEYS (1000000), RESHARD_RATE (500 ops/s),
# RESHARD_QUICK=1 (20000 keys and a 3 s baseline, for a try in a minute).
# Arguments are passed on to `slotraft bench reshard` (see its -h).
set -euo pipefail
cd "$(dirname "$0")/.."
LOG_PREFIX=bench-reshard
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

RESHARD_KEYS=${RESHARD_KEYS:-}
RESHARD_RATE=${RESHARD_RATE:-500}
RESHARD_QUICK=${RESHARD_QUICK:-}

command -v go >/dev/null || { echo "bench-reshard: go not found" >&2; exit 1; }

args=(--rate "$RESHARD_RATE")
[[ -n $RESHARD_QUICK ]] && args+=(--quick)
[[ -n $RESHARD_KEYS ]] && args+=(--keys "$RESHARD_KEYS")

log "building bin/slotraft"
CGO_ENABLED=0 go build -trimpath -o bin/slotraft ./cmd/slotraft
echo "reshard: $(nproc) cores; $(uname -sr); load average $(cut -d' ' -f1-3 /proc/loadavg)"
# exec: Ctrl-C reaches the bench, which stops the servers it started.
exec bin/slotraft bench reshard "${args[@]}" "$@"
