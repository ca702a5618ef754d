package difftest

import "testing"

// TestReplicationDifferential: ROLE and WAIT on a master without replicas
// (a one-node slotraft leads its only group) answer as redis-server does.
// ROLE's offset is not compared: Redis's counts replication bytes (0
// without replicas), slotraft's applied log indexes. WAITAOF is new in
// Redis 7.2 and the installed redis-server is 7.0: it is tested in
// cluster/server only.
func TestReplicationDifferential(t *testing.T) {
	rc, sc := connect(t, startRedis(t), "2"), connect(t, startSlotraft(t), "2")
	for _, args := range [][]string{
		{"WAIT", "0", "0"},
		{"SET", "k", "v"},
		{"WAIT", "0", "0"},
		{"WAIT", "1", "50"},
		{"WAIT", "x", "0"},
		{"WAIT", "1", "-1"},
		{"WAIT", "1", "1.5"},
		{"WAIT", "1", "99999999999999999999"},
		{"WAIT", "1"},
		{"ROLE", "x"},
	} {
		same(t, rc, sc, args...)
	}
	for name, c := range map[string]*client{"redis-server": rc, "slotraft": sc} {
		r, err := c.do("ROLE")
		if err != nil || r.typ != '*' || len(r.elems) != 3 || r.elems[0].str != "master" ||
			r.elems[1].typ != ':' || r.elems[2].typ != '*' || len(r.elems[2].elems) != 0 {
			t.Errorf("%s: ROLE = %v %v, want [master offset []]", name, r, err)
		}
	}
}
