package server

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/slotraft/slotraft/store"
)

// DEBUG, behind enable-debug-command as in Redis 7.2 (no, yes, or local:
// loopback connections only), with the subcommands that mean something
// here. Those that would crash, restart or reload a node are refused
// with an error that says why: a node never goes down on request.

var (
	errDebugNotAllowed = resp.NewError(`ERR DEBUG command not allowed. If the enable-debug-command option is set to "local", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.`)
	errNoSuchKey       = resp.NewError("ERR no such key")
	errProtocolType    = resp.NewError("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
	errProtocolRESP2   = resp.NewError("ERR RESP2 is not supported by this command")
	errPackedThreshold = resp.NewError("ERR argument must be a memory value bigger than 1 and smaller than 4gb")
	errNotListpack     = resp.NewError("ERR Not a listpack encoded object.")
)

func debugCommand() *command {
	return &command{meta: &resp.Command{Name: "debug", Arity: -2,
		Flags: resp.FlagAdmin | resp.FlagNoScript | resp.FlagLoading | resp.FlagStale,
		ACL:   []string{"admin", "slow", "dangerous"}, Group: "server", Since: "1.0.0",
		Summary: "A container for debugging commands.", Complexity: "Depends on subcommand."}, node: cmdDebug}
}

// debugSub is one DEBUG subcommand: the argument counts it takes (Redis's
// checks; 0 for any) and its handler.
type debugSub struct {
	argc    func(n int) bool
	handler nodeHandler
}

func exactly(n int) func(int) bool { return func(m int) bool { return m == n } }
func atLeast(n int) func(int) bool { return func(m int) bool { return m >= n } }

// refused answers a subcommand that cannot or must not run here.
func refused(why string) debugSub {
	err := resp.NewError("ERR " + why)
	return debugSub{atLeast(2), func(*Server, *client, [][]byte) resp.Value { return resp.Err(err) }}
}

const neverCrash = "is refused: slotraft never crashes or restarts a node on request"

var debugSubs map[string]debugSub

func init() {
	noFile := "is not supported: a slotraft node keeps no RDB or AOF file to reload, its state is its groups' Raft logs and snapshots"
	debugSubs = map[string]debugSub{
		"help":                       {exactly(2), cmdDebugHelp},
		"sleep":                      {exactly(3), cmdDebugSleep},
		"log":                        {exactly(3), cmdDebugLog},
		"error":                      {exactly(3), cmdDebugError},
		"protocol":                   {exactly(3), cmdDebugProtocol},
		"object":                     {exactly(3), cmdDebugObject},
		"listpack":                   {exactly(3), cmdDebugListpack},
		"digest":                     {exactly(2), cmdDebugDigest},
		"digest-value":               {atLeast(2), cmdDebugDigestValue},
		"set-active-expire":          {exactly(3), cmdDebugSetActiveExpire},
		"quicklist-packed-threshold": {exactly(3), cmdDebugPackedThreshold},
		"stringmatch-test":           {exactly(2), cmdDebugStringmatchTest},
		"segfault":                   refused("DEBUG SEGFAULT " + neverCrash),
		"panic":                      refused("DEBUG PANIC " + neverCrash),
		"assert":                     refused("DEBUG ASSERT " + neverCrash),
		"oom":                        refused("DEBUG OOM " + neverCrash),
		"restart":                    refused("DEBUG RESTART " + neverCrash),
		"crash-and-recover":          refused("DEBUG CRASH-AND-RECOVER " + neverCrash),
		"reload":                     refused("DEBUG RELOAD " + noFile),
		"loadaof":                    refused("DEBUG LOADAOF " + noFile),
		"change-repl-id":             refused("DEBUG CHANGE-REPL-ID is not supported: a slot group's replication history is its Raft log, which no command rewrites"),
	}
}

func cmdDebug(s *Server, c *client, args [][]byte) resp.Value {
	if c == nil || !s.protectedAllowed(c, "enable-debug-command") {
		return resp.Err(errDebugNotAllowed)
	}
	sub, ok := debugSubs[strings.ToLower(string(args[1]))]
	if !ok || !sub.argc(len(args)) {
		return resp.Err(resp.Errorf("ERR unknown subcommand or wrong number of arguments for '%s'. Try DEBUG HELP.", truncateArg(args[1], 128)))
	}
	return sub.handler(s, c, args)
}

func truncateArg(b []byte, n int) string { return string(b[:min(len(b), n)]) }

// cmdDebugHelp is Redis 7.2's text for the subcommands served here.
func cmdDebugHelp(*Server, *client, [][]byte) resp.Value {
	return helpReply("DEBUG", []string{
		"DIGEST",
		"    Output a hex signature representing the current DB content.",
		"DIGEST-VALUE <key> [<key> ...]",
		"    Output a hex signature of the values of all the specified keys.",
		"ERROR <string>",
		"    Return a Redis protocol error with <string> as message. Useful for clients",
		"    unit tests to simulate Redis errors.",
		"LOG <message>",
		"    Write <message> to the server log.",
		"OBJECT <key>",
		"    Show low level info about `key` and associated value.",
		"PROTOCOL <type>",
		"    Reply with a test value of the specified type. <type> can be: string,",
		"    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
		"    true, false.",
		"SET-ACTIVE-EXPIRE <0|1>",
		"    Setting it to 0 disables expiring keys in background when they are not",
		"    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
		"    default.",
		"QUICKLIST-PACKED-THRESHOLD <size>",
		"    Sets the threshold for elements to be inserted as plain vs packed nodes",
		"    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
		"SLEEP <seconds>",
		"    Stop the server for <seconds>. Decimals allowed.",
		"STRINGMATCH-TEST",
		"    Run a fuzz tester against the stringmatchlen() function.",
		"LISTPACK <key>",
		"    Show low level info about the listpack encoding of <key>.",
	})
}

// cmdDebugSleep sleeps as C's strtod reads the seconds (a prefix; 0 for
// none). Only this connection waits: the node goes on serving the others.
func cmdDebugSleep(s *Server, _ *client, args [][]byte) resp.Value {
	secs := strtodPrefix(string(args[2]))
	if d := time.Duration(secs * float64(time.Second)); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.ctx.Done():
		}
	}
	return resp.OK()
}

// strtodPrefix is C's strtod: the longest prefix that reads as a number
// (after leading spaces), 0 when there is none.
func strtodPrefix(s string) float64 {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	for end := len(s); end > 0; end-- {
		if f, err := strconv.ParseFloat(s[:end], 64); err == nil || isRangeErr(err) {
			return f
		}
	}
	return 0
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func cmdDebugLog(s *Server, _ *client, args [][]byte) resp.Value {
	s.log.Warn("DEBUG LOG: " + string(args[2]))
	return resp.OK()
}

// cmdDebugError answers the argument as an error, newlines as spaces.
func cmdDebugError(_ *Server, _ *client, args [][]byte) resp.Value {
	return resp.Err(resp.NewError(strings.NewReplacer("\n", " ", "\r", " ").Replace(string(args[2]))))
}

// cmdDebugProtocol answers Redis's test value of each RESP3 type.
func cmdDebugProtocol(s *Server, c *client, args [][]byte) resp.Value {
	three := func() []resp.Value { return []resp.Value{resp.Int(0), resp.Int(1), resp.Int(2)} }
	switch strings.ToLower(string(args[2])) {
	case "string":
		return resp.BulkString("Hello World")
	case "integer":
		return resp.Int(12345)
	case "double":
		return resp.Double(3.141)
	case "bignum":
		return resp.Value{Kind: resp.KindBigNumber, Str: []byte("1234567999999999999999999999999999999")}
	case "null":
		return resp.Null()
	case "array":
		return resp.Array(three()...)
	case "set":
		return resp.Set(three()...)
	case "map":
		return resp.Map(resp.Int(0), resp.Bool(false), resp.Int(1), resp.Bool(true), resp.Int(2), resp.Bool(false))
	case "attrib":
		if c.protocol() >= resp.RESP3 && c.sub == nil {
			attr := resp.Map(resp.BulkString("key-popularity"), resp.Array(resp.BulkString("key:123"), resp.Int(90))).Append(nil, resp.RESP3)
			attr[0] = '|' // a map's layout, as an attribute
			c.conn.write(attr)
		}
		return resp.BulkString("Some real reply following the attribute")
	case "push":
		if c.protocol() < resp.RESP3 {
			return resp.Err(errProtocolRESP2)
		}
		s.sendPush(c, resp.Push(resp.BulkString("server-cpu-usage"), resp.Int(42)))
		return resp.BulkString("Some real reply following the push reply")
	case "true":
		return resp.Bool(true)
	case "false":
		return resp.Bool(false)
	case "verbatim":
		return resp.Verbatim("txt", []byte("This is a verbatim\nstring"))
	}
	return resp.Err(errProtocolType)
}

// localKey reads key's object, expired or not, from this node's replica
// of its group (leader or follower, as a Redis replica answers from its
// own copy); false if the group has no replica here or the key is absent.
func (s *Server) localKey(key []byte, fn func(o *store.Object, acc store.Access)) bool {
	g := s.n.GroupOf(slots.Of(key))
	found := false
	if g == nil || !g.Local() {
		return false
	}
	_ = g.ReadStale(func(st fsm.Reader) {
		now := cluster.ReadNow(st)
		st.View(func(kvs store.Reader) {
			if o := kvs.GetRaw(key); o != nil {
				acc, _ := kvs.AccessOf(key, now)
				found = true
				fn(o, acc)
			}
		})
	})
	return found
}

// cmdDebugObject is Redis's line: the object's address in this process,
// refcount 1, its encoding (OBJECT ENCODING's), its RDB length (what DUMP
// writes of it; 0 for a stream, which has no RDB form here), and lru and
// lru_seconds_idle from the node-local access metadata. A list's
// quicklist details are not given.
func cmdDebugObject(s *Server, _ *client, args [][]byte) resp.Value {
	var line string
	ok := s.localKey(args[2], func(o *store.Object, acc store.Access) {
		now := time.Now().UnixMilli()
		idle := max(now-acc.Last, 0) / 1000
		lru := (acc.Last / 1000) & (1<<24 - 1)
		line = fmt.Sprintf("Value at:%p refcount:1 encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d",
			o, fsm.EncodingOf(o), fsm.SerializedLength(o), lru, idle)
	})
	if !ok {
		return resp.Err(errNoSuchKey)
	}
	return resp.Status(line)
}

// cmdDebugListpack writes a listpack-encoded value's elements to the log,
// as Redis prints the listpack on its standard output.
func cmdDebugListpack(s *Server, _ *client, args [][]byte) resp.Value {
	enc := ""
	ok := s.localKey(args[2], func(o *store.Object, _ store.Access) {
		if enc = fsm.EncodingOf(o); enc == "listpack" {
			s.log.Info("DEBUG LISTPACK", slog.String("key", string(args[2])), slog.String("type", o.Type.String()),
				slog.Int("elements", o.Coll.Len()))
		}
	})
	switch {
	case !ok:
		return resp.Err(errNoSuchKey)
	case enc != "listpack":
		return resp.Err(errNotListpack)
	}
	return resp.Status("Listpack structure printed on stdout")
}

// cmdDebugDigest is Redis's dataset digest over the keyspace this node
// serves as master (the groups it leads), or, on a node that leads none,
// over the groups it replicates (a Redis replica digests its copy).
func cmdDebugDigest(s *Server, _ *client, _ [][]byte) resp.Value {
	groups := s.ledGroups()
	if len(groups) == 0 {
		groups = s.hostedGroups()
	}
	var keys fsm.Digest
	n := 0
	for _, g := range groups {
		_ = g.ReadStale(func(st fsm.Reader) {
			st.View(func(kvs store.Reader) { n += fsm.DatasetDigest(kvs, &keys) })
		})
	}
	return resp.Status(fsm.FinishDigest(keys, n).Hex())
}

// cmdDebugDigestValue digests each key's value from this node's replica
// of its group; zeros for a key absent here.
func cmdDebugDigestValue(s *Server, _ *client, args [][]byte) resp.Value {
	out := make([]resp.Value, 0, len(args)-2)
	for _, key := range args[2:] {
		var d fsm.Digest
		s.localKey(key, func(o *store.Object, _ store.Access) { d = fsm.ValueDigest(o) })
		out = append(out, resp.Status(d.Hex()))
	}
	return resp.Array(out...)
}

func cmdDebugSetActiveExpire(s *Server, _ *client, args [][]byte) resp.Value {
	s.n.SetActiveExpire(atoiC(args[2]) != 0)
	return resp.OK()
}

// atoiC is C's atoi: the leading integer, 0 for none.
func atoiC(b []byte) int64 {
	s := strings.TrimLeft(string(b), " \t\n\v\f\r")
	end := 0
	if end < len(s) && (s[end] == '-' || s[end] == '+') {
		end++
	}
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, _ := strconv.ParseInt(s[:end], 10, 64)
	return n
}

// cmdDebugPackedThreshold checks the size as Redis does; slotraft's lists
// have no plain nodes, so the value changes nothing.
func cmdDebugPackedThreshold(_ *Server, _ *client, args [][]byte) resp.Value {
	sz, ok := memToUint(string(args[2]))
	if !ok || sz > 1<<32-1<<20 {
		return resp.Err(errPackedThreshold)
	}
	return resp.OK()
}

// cmdDebugStringmatchTest runs glob matching (fsm.Match, what KEYS, SCAN
// and PSUBSCRIBE use) on random patterns and strings, as Redis's fuzz
// tester of stringmatchlen: a panic would be caught and answered as an
// error, never crash the node.
func cmdDebugStringmatchTest(*Server, *client, [][]byte) resp.Value {
	fsm.MatchFuzzTest(100_000)
	return resp.Status("Apparently Redis did not crash: test passed")
}
