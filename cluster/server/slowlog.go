package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// SLOWLOG GET [count] | LEN | RESET | HELP, per node as in Redis Cluster.
// A command is logged when its time, from routing to its reply (so a
// write's Raft commit counts: it is what the client waits for), reaches
// slowlog-log-slower-than µs; the log keeps slowlog-max-len entries, the
// newest first.

// slowlog is a node's slow log, newest entry first.
type slowlog struct {
	mu      sync.Mutex
	entries []slowEntry
	nextID  int64
}

type slowEntry struct {
	id       int64
	at       int64 // unix seconds
	usec     int64
	argv     [][]byte
	addr     string
	clientNm string
}

// Redis's SLOWLOG_ENTRY_MAX_ARGC and SLOWLOG_ENTRY_MAX_STRING.
const (
	slowMaxArgc   = 32
	slowMaxString = 128
)

// slowArgv is the argv an entry keeps: at most 32 arguments, the last
// of them saying how many more there were, each at most 128 bytes
// followed by how many more bytes there were, as Redis's
// slowlogCreateEntry. It copies (the connection reuses its buffers).
func slowArgv(args [][]byte) [][]byte {
	n := min(len(args), slowMaxArgc)
	out := make([][]byte, n)
	for i := range n {
		a := args[i]
		switch {
		case n != len(args) && i == n-1:
			out[i] = fmt.Appendf(nil, "... (%d more arguments)", len(args)-n+1)
		case len(a) > slowMaxString:
			out[i] = fmt.Appendf(append([]byte(nil), a[:slowMaxString]...), "... (%d more bytes)", len(a)-slowMaxString)
		default:
			out[i] = append([]byte{}, a...)
		}
	}
	return out
}

// add logs a command of c that took d, when the settings say so.
func (l *slowlog) add(ss *statsSettings, c *client, args [][]byte, d time.Duration) {
	slower, maxLen := ss.slowlogSlower.Load(), ss.slowlogMaxLen.Load()
	if slower < 0 || maxLen == 0 || d.Microseconds() < slower {
		return
	}
	e := slowEntry{at: time.Now().Unix(), usec: d.Microseconds(), argv: slowArgv(args)}
	if c != nil {
		e.addr, e.clientNm = c.addr, c.getName()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append([]slowEntry{e}, l.entries[:min(len(l.entries), int(maxLen-1))]...)
}

// afterCall logs a command that ran for d in the slow log and the
// latency monitor, unless its flags keep it out, as Redis's call().
func (s *Server) afterCall(c *client, meta *resp.Command, args [][]byte, d time.Duration) {
	if meta == nil {
		return
	}
	if !meta.Is(resp.FlagSkipSlowlog) {
		s.slowlog.add(&s.statsCfg, c, args, d)
	}
	event := "command"
	if meta.Is(resp.FlagFast) {
		event = "fast-command"
	}
	s.latency.sample(&s.statsCfg, event, d)
	s.feedMonitors(c, meta, args)
}

func slowlogCommand() *command {
	const admin = resp.FlagAdmin | resp.FlagLoading | resp.FlagStale
	acl := []string{"admin", "slow", "dangerous"}
	sub := func(name string, arity int, flags resp.Flag, acl []string, since, summary, complexity string, run nodeHandler, tips ...string) *command {
		c := &command{meta: subMeta("slowlog", name, arity, flags, acl, since, summary, complexity), node: run}
		c.meta.Tips = tips
		return c
	}
	meta := &resp.Command{Name: "slowlog", Arity: -2, ACL: []string{"slow"}, Group: "server", Since: "2.2.12",
		Summary: "A container for slow log commands.", Complexity: "Depends on subcommand."}
	return container(meta,
		sub("get", -2, admin, acl, "2.2.12", "Returns the slow log's entries.", "O(N) where N is the number of entries returned",
			cmdSlowlogGet, "request_policy:all_nodes", "nondeterministic_output"),
		sub("help", 2, resp.FlagLoading|resp.FlagStale, []string{"slow"}, "6.2.0", "Show helpful text about the different subcommands", "O(1)", cmdSlowlogHelp),
		sub("len", 2, admin, acl, "2.2.12", "Returns the number of entries in the slow log.", "O(1)",
			cmdSlowlogLen, "request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"),
		sub("reset", 2, admin, acl, "2.2.12", "Clears all entries from the slow log.", "O(N) where N is the number of entries in the slowlog",
			cmdSlowlogReset, "request_policy:all_nodes", "response_policy:all_succeeded"),
	)
}

var errSlowlogCount = resp.NewError("ERR count should be greater than or equal to -1")

// cmdSlowlogGet is SLOWLOG GET [count]: the newest count entries (10 by
// default, -1 all).
func cmdSlowlogGet(s *Server, _ *client, args [][]byte) resp.Value {
	count := int64(10)
	if len(args) > 3 {
		return resp.Err(resp.ErrSubcommandSyntax(args[0], args[1]))
	}
	if len(args) == 3 {
		n, err := resp.ParseInt(args[2])
		if err != nil || n < -1 {
			return resp.Err(errSlowlogCount)
		}
		count = n
	}
	s.slowlog.mu.Lock()
	defer s.slowlog.mu.Unlock()
	es := s.slowlog.entries
	if count >= 0 && int64(len(es)) > count {
		es = es[:count]
	}
	out := make([]resp.Value, len(es))
	for i, e := range es {
		argv := make([]resp.Value, len(e.argv))
		for j, a := range e.argv {
			argv[j] = resp.Bulk(a)
		}
		out[i] = resp.Array(resp.Int(e.id), resp.Int(e.at), resp.Int(e.usec), resp.Array(argv...),
			resp.BulkString(e.addr), resp.BulkString(e.clientNm))
	}
	return resp.Array(out...)
}

func cmdSlowlogLen(s *Server, _ *client, _ [][]byte) resp.Value {
	s.slowlog.mu.Lock()
	defer s.slowlog.mu.Unlock()
	return resp.Int(int64(len(s.slowlog.entries)))
}

func cmdSlowlogReset(s *Server, _ *client, _ [][]byte) resp.Value {
	s.slowlog.mu.Lock()
	defer s.slowlog.mu.Unlock()
	s.slowlog.entries = nil
	return resp.OK()
}

func cmdSlowlogHelp(*Server, *client, [][]byte) resp.Value {
	return helpReply("SLOWLOG", []string{
		"GET [<count>]",
		"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:",
		"    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name",
		"LEN",
		"    Return the length of the slowlog.",
		"RESET",
		"    Reset the slowlog.",
	})
}
