package difftest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster/testcluster"
)

// TestDebugNotAllowedDifferential: with enable-debug-command at its
// default (no), DEBUG is refused with Redis's error, subcommand or not.
func TestDebugNotAllowedDifferential(t *testing.T) {
	rc, sc := connect(t, startRedis(t), "2"), connect(t, startSlotraft(t), "2")
	sameReplies(t, rc, sc, [][]string{{"DEBUG", "DIGEST"}, {"DEBUG", "SLEEP", "0"}, {"DEBUG", "NOPE"}, {"DEBUG"}})
}

// startSlotraftDebug serves a one-node slotraft whose config file sets
// enable-debug-command yes.
func startSlotraftDebug(t *testing.T) string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "slotraft.conf")
	if err := os.WriteFile(conf, []byte("enable-debug-command yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := testcluster.New(t, 1, testcluster.Options{Groups: 1, Replicas: 1, ConfigFile: conf})
	c.WaitLeaders(20 * time.Second)
	return c.Addrs()[0]
}

// TestDebugDifferential: against redis-server with enable-debug-command
// yes, DEBUG PROTOCOL's every type (RESP2 and RESP3, pushes and
// attributes included), SLEEP 0, ERROR, LOG, the errors, OBJECT's
// encoding and serialized length, DIGEST and DIGEST-VALUE of the same data
// of every type (with and without deadlines), SET-ACTIVE-EXPIRE and
// QUICKLIST-PACKED-THRESHOLD agree; HELP's lines are Redis's.
func TestDebugDifferential(t *testing.T) {
	redisAddr := startRedisWith(t, "--enable-debug-command", "yes")
	slotraftAddr := startSlotraftDebug(t)
	for _, proto := range []string{"2", "3"} {
		rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
		var cmds [][]string
		for _, typ := range []string{"string", "integer", "double", "bignum", "null", "array", "set", "map",
			"verbatim", "true", "false", "attrib", "push", "nosuch", "STRING"} {
			cmds = append(cmds, []string{"DEBUG", "PROTOCOL", typ})
		}
		cmds = append(cmds, []string{"PING"}, // after push's two replies
			[]string{"DEBUG", "SLEEP", "0"}, []string{"DEBUG", "SLEEP", "x"}, []string{"DEBUG", "SLEEP", "0.01"},
			[]string{"DEBUG", "ERROR", "MYERR some\r\ntext"}, []string{"DEBUG", "ERROR", "plain"},
			[]string{"DEBUG", "LOG", "from the difftest"}, []string{"DEBUG", "NOPE"}, []string{"DEBUG", "SLEEP"},
			[]string{"DEBUG", "DIGEST", "x"}, []string{"DEBUG", "OBJECT", "nokey"}, []string{"DEBUG", "LISTPACK", "nokey"},
			[]string{"DEBUG", "SET-ACTIVE-EXPIRE", "1"}, []string{"DEBUG", "QUICKLIST-PACKED-THRESHOLD", "5gb"},
			[]string{"DEBUG", "QUICKLIST-PACKED-THRESHOLD", "1mb"}, []string{"DEBUG", "QUICKLIST-PACKED-THRESHOLD", "x"},
			[]string{"DEBUG", "QUICKLIST-PACKED-THRESHOLD", "0"},
		)
		sameReplies(t, rc, sc, cmds)
	}
	rc, sc := connect(t, redisAddr, "2"), connect(t, slotraftAddr, "2")
	debugDigests(t, rc, sc)
	want, got := both(t, rc, sc, []string{"DEBUG", "HELP"})
	redisLines := map[string]bool{}
	for _, e := range want.elems {
		redisLines[e.str] = true
	}
	for _, e := range got.elems {
		if !redisLines[e.str] && !strings.HasPrefix(e.str, "    Print") {
			t.Errorf("DEBUG HELP line %q is not Redis's", e.str)
		}
	}
}

// debugDigests fills both with the same data of every type and compares
// DEBUG DIGEST, DIGEST-VALUE and OBJECT's encoding and serializedlength.
func debugDigests(t *testing.T, rc, sc *client) {
	t.Helper()
	sameReplies(t, rc, sc, [][]string{{"DEBUG", "DIGEST"}, {"DEBUG", "DIGEST-VALUE", "nokey"}})
	sameReplies(t, rc, sc, [][]string{
		{"SET", "s{d}", "hello"}, {"SET", "n{d}", "12345"}, {"SET", "big{d}", strings.Repeat("x", 100)},
		{"SET", "t{d}", "v", "EX", "1000"}, {"RPUSH", "l{d}", "a", "b", "c", "1"},
		{"SADD", "set{d}", "x", "y", "z"}, {"SADD", "iset{d}", "1", "2", "30"},
		{"HSET", "h{d}", "f1", "v1", "f2", "v2"}, {"ZADD", "z{d}", "1", "a", "2.5", "b", "-3", "c", "1e20", "d", "inf", "e"},
		{"XADD", "x{d}", "1-1", "f", "v"}, {"XADD", "x{d}", "2-0", "f", "w", "g", "u"},
		{"DEBUG", "DIGEST"},
		{"DEBUG", "DIGEST-VALUE", "s{d}", "n{d}", "t{d}", "l{d}", "set{d}", "iset{d}", "h{d}", "z{d}", "x{d}", "nokey"},
		{"DEBUG", "SET-ACTIVE-EXPIRE", "0"}, {"DEBUG", "SET-ACTIVE-EXPIRE", "1"},
	})
	// Small lists and sets of strings are listpacks in Redis 7.2, quicklist
	// and hashtable in 7.0: their encodings are not compared. The
	// serialized length is compared for small strings only: slotraft's RDB
	// form compresses nothing and writes collections element by element.
	for _, key := range []string{"s{d}", "n{d}", "big{d}", "l{d}", "set{d}", "iset{d}", "h{d}", "z{d}"} {
		want, got := both(t, rc, sc, []string{"DEBUG", "OBJECT", key})
		sizes := key == "s{d}" || key == "n{d}"
		encodings := key != "l{d}" && key != "set{d}"
		if w, g := objectFields(want.str, sizes, encodings), objectFields(got.str, sizes, encodings); w != g {
			t.Errorf("DEBUG OBJECT %s:\n  redis:    %s\n  slotraft: %s", key, want.str, got.str)
		}
	}
}

// objectFields keeps DEBUG OBJECT's comparable fields: the refcount, the
// encoding and the serialized length when asked (the address, lru and
// idle time differ), and the fields' names in order.
func objectFields(line string, sizes, encodings bool) string {
	var out []string
	for _, f := range strings.Fields(line) {
		name, _, _ := strings.Cut(f, ":")
		switch {
		case name == "refcount", name == "serializedlength" && sizes, name == "encoding" && encodings:
			out = append(out, f)
		case strings.HasPrefix(name, "ql_"):
			// a quicklist's details: slotraft gives none (docs/compatibility.md)
		default:
			out = append(out, name)
		}
	}
	return strings.Join(out, " ")
}
