package fsm

import (
	"strings"
	"testing"

	"github.com/slotraft/slotraft/resp"
)

func TestKeyspace(t *testing.T) {
	runTable(t, map[string][]step{
		"del exists type touch": {
			{"MSET a 1 b 2", "+OK"}, {"EXISTS a a b c", ":3"}, {"DEL a c", ":1"}, {"UNLINK b a", ":1"},
			{"TYPE a", "+none"}, {"SET s v", "+OK"}, {"TYPE s", "+string"}, {"TOUCH s s x", ":2"},
			{"SET e v PX 10", "+OK"}, {"sleep 10", ""}, {"EXISTS e", ":0"}, {"DEL e", ":0"}, {"DBSIZE", ":1"},
		},
		"rename": {
			{"RENAME a b", "-ERR no such key"}, {"SET a 1 EX 100", "+OK"}, {"RENAME a a", "+OK"},
			{"RENAME a b", "+OK"}, {"EXISTS a", ":0"}, {"GET b", `"1"`}, {"TTL b", ":100"},
			{"SET c 3", "+OK"}, {"RENAMENX b c", ":0"}, {"RENAMENX b b", ":0"}, {"RENAMENX b d", ":1"},
			{"RENAME d c", "+OK"}, {"GET c", `"1"`}, {"RENAMENX none x", "-ERR no such key"},
		},
		"copy": {
			{"SET a 1 EX 100", "+OK"}, {"COPY a b", ":1"}, {"TTL b", ":100"}, {"COPY a b", ":0"},
			{"SET a 2", "+OK"}, {"COPY a b REPLACE", ":1"}, {"GET b", `"2"`}, {"COPY x y", ":0"},
			{"COPY a a", "-ERR source and destination objects are the same"},
			{"COPY a c DB 1", "-ERR Copying to another database is not allowed in cluster mode"},
			{"COPY a c DB 16", "-ERR DB index is out of range"}, {"COPY a c DB x", "-ERR value is not an integer or out of range"},
			{"COPY a c DB 0", ":1"}, {"COPY a d FOO", "-ERR syntax error"},
		},
		"expire": {
			{"EXPIRE k 10", ":0"}, {"SET k v", "+OK"}, {"EXPIRE k 10", ":1"}, {"TTL k", ":10"}, {"PTTL k", ":10000"},
			{"EXPIRETIME k", ":1700000010"}, {"PEXPIRETIME k", ":1700000010000"},
			{"EXPIRE k 20 NX", ":0"}, {"EXPIRE k 20 XX", ":1"}, {"EXPIRE k 10 GT", ":0"}, {"EXPIRE k 30 GT", ":1"},
			{"EXPIRE k 40 LT", ":0"}, {"EXPIRE k 5 LT", ":1"}, {"TTL k", ":5"},
			{"PERSIST k", ":1"}, {"PERSIST k", ":0"}, {"TTL k", ":-1"}, {"EXPIRE k 10 GT", ":0"}, {"EXPIRE k 10 LT", ":1"},
			{"PEXPIREAT k 1700000001500", ":1"}, {"PTTL k", ":1500"}, {"EXPIREAT k 1700000003", ":1"}, {"PTTL k", ":3000"},
			{"PEXPIRE k 100", ":1"}, {"PTTL k", ":100"}, {"TTL nokey", ":-2"}, {"EXPIRETIME nokey", ":-2"},
			{"EXPIRE k -1", ":1"}, {"EXISTS k", ":0"},
		},
		"expire errors": {
			{"SET k v", "+OK"},
			{"EXPIRE k 10 NX XX", "-ERR NX and XX, GT or LT options at the same time are not compatible"},
			{"EXPIRE k 10 GT LT", "-ERR GT and LT options at the same time are not compatible"},
			{"EXPIRE k 10 FOO", "-ERR Unsupported option FOO"},
			{"EXPIRE k x", "-ERR value is not an integer or out of range"},
			{"EXPIRE k 9223372036854775807", "-ERR invalid expire time in 'expire' command"},
			{"PEXPIRE k 9223372036854775807", "-ERR invalid expire time in 'pexpire' command"},
			{"EXPIREAT k 9223372036854775807", "-ERR invalid expire time in 'expireat' command"},
			{"TTL k", ":-1"}, {"PEXPIREAT k 0", ":1"}, {"EXISTS k", ":0"},
		},
		"ttl rounding": {
			{"SET k v PX 1499", "+OK"}, {"TTL k", ":1"}, {"SET k v PX 1500", "+OK"}, {"TTL k", ":2"},
		},
		"keys scan": {
			{"MSET hello 1 hallo 2 hxllo 3 hllo 4 heeeello 5 a 6", "+OK"},
			{"sorted KEYS h?llo", `["hallo" "hello" "hxllo"]`},
			{"sorted KEYS h[^e]llo", `["hallo" "hxllo"]`}, {"read KEYS h[a-b]llo", `["hallo"]`},
			{"read KEYS nomatch", "[]"}, {"DBSIZE", ":6"},
			{"sorted SCAN 0 COUNT 100 MATCH h*llo TYPE string", `["0" ["hallo" "heeeello" "hello" "hllo" "hxllo"]]`},
			{"read SCAN 0 COUNT 100 TYPE list", `["0" []]`}, {"read SCAN 0 COUNT 100 TYPE nosuch", `["0" []]`},
			{"read SCAN 0 COUNT 0", "-ERR syntax error"}, {"read SCAN 0 COUNT x", "-ERR value is not an integer or out of range"},
			{"read SCAN x", "-ERR invalid cursor"}, {"read SCAN -1", "-ERR invalid cursor"}, {"read SCAN 0 MATCH", "-ERR syntax error"},
		},
		"flush randomkey": {
			{"read RANDOMKEY", "nil"}, {"SET a 1", "+OK"}, {"read RANDOMKEY", `"a"`}, {"RANDOMKEY", `"a"`},
			{"FLUSHALL ASYNC", "+OK"}, {"DBSIZE", ":0"}, {"SET a 1", "+OK"}, {"FLUSHDB SYNC", "+OK"}, {"DBSIZE", ":0"},
			{"FLUSHDB FOO", "-ERR syntax error"}, {"FLUSHALL SYNC ASYNC", "-ERR syntax error"},
		},
		"object": {
			{"SET i 123", "+OK"}, {"SET e abc", "+OK"}, {"SET big 12345678901234567890123456789012345678901234567890", "+OK"},
			{"SET r 123456", "+OK"},
			{"OBJECT ENCODING i", `"int"`}, {"OBJECT ENCODING e", `"embstr"`}, {"OBJECT ENCODING big", `"raw"`},
			{"OBJECT ENCODING none", "nil"}, {"OBJECT REFCOUNT i", ":2147483647"}, {"OBJECT REFCOUNT r", ":1"},
			{"OBJECT REFCOUNT e", ":1"}, {"sleep 5000", ""}, {"OBJECT IDLETIME e", ":5"}, {"read OBJECT IDLETIME e", ":5"},
			{"OBJECT FREQ none", "nil"},
			{"OBJECT FREQ e", "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."},
			{"OBJECT FOO e", "-ERR unknown subcommand 'FOO'. Try OBJECT HELP."},
			{"OBJECT ENCODING", "-ERR wrong number of arguments for 'object|encoding' command"},
		},
	})
}

func TestObjectHelpAndMeta(t *testing.T) {
	h := newHarness(t)
	got := h.do("OBJECT HELP")
	if !strings.HasPrefix(got, "[+OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:") ||
		!strings.HasSuffix(got, "+HELP +    Print this help.]") {
		t.Fatalf("OBJECT HELP = %s", got)
	}
	obj := Lookup([]byte("OBJECT"))
	if idx := obj.Meta.KeyIndexes(fields("OBJECT ENCODING k")); len(idx) != 1 || idx[0] != 2 {
		t.Fatalf("OBJECT ENCODING key indexes = %v", idx)
	}
	if idx := obj.Meta.KeyIndexes(fields("OBJECT HELP")); len(idx) != 0 {
		t.Fatalf("OBJECT HELP key indexes = %v", idx)
	}
}

func TestTable(t *testing.T) {
	if len(Commands()) < 45 {
		t.Fatalf("only %d commands", len(Commands()))
	}
	for _, c := range Commands() {
		m := c.Meta
		if m.Name != strings.ToLower(m.Name) || m.Arity == 0 || m.Summary == "" || m.Since == "" || m.Group == "" || (c.Run == nil) == (len(c.Subs) == 0) {
			t.Errorf("incomplete metadata: %+v", m)
		}
		// OBJECT is a container; admin commands such as PFSELFTEST, and
		// PING, ECHO and TIME, are neither.
		neither := m.Name == "object" || m.Is(resp.FlagAdmin) || m.Group == "connection" || m.Name == "time"
		if m.Is(resp.FlagWrite) == m.Is(resp.FlagReadOnly) && !neither {
			t.Errorf("%s: exactly one of write/readonly expected", m.Name)
		}
	}
	mset := Lookup([]byte("MsEt")).Meta
	if got := mset.KeysOf(fields("MSET a 1 b 2")); len(got) != 2 || string(got[1]) != "b" {
		t.Fatalf("MSET keys = %q", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a name twice did not panic")
		}
	}()
	register(Lookup([]byte("get")))
}
