package server

import (
	"strconv"
	"testing"
)

// TestEncodingLimitsConfig: the encoding parameters drive OBJECT ENCODING
// as in Redis, from the next write after CONFIG SET (the groups led here
// take them through their logs), for every type, and setting them back to
// the defaults works too.
func TestEncodingLimitsConfig(t *testing.T) {
	do := singleNodeDo(t)
	set := func(pairs ...string) {
		t.Helper()
		if got := do(append([]string{"CONFIG", "SET"}, pairs...)...); got != "+OK" {
			t.Fatalf("CONFIG SET %v: %s", pairs, got)
		}
	}
	enc := func(key string) string {
		t.Helper()
		return do("OBJECT", "ENCODING", key)
	}
	fill := func(cmd, key string, n int, withScore bool) {
		t.Helper()
		for i := range n {
			args := []string{cmd, key}
			if withScore {
				args = append(args, strconv.Itoa(i))
			}
			if got := do(append(args, "m"+strconv.Itoa(i))...); len(got) > 0 && got[0] == '-' {
				t.Fatalf("%v: %s", args, got)
			}
		}
	}
	set("hash-max-listpack-entries", "3", "set-max-listpack-entries", "3", "set-max-intset-entries", "3",
		"zset-max-listpack-entries", "3", "list-max-listpack-size", "3")
	for _, tc := range []struct {
		cmd, key     string
		score        bool
		small, large string
	}{
		{"SADD", "{e}s", false, "listpack", "hashtable"},
		{"ZADD", "{e}z", true, "listpack", "skiplist"},
		{"RPUSH", "{e}l", false, "listpack", "quicklist"},
	} {
		fill(tc.cmd, tc.key, 3, tc.score)
		if got := enc(tc.key); got != tc.small {
			t.Errorf("%s of 3: %s, want %s", tc.key, got, tc.small)
		}
		fill(tc.cmd, tc.key, 4, tc.score)
		if got := enc(tc.key); got != tc.large {
			t.Errorf("%s of 4: %s, want %s", tc.key, got, tc.large)
		}
	}
	for i := range 4 {
		do("HSET", "{e}h", "f"+strconv.Itoa(i), "v")
		want := "listpack"
		if i == 3 {
			want = "hashtable"
		}
		if got := enc("{e}h"); got != want {
			t.Errorf("hash of %d fields: %s, want %s", i+1, got, want)
		}
	}
	for i := range 4 {
		do("SADD", "{e}ints", strconv.Itoa(i))
	}
	if got := enc("{e}ints"); got != "hashtable" {
		t.Errorf("4 integers over set-max-intset-entries 3: %s", got)
	}
	set("hash-max-listpack-value", "4")
	do("HSET", "{e}h2", "f", "12345")
	if got := enc("{e}h2"); got != "hashtable" {
		t.Errorf("a 5-byte value over hash-max-listpack-value 4: %s", got)
	}
	set("hash-max-listpack-entries", "512", "hash-max-listpack-value", "64")
	do("HSET", "{e}h3", "f", "12345")
	if got := enc("{e}h3"); got != "listpack" {
		t.Errorf("after the defaults came back: %s", got)
	}
}
