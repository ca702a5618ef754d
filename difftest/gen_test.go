package difftest

import (
	"math/rand/v2"
	"strconv"
)

// How two replies are compared.
type mode int

const (
	exact     mode = iota
	unordered      // the elements (or field/value pairs) in any order: Redis's hash order
	pairs          // like unordered, for flat field/value arrays (HGETALL in RESP2)
	shape          // random picks: only the structure and the lengths
)

// op is one generated command.
type op struct {
	args []string
	mode mode
	// spop marks an SPOP: the two servers pop different members, so the
	// runner puts the popped members back to make the sets equal again.
	spop bool
}

// gen generates a random mix of commands over a small keyspace under one
// hash tag, so that keys collide, types clash and collections empty out.
type gen struct {
	r   *rand.Rand
	tag string
}

var (
	members = []string{"a", "b", "c", "d", "e", "f", "g", "1", "2", "3", "10", "-1", "x y", ""}
	numbers = []string{"0", "1", "2", "3", "-1", "-2", "5", "10", "-10", "100"}
	scores  = []string{"0", "1", "-1", "1.5", "2.5", "3", "10", "-2", "0.25", "+inf", "-inf", "7"}
	incrs   = []string{"1", "-1", "0.5", "2.5", "-0.25", "4"}
	lexes   = []string{"-", "+", "[a", "(a", "[c", "(d", "[g", "[1", "(x"}
	ranges  = []string{"0", "1", "2", "-1", "-2", "3", "5", "-5", "10", "-100"}
	limits  = []string{"0", "1", "2", "-1", "3"}
)

func (g *gen) pick(from []string) string { return from[g.r.IntN(len(from))] }

func (g *gen) key(kind byte) string {
	if g.r.IntN(20) == 0 { // sometimes any key: WRONGTYPE paths
		kind = "lhszk"[g.r.IntN(5)]
	}
	return "{" + g.tag + "}" + string(kind) + strconv.Itoa(1+g.r.IntN(3))
}

func (g *gen) some(from []string, max int) []string {
	n := 1 + g.r.IntN(max)
	out := make([]string, n)
	for i := range out {
		out[i] = g.pick(from)
	}
	return out
}

func (g *gen) maybe(p int, args ...string) []string {
	if g.r.IntN(100) < p {
		return args
	}
	return nil
}

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func one(s ...string) []string { return s }

// next generates one command.
func (g *gen) next() op {
	switch g.r.IntN(5) {
	case 0:
		return g.list()
	case 1:
		return g.hash()
	case 2:
		return g.set()
	case 3:
		return g.zset()
	}
	return g.generic()
}

func (g *gen) list() op {
	l := g.key('l')
	switch g.r.IntN(19) {
	case 0, 1:
		return op{args: cat(one(g.pick([]string{"LPUSH", "RPUSH"}), l), g.some(members, 4))}
	case 2:
		return op{args: cat(one(g.pick([]string{"LPUSHX", "RPUSHX"}), l), g.some(members, 2))}
	case 3:
		return op{args: cat(one(g.pick([]string{"LPOP", "RPOP"}), l), g.maybe(50, g.pick(limits)))}
	case 4:
		return op{args: one("LLEN", l)}
	case 5, 6:
		return op{args: one("LRANGE", l, g.pick(ranges), g.pick(ranges))}
	case 7:
		return op{args: one("LINDEX", l, g.pick(ranges))}
	case 8:
		return op{args: one("LSET", l, g.pick(ranges), g.pick(members))}
	case 9:
		return op{args: one("LINSERT", l, g.pick([]string{"BEFORE", "AFTER"}), g.pick(members), g.pick(members))}
	case 10:
		return op{args: one("LREM", l, g.pick([]string{"0", "1", "-1", "2", "-2"}), g.pick(members))}
	case 11:
		return op{args: one("LTRIM", l, g.pick(ranges), g.pick(ranges))}
	case 12:
		return op{args: cat(one("LPOS", l, g.pick(members)), g.maybe(40, "RANK", g.pick([]string{"1", "-1", "2", "-2"})),
			g.maybe(40, "COUNT", g.pick([]string{"0", "1", "2"})), g.maybe(20, "MAXLEN", g.pick([]string{"0", "2", "5"})))}
	case 13:
		return op{args: one("LMOVE", l, g.key('l'), g.pick([]string{"LEFT", "RIGHT"}), g.pick([]string{"LEFT", "RIGHT"}))}
	case 14:
		return op{args: one("RPOPLPUSH", l, g.key('l'))}
	case 15:
		return op{args: cat(one("LMPOP", "2", l, g.key('l'), g.pick([]string{"LEFT", "RIGHT"})), g.maybe(50, "COUNT", g.pick([]string{"1", "2", "5"})))}
	case 16:
		return op{args: one("BLPOP", l, g.key('l'), "0.01")}
	case 17:
		return op{args: cat(one("SORT", l), g.sortOpts())}
	}
	return op{args: one("LINSERT", l, "BEFORE", g.pick(members), g.pick(members))}
}

func (g *gen) sortOpts() []string {
	return cat(g.maybe(30, "LIMIT", g.pick(limits), g.pick(limits)), g.maybe(30, g.pick([]string{"ASC", "DESC"})),
		g.maybe(50, "ALPHA"), g.maybe(20, "STORE", g.key('l')))
}

func (g *gen) hash() op {
	h := g.key('h')
	switch g.r.IntN(16) {
	case 0, 1, 2:
		args := one("HSET", h)
		for range 1 + g.r.IntN(3) {
			args = append(args, g.pick(members), g.pick(append(members, numbers...)))
		}
		return op{args: args}
	case 3:
		return op{args: one("HSETNX", h, g.pick(members), g.pick(numbers))}
	case 4:
		return op{args: one("HGET", h, g.pick(members))}
	case 5:
		return op{args: cat(one("HMGET", h), g.some(members, 3))}
	case 6:
		return op{args: cat(one("HDEL", h), g.some(members, 2))}
	case 7:
		return op{args: one("HEXISTS", h, g.pick(members))}
	case 8:
		return op{args: one("HLEN", h)}
	case 9:
		return op{args: one("HINCRBY", h, g.pick(members), g.pick(numbers))}
	case 10:
		return op{args: one("HINCRBYFLOAT", h, g.pick(members), g.pick(incrs))}
	case 11:
		return op{args: one("HSTRLEN", h, g.pick(members))}
	case 12:
		return op{args: one("HGETALL", h), mode: pairs}
	case 13:
		return op{args: one(g.pick([]string{"HKEYS", "HVALS"}), h), mode: unordered}
	case 14:
		return op{args: cat(one("HRANDFIELD", h), g.maybe(70, g.pick([]string{"1", "2", "-3", "5", "0"})), g.maybe(30, "WITHVALUES")), mode: shape}
	}
	return op{args: one("HMSET", h, g.pick(members), g.pick(numbers))}
}

func (g *gen) set() op {
	s := g.key('s')
	switch g.r.IntN(18) {
	case 0, 1, 2:
		return op{args: cat(one("SADD", s), g.some(members, 4))}
	case 3:
		return op{args: cat(one("SREM", s), g.some(members, 2))}
	case 4:
		return op{args: one("SMEMBERS", s), mode: unordered}
	case 5:
		return op{args: one("SISMEMBER", s, g.pick(members))}
	case 6:
		return op{args: cat(one("SMISMEMBER", s), g.some(members, 3))}
	case 7:
		return op{args: one("SCARD", s)}
	case 8:
		return op{args: cat(one("SPOP", s), g.maybe(50, g.pick([]string{"1", "2", "0", "10"}))), mode: shape, spop: true}
	case 9:
		return op{args: cat(one("SRANDMEMBER", s), g.maybe(70, g.pick([]string{"1", "2", "-3", "10", "0"}))), mode: shape}
	case 10:
		return op{args: one("SMOVE", s, g.key('s'), g.pick(members))}
	case 11:
		return op{args: one(g.pick([]string{"SINTER", "SUNION", "SDIFF"}), s, g.key('s'), g.key('s')), mode: unordered}
	case 12:
		return op{args: cat(one("SINTERCARD", "2", s, g.key('s')), g.maybe(40, "LIMIT", g.pick([]string{"0", "1", "3"})))}
	case 13:
		return op{args: one(g.pick([]string{"SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"}), g.key('s'), s, g.key('s'))}
	case 14:
		return op{args: cat(one("SORT", s), g.sortOpts())}
	case 15:
		return op{args: one("SORT_RO", s, "ALPHA", "DESC")}
	}
	return op{args: cat(one("SADD", s), g.some(numbers, 4))}
}

// lexZset is a lex-range command on a sorted set whose members all have
// score 0: Redis leaves lex ranges over mixed scores undefined, so they are
// kept to keys that only ever get score 0.
func (g *gen) lexZset() op {
	z := "{" + g.tag + "}x" + strconv.Itoa(1+g.r.IntN(2))
	switch g.r.IntN(6) {
	case 0:
		return op{args: one("ZLEXCOUNT", z, g.pick(lexes), g.pick(lexes))}
	case 1:
		return op{args: cat(one("ZRANGE", z, g.pick(lexes), g.pick(lexes), "BYLEX"), g.maybe(30, "REV"), g.maybe(30, "LIMIT", g.pick(limits), g.pick(limits)))}
	case 2:
		return op{args: cat(one(g.pick([]string{"ZRANGEBYLEX", "ZREVRANGEBYLEX"}), z, g.pick(lexes), g.pick(lexes)), g.maybe(30, "LIMIT", g.pick(limits), g.pick(limits)))}
	case 3:
		return op{args: one("ZREMRANGEBYLEX", z, g.pick(lexes), g.pick(lexes))}
	}
	args := one("ZADD", z)
	for range 1 + g.r.IntN(3) {
		args = append(args, "0", g.pick(members))
	}
	return op{args: args}
}

func (g *gen) zset() op {
	z := g.key('z')
	switch g.r.IntN(30) {
	case 0, 1, 2, 3:
		args := cat(one("ZADD", z), g.maybe(15, g.pick([]string{"NX", "XX"})), g.maybe(15, g.pick([]string{"GT", "LT"})), g.maybe(15, "CH"))
		if g.r.IntN(8) == 0 {
			return op{args: append(args, "INCR", g.pick(incrs), g.pick(members))}
		}
		for range 1 + g.r.IntN(3) {
			args = append(args, g.pick(scores), g.pick(members))
		}
		return op{args: args}
	case 4:
		return op{args: cat(one("ZREM", z), g.some(members, 2))}
	case 5:
		return op{args: one("ZSCORE", z, g.pick(members))}
	case 6:
		return op{args: cat(one("ZMSCORE", z), g.some(members, 3))}
	case 7:
		return op{args: one("ZINCRBY", z, g.pick(incrs), g.pick(members))}
	case 8:
		return op{args: one("ZCARD", z)}
	case 9:
		return op{args: one("ZCOUNT", z, g.pick(scores), g.pick(scores))}
	case 10:
		return g.lexZset()
	case 11, 12:
		return op{args: cat(one("ZRANGE", z, g.pick(ranges), g.pick(ranges)), g.maybe(30, "REV"), g.maybe(40, "WITHSCORES"))}
	case 13:
		return op{args: cat(one("ZRANGE", z, g.pick(scores), g.pick(scores), "BYSCORE"), g.maybe(30, "REV"),
			g.maybe(30, "LIMIT", g.pick(limits), g.pick(limits)), g.maybe(40, "WITHSCORES"))}
	case 14:
		return g.lexZset()
	case 15:
		return op{args: cat(one(g.pick([]string{"ZRANGEBYSCORE", "ZREVRANGEBYSCORE"}), z, g.pick(scores), g.pick(scores)), g.maybe(40, "WITHSCORES"))}
	case 16:
		return g.lexZset()
	case 17:
		return op{args: cat(one("ZREVRANGE", z, g.pick(ranges), g.pick(ranges)), g.maybe(40, "WITHSCORES"))}
	case 18:
		return op{args: one(g.pick([]string{"ZRANK", "ZREVRANK"}), z, g.pick(members))}
	case 19:
		return op{args: one("ZREMRANGEBYRANK", z, g.pick(ranges), g.pick(ranges))}
	case 20:
		return op{args: one("ZREMRANGEBYSCORE", z, g.pick(scores), g.pick(scores))}
	case 21:
		return g.lexZset()
	case 22:
		return op{args: cat(one(g.pick([]string{"ZPOPMIN", "ZPOPMAX"}), z), g.maybe(50, g.pick([]string{"1", "2", "5"})))}
	case 23:
		return op{args: cat(one(g.pick([]string{"ZUNIONSTORE", "ZINTERSTORE"}), g.key('z'), "2", z, g.key('z')),
			g.maybe(30, "WEIGHTS", g.pick([]string{"1", "2", "0"}), g.pick([]string{"0.5", "-1", "3"})),
			g.maybe(30, "AGGREGATE", g.pick([]string{"SUM", "MIN", "MAX"})))}
	case 24:
		return op{args: cat(one(g.pick([]string{"ZUNION", "ZINTER", "ZDIFF"}), "2", z, g.key('z')), g.maybe(40, "WITHSCORES"))}
	case 25:
		return op{args: one("ZDIFFSTORE", g.key('z'), "2", z, g.key('z'))}
	case 26:
		return op{args: cat(one("ZRANGESTORE", g.key('z'), z, g.pick(ranges), g.pick(ranges)), g.maybe(30, "REV"))}
	case 27:
		return op{args: cat(one("ZMPOP", "2", z, g.key('z'), g.pick([]string{"MIN", "MAX"})), g.maybe(50, "COUNT", g.pick([]string{"1", "3"})))}
	case 28:
		return op{args: cat(one("ZRANDMEMBER", z), g.maybe(70, g.pick([]string{"1", "2", "-3", "5"})), g.maybe(30, "WITHSCORES")), mode: shape}
	}
	return op{args: cat(one("SORT", z), g.sortOpts())}
}

func (g *gen) generic() op {
	k := g.key("lhszk"[g.r.IntN(5)])
	switch g.r.IntN(9) {
	case 0:
		return op{args: one("TYPE", k)}
	case 1:
		return op{args: one("EXISTS", k, g.key('l'))}
	case 2:
		return op{args: one("DEL", k)}
	case 3:
		return op{args: one("SET", g.key('k'), g.pick(numbers))}
	case 4:
		return op{args: one("RENAME", k, g.key("lhszk"[g.r.IntN(5)]))}
	case 5:
		return op{args: cat(one("COPY", k, g.key("lhszk"[g.r.IntN(5)])), g.maybe(50, "REPLACE"))}
	case 6:
		return op{args: one("INCR", g.key('k'))}
	case 7:
		return op{args: one("SORT", k, "BY", "nosort"), mode: unordered}
	}
	return op{args: one("EXPIRE", k, "1000")}
}
