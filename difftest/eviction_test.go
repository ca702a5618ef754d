package difftest

import (
	"strings"
	"testing"
)

// TestEvictionDifferential: maxmemory's replies agree exactly with
// redis-server: OBJECT FREQ and IDLETIME under LRU and LFU policies (their
// errors, nil for a missing key), TOUCH, RESTORE's FREQ, and -OOM under
// noeviction for writes, in MULTI and at EXEC, while reads and the
// commands that free memory go on. Both servers are over a maxmemory of
// 1 byte as soon as they hold a key (redis-server from the start).
func TestEvictionDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	slotraftAddr := startSlotraft(t)
	cmds := [][]string{
		{"SET", "{e}k", "v"},
		{"OBJECT", "FREQ", "{e}k"},
		{"OBJECT", "IDLETIME", "{e}k"},
		{"OBJECT", "FREQ", "{e}nokey"},
		{"TOUCH", "{e}k", "{e}nokey", "{e}k"},
		{"CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"},
		{"OBJECT", "IDLETIME", "{e}k"},
		{"OBJECT", "IDLETIME", "{e}nokey"},
		{"CONFIG", "SET", "lfu-log-factor", "0"},
		{"SET", "{e}f", "v"},
		{"OBJECT", "FREQ", "{e}f"},
		{"CONFIG", "SET", "maxmemory-policy", "noeviction", "maxmemory", "1"},
		{"SET", "{e}k", "w"},
		{"APPEND", "{e}k", "w"},
		{"GET", "{e}k"},
		{"EXISTS", "{e}k"},
		{"DEL", "{e}f"},
		{"EXPIRE", "{e}k", "100"}, // not denyoom
		{"PERSIST", "{e}k"},
		{"MULTI"},
		{"GET", "{e}k"},
		{"EXEC"},
		{"CONFIG", "GET", "maxmemory"},
		{"CONFIG", "GET", "maxmemory-policy"},
		{"CONFIG", "SET", "maxmemory", "0"},
		{"SET", "{e}k", "w"},
		{"GET", "{e}k"},
	}
	for _, proto := range []string{"2", "3"} {
		rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
		sameReplies(t, rc, sc, cmds)
		for _, field := range []string{"maxmemory:", "maxmemory_policy:", "evicted_keys:", "evicted_clients:",
			"total_eviction_exceeded_time:", "current_eviction_exceeded_time:", "used_memory_dataset:"} {
			for name, c := range map[string]*client{"redis-server": rc, "slotraft": sc} {
				info, err := c.do("INFO", "everything")
				if err != nil || !strings.Contains(info.str, "\r\n"+field) {
					t.Errorf("%s: INFO has no %s (%v)", name, field, err)
				}
			}
		}
		both(t, rc, sc, []string{"DEL", "{e}k"})
	}
}
