package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
)

// infoOf reads one field of INFO section through do.
func infoOf(t *testing.T, do func(args ...string) string, section, field string) string {
	t.Helper()
	v := infoField(do("INFO", section), field)
	if v == "" {
		t.Fatalf("INFO %s has no %s", section, field)
	}
	return v
}

func infoInt(t *testing.T, do func(args ...string) string, section, field string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(infoOf(t, do, section, field), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMaxmemoryNoEviction: over maxmemory under noeviction, commands that
// may grow memory get Redis's -OOM and change nothing; reads and DEL go
// on; in MULTI every command is refused and EXEC aborts; lifting the
// limit lets writes through again.
func TestMaxmemoryNoEviction(t *testing.T) {
	do := singleNodeDo(t)
	for i := range 10 {
		if got := do("SET", fmt.Sprint("k", i), "value"); got != "+OK" {
			t.Fatalf("SET: %s", got)
		}
	}
	const oom = "-OOM command not allowed when used memory > 'maxmemory'."
	steps := [][2]string{
		{"CONFIG SET maxmemory 100", "+OK"},
		{"INFO memory", ""},
		{"SET k0 other", oom},
		{"GET k0", "value"},
		{"RPUSH l x", oom},
		{"EVAL return~1 1 k0", oom},
		{"EVAL_RO return~redis.call('get',KEYS[1]) 1 k0", "value"},
		{"DEL k1", ":1"},
		{"MULTI", "+OK"},
		{"GET k0", oom},
		{"EXEC", "-EXECABORT Transaction discarded because of previous errors."},
		{"CONFIG SET maxmemory 0", "+OK"},
		{"SET k0 other", "+OK"},
		{"GET k0", "other"},
	}
	for _, st := range steps {
		args := strings.Fields(st[0])
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], "~", " ")
		}
		if got := do(args...); st[1] != "" && got != st[1] {
			t.Errorf("%s: got %q, want %q", st[0], got, st[1])
		}
	}
	if got := infoOf(t, do, "memory", "maxmemory_policy"); got != "noeviction" {
		t.Errorf("maxmemory_policy %q", got)
	}
	if n := infoInt(t, do, "stats", "evicted_keys"); n != 0 {
		t.Errorf("evicted_keys %d under noeviction", n)
	}
}

// TestMaxmemoryExecAbortsOOM: a transaction queued before the node went
// over its limit is refused whole at EXEC when it may grow memory.
func TestMaxmemoryExecAbortsOOM(t *testing.T) {
	addr := singleNodeAddr(t)
	do, other := connDo(t, addr), connDo(t, addr)
	do("SET", "a", "1")
	for _, st := range [][2]string{
		{"MULTI", "+OK"}, {"SET a 2", "+QUEUED"}, {"GET a", "+QUEUED"},
		{"EXEC", "-EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'."},
	} {
		if st[0] == "EXEC" {
			other("CONFIG", "SET", "maxmemory", "1") // the node goes over between MULTI and EXEC
		}
		if got := do(strings.Fields(st[0])...); got != st[1] {
			t.Fatalf("%s: got %q, want %q", st[0], got, st[1])
		}
	}
	if got := do("GET", "a"); got != "1" {
		t.Fatalf("GET a = %s after the aborted EXEC", got)
	}
}

// TestMaxmemoryCacheAside runs a cache-aside workload ten times larger
// than maxmemory under allkeys-lru: every write succeeds, the dataset
// comes back under the limit, keys were evicted with their events, and
// the hot keys, read all along, stay.
func TestMaxmemoryCacheAside(t *testing.T) {
	do := singleNodeDo(t)
	const limit = 256 << 10
	for _, kv := range [][2]string{{"maxmemory", fmt.Sprint(limit)}, {"maxmemory-policy", "allkeys-lru"},
		{"notify-keyspace-events", "Ee"}} {
		if got := do("CONFIG", "SET", kv[0], kv[1]); got != "+OK" {
			t.Fatalf("CONFIG SET %s: %s", kv[0], got)
		}
	}
	value := strings.Repeat("v", 500)
	hot := func(i int) string { return fmt.Sprintf("hot:%d", i) }
	misses := 0
	for i := range 5000 {
		h := hot(i % 20)
		if do("GET", h) == "nil" {
			misses++
			if got := do("SET", h, value); got != "+OK" {
				t.Fatalf("SET %s: %s", h, got)
			}
		}
		if got := do("SET", fmt.Sprint("cold:", i), value); got != "+OK" {
			t.Fatalf("SET cold:%d: %s", i, got)
		}
	}
	cluster.PollUntil(t, "the dataset under maxmemory", func() bool {
		return infoInt(t, do, "memory", "used_memory_dataset") <= limit
	})
	if n := infoInt(t, do, "stats", "evicted_keys"); n < 3000 {
		t.Errorf("evicted_keys %d, want most of the 5000 cold keys", n)
	}
	stayed := 0
	for i := range 20 {
		if do("EXISTS", hot(i)) == ":1" {
			stayed++
		}
	}
	if stayed < 18 || misses > 100 {
		t.Errorf("%d of 20 hot keys stayed, %d misses on them: LRU evicted hot keys", stayed, misses)
	}
	if got := infoOf(t, do, "memory", "maxmemory_human"); got != "256.00K" {
		t.Errorf("maxmemory_human %q", got)
	}
}

// TestMaxmemoryNothingToEvict: under volatile-lru with no key that has a
// deadline, nothing can be evicted, so writes are refused with -OOM.
func TestMaxmemoryNothingToEvict(t *testing.T) {
	do := singleNodeDo(t)
	do("SET", "a", strings.Repeat("x", 1000))
	do("CONFIG", "SET", "maxmemory-policy", "volatile-lru", "maxmemory", "100")
	cluster.PollUntil(t, "SET refused with -OOM", func() bool { return strings.HasPrefix(do("SET", "b", "1"), "-OOM") })
	if got := do("GET", "a"); len(got) != 1000 {
		t.Fatalf("the key without a deadline was evicted: %q", got)
	}
	do("SET", "a", "x", "PX", "100000", "XX") // refused too: denyoom
	do("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
	cluster.PollUntil(t, "a evicted", func() bool { return do("EXISTS", "a") == ":0" })
}

func TestObjectFreqUnderLFU(t *testing.T) {
	do := singleNodeDo(t)
	do("SET", "k", "v")
	if got := do("OBJECT", "FREQ", "k"); !strings.HasPrefix(got, "-ERR An LFU maxmemory policy is not selected") {
		t.Fatalf("OBJECT FREQ under noeviction: %s", got)
	}
	do("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu", "lfu-log-factor", "0")
	for range 3 {
		do("GET", "k")
	}
	if got := do("OBJECT", "FREQ", "k"); got != ":8" {
		t.Fatalf("OBJECT FREQ after 3 reads with log factor 0: %s, want :8", got)
	}
	if got := do("OBJECT", "IDLETIME", "k"); !strings.HasPrefix(got, "-ERR An LFU maxmemory policy is selected") {
		t.Fatalf("OBJECT IDLETIME under LFU: %s", got)
	}
	do("CLIENT", "NO-TOUCH", "on")
	do("GET", "k")
	if got := do("OBJECT", "FREQ", "k"); got != ":8" {
		t.Fatalf("a NO-TOUCH read counted: %s", got)
	}
	do("TOUCH", "k")
	if got := do("OBJECT", "FREQ", "k"); got != ":9" {
		t.Fatalf("TOUCH by a NO-TOUCH client did not count: %s", got)
	}
}
