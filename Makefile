# slotraft: see README.md. Every target runs from the repository root.

GO          ?= go
BIN         := bin/slotraft
IMAGE       ?= slotraft:dev
# What `slotraft version` and INFO's slotraft_version report.
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
FUZZTIME    ?= 30s
# staticcheck 2026.2.2, which understands Go 1.26.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# apt-get runs as root directly, through sudo otherwise.
SUDO        := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build run test test-long test-deps lint chaos bench bench-failover bench-reshard bench-memory bench-eviction fuzz docker clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/slotraft

# A local cluster of three `slotraft server` processes on 127.0.0.1:7001-7003.
run: build
	./$(BIN) dev

# The tests drive real processes with redis-cli, a real Prometheus
# scrapes a cluster's /metrics, headless Chromium loads the dashboard;
# redis-server and redis-benchmark serve the benchmarks. Install them on a
# fresh Debian machine. (Debian's prometheus package may start a service
# on :9090; the test runs its own, on a free port.)
test-deps:
	@if ! command -v redis-cli >/dev/null 2>&1 || ! command -v redis-server >/dev/null 2>&1 \
		|| ! command -v redis-benchmark >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then \
		echo "installing redis-tools, redis-server and prometheus"; \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-tools redis-server prometheus; \
	fi
	@if ! /usr/bin/python3 -c 'import redis.cluster' >/dev/null 2>&1; then \
		echo "installing python3-redis (redis-py, for the TLS client test)"; \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-redis; \
	fi
	@if ! NODE_PATH=/usr/share/nodejs node -e "require('redis')" >/dev/null 2>&1 || ! ruby -e "require 'redis'" >/dev/null 2>&1; then \
		echo "installing node-redis and ruby-redis (Redis Cluster clients of other languages)"; \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs node-redis ruby ruby-redis; \
	fi
	@if ! command -v chromium >/dev/null 2>&1; then \
		echo "installing chromium (headless, for the dashboard's browser tests)"; \
		$(SUDO) apt-get update && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; \
	fi

# The chaos playground's end-to-end tests run five-node clusters under load
# for minutes; beside the other packages' clusters on two cores they starve
# both, so they run after the rest, alone.
# The other packages' tests mostly wait (Raft timers, elections, processes
# starting): with go test's default of one package per core, two cores sat
# half idle and the packages took 12 minutes; four at a time take 8
# (TEST_PARALLEL sets it).
# The dashboard's browser tests keep their screenshots in bin/test-artifacts.
CHAOS_PKG := ./cmd/slotraft/chaos
TEST_PARALLEL ?= 4
test: test-deps
	SLOTRAFT_TEST_ARTIFACTS=$(CURDIR)/bin/test-artifacts $(GO) test -p $(TEST_PARALLEL) -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v '/cmd/slotraft/chaos$$')
	$(GO) test -race -count=1 -timeout 15m $(CHAOS_PKG)

# The full-size variants of tests that make test runs smaller to stay within
# its time (TestScaleOutRebalance: 100,000 keys and 3 nodes added instead of
# 20,000 and one; TestMigrationSurvivesLeaderKills: 50,000 keys instead of
# 15,000; TestDockerCompose: a rolling restart of all six containers
# instead of two; the store's and fsm's large-value tests: a million
# elements instead of 200,000-250,000). About 17 minutes.
test-long: test-deps
	SLOTRAFT_TEST_LONG=1 $(GO) test -race -count=1 -timeout 15m -run 'Million|TestLargeValuesSnapshot' ./store ./fsm
	SLOTRAFT_TEST_LONG=1 $(GO) test -race -count=1 -timeout 30m -run 'TestScaleOutRebalance|TestMigrationSurvivesLeaderKills' ./cluster/testcluster
	SLOTRAFT_TEST_LONG=1 $(GO) test -race -count=1 -timeout 15m -run 'TestDockerCompose' ./cmd/slotraft

# 20 chaos runs of 60 s (CHAOS_RUNS, CHAOS_DURATION), every built fault
# kind and workload, a seed each, then a table; needs root and nft. About
# 25 minutes; not part of `make test`, which runs one chaos run and the
# planted-bug check (cmd/slotraft/chaos). See docs/chaos.md.
chaos: build
	scripts/chaos.sh

lint:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt -l:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

bench: test-deps
	scripts/bench.sh

# Failover time of slotraft vs Redis Cluster (kill -9 a master under writes);
# several minutes, not part of `make test`.
bench-failover: test-deps
	scripts/bench-failover.sh

# Keys/s moved and the client's p99 before vs during a move of a third of the
# slots between groups, on a 3-node cluster the bench starts itself; up to
# half an hour with the default 1,000,000 keys, a minute or so with
# RESHARD_QUICK=1 (20,000 keys). Needs only Go; not part of `make test`.
bench-reshard:
	scripts/bench-reshard.sh

# Memory per key of 1,000,000 small string keys (BENCH_MEMORY_N): each
# slotraft node's Go heap and RSS vs redis-server's used_memory and RSS,
# on a 3-node cluster and a redis-server the script starts itself; a few
# minutes, not part of `make test`.
bench-memory: test-deps
	scripts/bench-memory.sh

# The hit rate of a cache-aside Zipf trace under maxmemory allkeys-lru,
# slotraft vs redis-server on the same trace (goal: within 5 points); a
# minute or two, not part of `make test`. EVICT_* knobs in the script.
bench-eviction: test-deps
	scripts/bench-eviction.sh

# Runs every Fuzz target for FUZZTIME (optional; not part of `make test`).
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
		d="./$$(dirname "$$f" | sed 's|^\./||')"; \
		for n in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$f"); do \
			echo "== $$d $$n"; \
			$(GO) test -run='^$$' -fuzz="^$$n$$" -fuzztime=$(FUZZTIME) "$$d"; \
		done; \
	done

# A FROM-scratch image holding the static binary; see deploy/.
docker: build
	rm -rf bin/image && mkdir -p bin/image/data && cp $(BIN) bin/image/
	docker build -f deploy/Dockerfile -t $(IMAGE) \
		--build-arg VERSION=$(VERSION) --build-arg REVISION=$$(git rev-parse HEAD 2>/dev/null || echo unknown) bin/image

clean:
	rm -rf bin data/dev data/chaos
