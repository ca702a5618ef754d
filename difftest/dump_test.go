package difftest

import (
	"fmt"
	"strings"
	"testing"
)

// TestDumpRoundTrip moves every type, small (compact encodings) and large,
// from redis-server to slotraft with DUMP and RESTORE, and back.
func TestDumpRoundTrip(t *testing.T) {
	rc, sc := connect(t, startRedis(t), "2"), connect(t, startSlotraft(t), "2")
	type value struct {
		key  string
		make [][]string // commands creating it in redis-server
		read []string   // reads it back; %s is the key
		mode mode
	}
	many := func(n int, f func(i int) []string) [][]string {
		var out [][]string
		for i := range n {
			out = append(out, f(i))
		}
		return out
	}
	long := strings.Repeat("long value ", 20)
	values := []value{
		{"{d}str", [][]string{{"SET", "{d}str", "hello"}}, []string{"GET"}, exact},
		{"{d}int", [][]string{{"SET", "{d}int", "-123456"}}, []string{"GET"}, exact},
		{"{d}lzf", [][]string{{"SET", "{d}lzf", strings.Repeat("abc", 100)}}, []string{"GET"}, exact},
		{"{d}list", [][]string{{"RPUSH", "{d}list", "a", "1", "-70000", "", "b"}}, []string{"LRANGE", "%s", "0", "-1"}, exact},
		{"{d}biglist", many(1000, func(i int) []string { return []string{"RPUSH", "{d}biglist", fmt.Sprint("e", i, long[:i%len(long)])} }),
			[]string{"LRANGE", "%s", "0", "-1"}, exact},
		{"{d}hash", [][]string{{"HSET", "{d}hash", "f", "v", "n", "12"}}, []string{"HGETALL"}, pairs},
		{"{d}bighash", many(600, func(i int) []string { return []string{"HSET", "{d}bighash", fmt.Sprint("f", i), fmt.Sprint(i, long)} }),
			[]string{"HGETALL"}, pairs},
		{"{d}intset", [][]string{{"SADD", "{d}intset", "1", "-5", "100000", "9999999999"}}, []string{"SMEMBERS"}, unordered},
		{"{d}set", [][]string{{"SADD", "{d}set", "a", "b", "1"}}, []string{"SMEMBERS"}, unordered},
		{"{d}bigset", many(700, func(i int) []string { return []string{"SADD", "{d}bigset", fmt.Sprint("m", i)} }), []string{"SMEMBERS"}, unordered},
		{"{d}zset", [][]string{{"ZADD", "{d}zset", "1.5", "a", "-inf", "b", "3", "c", "+inf", "d"}}, []string{"ZRANGE", "%s", "0", "-1", "WITHSCORES"}, exact},
		{"{d}bigzset", many(300, func(i int) []string { return []string{"ZADD", "{d}bigzset", fmt.Sprint(i, ".25"), fmt.Sprint("m", i)} }),
			[]string{"ZRANGE", "%s", "0", "-1", "WITHSCORES"}, exact},
	}
	readCmd := func(v value, key string) []string {
		if len(v.read) == 1 {
			return []string{v.read[0], key}
		}
		out := append([]string(nil), v.read...)
		out[1] = key
		return out
	}
	read := func(c *client, v value, key string) string {
		r, err := c.do(readCmd(v, key)...)
		if err != nil {
			t.Fatal(err)
		}
		return normalize(r, v.mode)
	}
	for _, v := range values {
		if _, err := rc.pipeline(v.make); err != nil {
			t.Fatal(err)
		}
		want := read(rc, v, v.key)
		payload, err := rc.do("DUMP", v.key)
		if err != nil || payload.typ != '$' {
			t.Fatalf("redis DUMP %s: %v %v", v.key, payload, err)
		}
		if r, err := sc.do("RESTORE", v.key, "0", payload.str, "REPLACE"); err != nil || r.str != "OK" {
			t.Errorf("slotraft RESTORE %s: %v %v", v.key, r, err)
			continue
		}
		if got := read(sc, v, v.key); got != want {
			t.Errorf("%s in slotraft: %.200s, want %.200s", v.key, got, want)
		}
		back, err := sc.do("DUMP", v.key)
		if err != nil || back.typ != '$' {
			t.Fatalf("slotraft DUMP %s: %v %v", v.key, back, err)
		}
		if r, err := rc.do("RESTORE", v.key+"back", "0", back.str); err != nil || r.str != "OK" {
			t.Errorf("redis RESTORE of slotraft's DUMP of %s: %v %v", v.key, r, err)
			continue
		}
		if got := read(rc, v, v.key+"back"); got != want {
			t.Errorf("%s back in redis: %.200s, want %.200s", v.key, got, want)
		}
	}
}
