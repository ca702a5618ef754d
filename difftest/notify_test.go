package difftest

import (
	"strings"
	"testing"
	"time"
)

// notifyScript covers the event-emitting commands of every type, on keys
// of one hash tag. Commands whose events depend on timing (expiry) or on
// behaviour Redis changed after 7.0 (XCLAIM's consumer creation) are left
// out: fsm's table tests cover those.
var notifyScript = []string{
	"SET {n}s v", "SET {n}s w KEEPTTL", "SET {n}s v EX 100", "SETNX {n}s2 v", "SETEX {n}s3 100 v",
	"MSET {n}m1 1 {n}m2 2", "MSETNX {n}m1 1 {n}m3 3", "GETSET {n}s4 x", "GETDEL {n}s4",
	"GETEX {n}s EX 200", "GETEX {n}s PERSIST", "APPEND {n}a x", "APPEND {n}a y",
	"SETRANGE {n}r 2 x", "INCR {n}i", "INCRBY {n}i 5", "DECR {n}i", "INCRBYFLOAT {n}f 1.5",
	"SETBIT {n}b 7 1", "SETBIT {n}b 7 1", "BITFIELD {n}b SET u8 0 255", "BITOP OR {n}bo {n}b {n}a",
	"PFADD {n}h a b", "PFADD {n}h a", "PFMERGE {n}hm {n}h",
	"EXPIRE {n}a 100", "PEXPIRE {n}a 100000", "PERSIST {n}a", "EXPIRE {n}a 0",
	"RENAME {n}m1 {n}m4", "RENAMENX {n}m2 {n}m4", "COPY {n}m4 {n}m5", "COPY {n}m4 {n}m5 REPLACE",
	"DEL {n}m4 {n}m5 {n}nosuch", "UNLINK {n}m2",
	"LPUSH {n}l a b c", "RPUSH {n}l d", "LPUSHX {n}l e", "RPUSHX {n}nol e", "LSET {n}l 0 x",
	"LINSERT {n}l BEFORE x y", "LREM {n}l 1 y", "LTRIM {n}l 0 2", "LPOP {n}l", "RPOP {n}l 1",
	"LMOVE {n}l {n}l2 LEFT RIGHT", "RPOPLPUSH {n}l2 {n}l3", "LMPOP 2 {n}l {n}l3 LEFT COUNT 5",
	"RPUSH {n}sl c a b", "SORT {n}sl ALPHA STORE {n}sorted", "SORT {n}nosuch STORE {n}sorted",
	"HSET {n}hh f 1 g 2", "HSETNX {n}hh f 3", "HSETNX {n}hh h 3", "HINCRBY {n}hh f 2",
	"HINCRBYFLOAT {n}hh f 0.5", "HDEL {n}hh f g", "HDEL {n}hh h",
	"SADD {n}set a b c", "SADD {n}set a", "SREM {n}set a", "SMOVE {n}set {n}set2 b",
	"SADD {n}set3 b c", "SINTERSTORE {n}si {n}set2 {n}set3", "SUNIONSTORE {n}su {n}set {n}set3",
	"SDIFFSTORE {n}sd {n}set {n}set3", "SPOP {n}set3 5",
	"ZADD {n}z 1 a 2 b 3 c", "ZADD {n}z 1 a", "ZADD {n}z 5 a", "ZINCRBY {n}z 1 b", "ZREM {n}z c",
	"ZREMRANGEBYSCORE {n}z 0 2", "ZADD {n}z 1 x 2 y", "ZREMRANGEBYRANK {n}z 0 0", "ZREMRANGEBYLEX {n}z - +",
	"ZADD {n}z1 1 a 2 b", "ZADD {n}z2 2 b 3 c", "ZUNIONSTORE {n}zu 2 {n}z1 {n}z2",
	"ZINTERSTORE {n}zi 2 {n}z1 {n}z2", "ZDIFFSTORE {n}zd 2 {n}z1 {n}z2", "ZRANGESTORE {n}zr {n}z1 0 -1",
	"ZPOPMIN {n}z1", "ZPOPMAX {n}z2 5", "ZMPOP 1 {n}zu MIN COUNT 10",
	"GEOADD {n}g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
	"GEOSEARCHSTORE {n}gs {n}g FROMLONLAT 15 37 BYRADIUS 200 km",
	"GEORADIUS {n}g 15 37 200 km STORE {n}gr",
	"XADD {n}x 1-1 f v", "XADD {n}x MAXLEN 1 2-1 f v", "XADD {n}x 3-1 f v", "XDEL {n}x 3-1",
	"XTRIM {n}x MAXLEN 0", "XSETID {n}x 10-1", "XGROUP CREATE {n}x g 0", "XGROUP CREATE {n}x2 g $ MKSTREAM",
	"XADD {n}x 11-1 f v", "XREADGROUP GROUP g c STREAMS {n}x >", "XACK {n}x g 11-1",
	"XGROUP CREATECONSUMER {n}x g c2", "XGROUP DELCONSUMER {n}x g c2", "XGROUP SETID {n}x g $",
	"XGROUP DESTROY {n}x g",
	"RESTORE {n}rs 0 \x00\x01v\x0a\x00\x91\x08\xce\xb2\x19\x38\x8a\xce",
	"RESTORE {n}rs 0 \x00\x01v\x0a\x00\x91\x08\xce\xb2\x19\x38\x8a\xce REPLACE",
}

// TestNotifyDifferential runs notifyScript on redis-server and on slotraft
// with notify-keyspace-events KEAn and compares, message by message, what
// a "*" pattern subscriber receives.
func TestNotifyDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	slotraftAddr := startSlotraft(t)
	collect := func(addr string) []string {
		w, sub := connect(t, addr, "2"), connect(t, addr, "2")
		if r, err := w.do("CONFIG", "SET", "notify-keyspace-events", "KEAn"); err != nil || r.str != "OK" {
			t.Fatalf("%s: CONFIG SET: %v %v", addr, r, err)
		}
		if _, err := sub.do("PSUBSCRIBE", "*"); err != nil {
			t.Fatal(err)
		}
		for _, line := range notifyScript {
			args := strings.Split(line, " ")
			if r, err := w.do(args...); err != nil || r.typ == '-' {
				t.Fatalf("%s: %s: %v %v", addr, line, r, err)
			}
		}
		if _, err := w.do("PUBLISH", "end", "end"); err != nil {
			t.Fatal(err)
		}
		var got []string
		_ = sub.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		for {
			m, err := sub.read()
			if err != nil {
				t.Fatalf("%s: after %d messages: %v", addr, len(got), err)
			}
			if len(m.elems) != 4 {
				t.Fatalf("%s: not a pmessage: %v", addr, m)
			}
			ch, payload := m.elems[2].str, m.elems[3].str
			if ch == "end" {
				return got
			}
			got = append(got, ch+" "+payload)
		}
	}
	want, got := collect(redisAddr), collect(slotraftAddr)
	for i := range max(len(want), len(got)) {
		if w, g := lineAt(want, i), lineAt(got, i); w != g {
			t.Fatalf("message %d: slotraft %q, redis %q\nredis:    %q\nslotraft: %q", i, g, w,
				want[max(0, i-4):min(len(want), i+4)], got[max(0, i-4):min(len(got), i+4)])
		}
	}
	t.Logf("%d messages compared", len(want))
	if len(want) < 200 {
		t.Errorf("only %d messages: the script did not run as intended", len(want))
	}
}
