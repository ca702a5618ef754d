package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
)

// TestInfoKeyspace: keys and expires are the stores' counts and avg_ttl
// the sampled average of the deadlines ahead, in milliseconds.
func TestInfoKeyspace(t *testing.T) {
	do := singleNodeDo(t) // every group led: no SET is redirected
	for i := range 30 {
		args := []string{"SET", "{ks}" + strconv.Itoa(i), "v"}
		if i < 10 {
			args = append(args, "EX", "100")
		}
		if got := do(args...); got != "+OK" {
			t.Fatalf("%v: %s", args, got)
		}
	}
	// INFO counts the groups this node knows it leads: that view may lag
	// the writes' acknowledgements for a moment.
	var info string
	i := -1
	cluster.PollUntil(t, "INFO keyspace shows the 30 keys", func() bool {
		info = do("INFO", "keyspace")
		i = strings.Index(info, "db0:keys=30,expires=10,avg_ttl=")
		return i >= 0
	})
	ttl, err := strconv.Atoi(strings.TrimSpace(info[i+len("db0:keys=30,expires=10,avg_ttl="):]))
	if err != nil || ttl < 90_000 || ttl > 100_000 {
		t.Errorf("avg_ttl %d (%v), want about 100000", ttl, err)
	}
}

// TestInfoCounters: expired_keys counts the keys active expiry deletes and
// those a write finds expired; rdb_changes_since_last_save counts the
// keys the writes changed and SAVE zeroes it (rdb_saves counts it); the watch,
// auth and I/O counters move; CONFIG RESETSTAT zeroes them.
func TestInfoCounters(t *testing.T) {
	do := singleNodeDo(t)
	if got := do("SAVE"); got != "+OK" {
		t.Fatalf("SAVE: %s", got)
	}
	for i := range 5 {
		if got := do("SET", "{ex}"+strconv.Itoa(i), "v", "PX", "30"); got != "+OK" {
			t.Fatalf("SET: %s", got)
		}
	}
	cluster.PollUntil(t, "active expiry deletes the 5 keys", func() bool {
		return infoField(do("INFO", "stats"), "expired_keys") == "5"
	})
	info := do("INFO", "persistence")
	if got := infoField(info, "rdb_changes_since_last_save"); got != "5" {
		t.Errorf("rdb_changes_since_last_save %q, want 5", got)
	}
	// Counted by key changed, as Redis's dirty: writes that change
	// nothing count nothing.
	for _, cmd := range [][]string{
		{"MSET", "{c}a", "1", "{c}b", "2"}, // 2
		{"SETBIT", "{c}bits", "3", "1"},    // 1
		{"SETBIT", "{c}bits", "3", "1"},    // the bit it has: 0
		{"SADD", "{c}set", "m"},            // 1
		{"SADD", "{c}set", "m"},            // a member present: 0
		{"DEL", "{c}missing"},              // 0
		{"INCR", "{c}a"},                   // 1
	} {
		if got := do(cmd...); strings.HasPrefix(got, "-") {
			t.Fatalf("%v: %s", cmd, got)
		}
	}
	if got := infoField(do("INFO", "persistence"), "rdb_changes_since_last_save"); got != "10" {
		t.Errorf("rdb_changes_since_last_save after the key changes %q, want 10", got)
	}
	if got := do("SAVE"); got != "+OK" {
		t.Fatalf("SAVE: %s", got)
	}
	info = do("INFO", "persistence")
	if ch, saves := infoField(info, "rdb_changes_since_last_save"), infoField(info, "rdb_saves"); ch != "0" || saves != "2" {
		t.Errorf("after SAVE: rdb_changes_since_last_save %q rdb_saves %q, want 0 2", ch, saves)
	}
	if got := do("AUTH", "nobody", "pw"); !strings.HasPrefix(got, "-WRONGPASS") {
		t.Errorf("AUTH nobody: %s", got)
	}
	stats := do("INFO", "stats")
	if got := infoField(stats, "acl_access_denied_auth"); got != "1" {
		t.Errorf("acl_access_denied_auth %q, want 1", got)
	}
	for _, f := range []string{"total_reads_processed", "total_writes_processed"} {
		if n, _ := strconv.Atoi(infoField(stats, f)); n < 10 {
			t.Errorf("%s %d, want at least 10", f, n)
		}
	}
	if got := do("CONFIG", "RESETSTAT"); got != "+OK" {
		t.Fatalf("CONFIG RESETSTAT: %s", got)
	}
	stats = do("INFO", "stats")
	for _, f := range []string{"expired_keys", "expired_time_cap_reached_count", "reply_buffer_expands"} {
		if got := infoField(stats, f); got != "0" {
			t.Errorf("after RESETSTAT %s %q, want 0", f, got)
		}
	}
	if got := infoField(do("INFO", "persistence"), "rdb_saves"); got != "0" {
		t.Errorf("after RESETSTAT rdb_saves %q, want 0", got)
	}
}

// TestInfoClientsWatch: watching_clients and total_watched_keys count the
// connections with WATCHed keys and the distinct keys; EXEC ends them.
func TestInfoClientsWatch(t *testing.T) {
	addr := singleNodeAddr(t)
	a, b, info := connDo(t, addr), connDo(t, addr), connDo(t, addr)
	if got := a("WATCH", "{w}1", "{w}2"); got != "+OK" {
		t.Fatalf("WATCH: %s", got)
	}
	if got := b("WATCH", "{w}2", "{w}3"); got != "+OK" {
		t.Fatalf("WATCH: %s", got)
	}
	// A connection publishes what INFO reads of it just after writing its
	// replies: INFO on another connection may lag a reply by a moment.
	watching := func(w, k string) func() bool {
		return func() bool {
			clients := info("INFO", "clients")
			return infoField(clients, "watching_clients") == w && infoField(clients, "total_watched_keys") == k
		}
	}
	cluster.PollUntil(t, "watching_clients 2, total_watched_keys 3", watching("2", "3"))
	a("MULTI")
	a("EXEC")
	b("UNWATCH")
	cluster.PollUntil(t, "watching_clients 0, total_watched_keys 0 after EXEC and UNWATCH", watching("0", "0"))
}
