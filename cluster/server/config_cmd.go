package server

import (
	"slices"
	"strings"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// CONFIG GET, SET, RESETSTAT, REWRITE and HELP. Parameters are per node, as
// in Redis Cluster (redis-cli --cluster call sets one on every node); they
// live in memory and start from their defaults when a node starts.

// configParam is one parameter CONFIG knows. To add one, add one entry to
// configParams: get renders the current value as CONFIG GET shows it; set
// parses and applies a value, or returns the error text Redis gives for a
// bad one (it becomes "ERR CONFIG SET failed (possibly related to argument
// '<name>') - <text>"); a nil set makes the parameter read-only.
type configParam struct {
	name string // lowercase
	get  func(s *Server) string
	set  func(s *Server, value string) error
}

// configParams is every parameter, in the order CONFIG GET lists them.
var configParams = []configParam{
	{name: "appendonly", get: constValue("no"), set: onlyValue("no")}, // durability is the Raft log
	{name: "client-output-buffer-limit", get: getObufLimits, set: setObufLimits},
	{name: "notify-keyspace-events", get: getNotifyKeyspaceEvents, set: setNotifyKeyspaceEvents},
	{name: "save", get: constValue(""), set: onlyValue("")}, // no RDB: Raft snapshots instead
}

func constValue(v string) func(*Server) string { return func(*Server) string { return v } }

// onlyValue accepts setting a fixed parameter to the value it has (tools
// that turn persistence off before a test do that) and refuses any other.
func onlyValue(v string) func(*Server, string) error {
	return func(_ *Server, value string) error {
		if !strings.EqualFold(strings.TrimSpace(value), v) {
			return errFixedConfig
		}
		return nil
	}
}

var errFixedConfig = resp.NewError("slotraft has no RDB or AOF persistence (durability is the Raft log); this parameter is fixed")

func getObufLimits(s *Server) string { return s.ps.limits.Load().String() }

func setObufLimits(s *Server, value string) error {
	lim, err := parseObufLimits(*s.ps.limits.Load(), value)
	if err != nil {
		return err
	}
	s.ps.limits.Store(&lim)
	return nil
}

func lookupConfig(name string) *configParam {
	name = strings.ToLower(name)
	for i := range configParams {
		if configParams[i].name == name {
			return &configParams[i]
		}
	}
	return nil
}

var (
	errConfigNoFile = resp.NewError("ERR The server is running without a config file")
)

func configCommand() *command {
	const admin = resp.FlagAdmin | resp.FlagNoScript | resp.FlagLoading | resp.FlagStale
	acl := []string{"admin", "slow", "dangerous"}
	sub := func(name string, arity int, flags resp.Flag, acl []string, since, summary, complexity string, run nodeHandler) *command {
		return &command{meta: subMeta("config", name, arity, flags, acl, since, summary, complexity), node: run}
	}
	set := sub("set", -4, admin, acl, "2.0.0", "Sets configuration parameters in-flight.",
		"O(N) when N is the number of configuration parameters provided", cmdConfigSet)
	set.meta.Tips = []string{"request_policy:all_nodes", "response_policy:all_succeeded"}
	subs := []*command{
		sub("get", -3, admin, acl, "2.0.0", "Returns the effective values of configuration parameters.",
			"O(N) when N is the number of configuration parameters provided", cmdConfigGet),
		sub("help", 2, resp.FlagLoading|resp.FlagStale, []string{"slow"}, "5.0.0", "Returns helpful text about the different subcommands.", "O(1)", cmdConfigHelp),
		sub("resetstat", 2, admin, acl, "2.0.0", "Resets the server's statistics.", "O(1)", cmdConfigResetStat),
		sub("rewrite", 2, admin, acl, "2.8.0", "Persists the effective configuration to file.", "O(1)",
			func(*Server, *client, [][]byte) resp.Value { return resp.Err(errConfigNoFile) }),
		set,
	}
	meta := &resp.Command{Name: "config", Arity: -2, ACL: []string{"slow"}, Group: "server", Since: "2.0.0",
		Summary: "A container for server configuration commands.", Complexity: "Depends on subcommand."}
	return container(meta, subs...)
}

// cmdConfigGet is CONFIG GET pattern [pattern ...]: every parameter whose
// name matches a glob pattern (case-insensitive), once, as a map.
func cmdConfigGet(s *Server, _ *client, args [][]byte) resp.Value {
	var out []resp.Value
	for _, p := range configParams {
		for _, pat := range args[2:] {
			if fsm.Match([]byte(strings.ToLower(string(pat))), []byte(p.name)) {
				out = append(out, resp.BulkString(p.name), resp.BulkString(p.get(s)))
				break
			}
		}
	}
	return resp.Map(out...)
}

// cmdConfigSet is CONFIG SET name value [name value ...], all or nothing:
// every name is checked first (unknown, read-only, given twice), then the
// values are applied in order, and the ones applied are restored if one fails.
func cmdConfigSet(s *Server, _ *client, args [][]byte) resp.Value {
	if len(args)%2 != 0 {
		return resp.Err(resp.ErrWrongArgs("config|set"))
	}
	type change struct {
		p     *configParam
		value string
	}
	var changes []change
	for i := 2; i < len(args); i += 2 {
		p := lookupConfig(string(args[i]))
		switch {
		case p == nil:
			return resp.Err(resp.Errorf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", args[i]))
		case p.set == nil:
			return configSetFailed(args[i], "can't set immutable config")
		case slices.ContainsFunc(changes, func(c change) bool { return c.p == p }):
			return configSetFailed(args[i], "duplicate parameter")
		}
		changes = append(changes, change{p, string(args[i+1])})
	}
	olds := make([]string, len(changes))
	for i, ch := range changes {
		olds[i] = ch.p.get(s)
		if err := ch.p.set(s, ch.value); err != nil {
			for j := i - 1; j >= 0; j-- {
				_ = changes[j].p.set(s, olds[j]) // a value get rendered always parses
			}
			return configSetFailed([]byte(ch.p.name), err.Error())
		}
	}
	return resp.OK()
}

func configSetFailed(name []byte, why string) resp.Value {
	return resp.Err(resp.Errorf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, why))
}

// cmdConfigResetStat zeroes INFO's counters, as Redis's CONFIG RESETSTAT.
func cmdConfigResetStat(s *Server, _ *client, _ [][]byte) resp.Value {
	st := &s.stats
	for _, c := range []interface{ Store(int64) }{&st.connections, &st.commands, &st.netIn, &st.netOut, &st.errors} {
		c.Store(0)
	}
	s.ps.obufKills.Store(0)
	s.n.ResetForwardStats()
	return resp.OK()
}

func cmdConfigHelp(_ *Server, _ *client, _ [][]byte) resp.Value {
	return helpReply("CONFIG", []string{
		"GET <pattern>",
		"    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>",
		"    Set the configuration <directive> to <value>.",
		"RESETSTAT",
		"    Reset statistics reported by the INFO command.",
		"REWRITE",
		"    Rewrite the configuration file.",
	})
}
