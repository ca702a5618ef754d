package difftest

import (
	"strconv"
	"strings"
	"testing"
)

// TestEncodingLimitsDifferential sets the encoding parameters on both
// servers, then builds collections across their limits and compares OBJECT
// ENCODING after every write: conversions happen at the same element, by
// count and by size, for hashes, sets (intset and listpack), sorted sets
// and lists (by count, and by the byte classes of list-max-listpack-size).
func TestEncodingLimitsDifferential(t *testing.T) {
	rc, sc := connect(t, startRedis(t), "2"), connect(t, startSlotraft(t), "2")
	both := func(args ...string) {
		t.Helper()
		same(t, rc, sc, args...)
	}
	both("CONFIG", "SET", "hash-max-listpack-entries", "4", "hash-max-listpack-value", "8",
		"set-max-intset-entries", "5", "zset-max-listpack-entries", "4", "zset-max-listpack-value", "7",
		"list-max-listpack-size", "5")
	// Sets of strings and lists are listpacks from Redis 7.2 on
	// (hashtables and quicklists before): compared only against a
	// redis-server that has set-max-listpack-entries.
	setListpacks := false
	if r, err := rc.do("CONFIG", "SET", "set-max-listpack-entries", "3", "set-max-listpack-value", "6"); err == nil && r.typ != '-' {
		setListpacks = true
		both("CONFIG", "GET", "set-max-listpack-*")
	} else {
		t.Log("redis-server before 7.2: sets of strings and lists not compared")
	}
	if _, err := sc.do("CONFIG", "SET", "set-max-listpack-entries", "3", "set-max-listpack-value", "6"); err != nil {
		t.Fatal(err)
	}
	steps := [][]string{
		{"HSET", "{x}h", "a", "1", "b", "2"}, {"HSET", "{x}h", "c", "3", "d", "4"}, {"HSET", "{x}h", "e", "5"},
		{"HSET", "{x}h2", "f", "12345678"}, {"HSET", "{x}h2", "g", "123456789"},
		{"HSET", "{x}h3", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"},
		{"SADD", "{x}i", "1", "2", "3", "4", "5"}, {"SADD", "{x}i", "6"},
		{"ZADD", "{x}z", "1", "a", "2", "b", "3", "c", "4", "d"}, {"ZADD", "{x}z", "5", "e"},
		{"ZADD", "{x}z2", "1", "1234567"}, {"ZADD", "{x}z2", "2", "12345678"},
		{"ZUNIONSTORE", "{x}zu", "1", "{x}z"},
		{"SUNIONSTORE", "{x}su", "{x}i"},
	}
	if setListpacks { // and lists, listpacks from 7.2 on too (quicklists before)
		steps = append(steps, [][]string{
			{"RPUSH", "{x}l", "1", "2", "3", "4", "5"}, {"RPUSH", "{x}l", "6"},
			{"LPOP", "{x}l", "4"},
		}...)
		steps = append(steps, [][]string{
			{"SADD", "{x}i2", "1", "2"}, {"SADD", "{x}i2", "abc"}, {"SADD", "{x}i2", "abcdefg"},
			{"SADD", "{x}s", "a", "b", "c"}, {"SADD", "{x}s", "d"},
			{"SADD", "{x}s2", "a", "b", "c", "d"},
		}...)
	}
	for _, s := range steps {
		both(s...)
		both("OBJECT", "ENCODING", s[1])
	}
	if !setListpacks {
		return
	}
	// Lists by bytes: -1 is 4 KB.
	both("CONFIG", "SET", "list-max-listpack-size", "-1")
	big := strings.Repeat("x", 1000)
	for i := range 5 {
		both("RPUSH", "{x}lb", big+strconv.Itoa(i))
		both("OBJECT", "ENCODING", "{x}lb")
	}
	for range 4 {
		both("RPOP", "{x}lb")
		both("OBJECT", "ENCODING", "{x}lb")
	}
}
