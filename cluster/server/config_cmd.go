package server

import (
	"errors"
	"net"
	"slices"
	"strings"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// CONFIG GET, SET, RESETSTAT, REWRITE and HELP over the registry of
// config_table.go. Parameters are per node, as in Redis Cluster
// (redis-cli --cluster call sets one on every node); they live in memory
// and start from their defaults, or from the node's config file
// (config_file.go), which CONFIG REWRITE writes (config_rewrite.go).

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
		sub("rewrite", 2, admin, acl, "2.8.0", "Persists the effective configuration to file.", "O(1)", cmdConfigRewrite),
		set,
	}
	meta := &resp.Command{Name: "config", Arity: -2, ACL: []string{"slow"}, Group: "server", Since: "2.0.0",
		Summary: "A container for server configuration commands.", Complexity: "Depends on subcommand."}
	return container(meta, subs...)
}

// cmdConfigGet is CONFIG GET pattern [pattern ...], as Redis 7.2: a name
// without glob characters is looked up (hidden parameters too) and
// answered under the name as asked; a pattern matches the names and
// aliases of the visible parameters, without case. Each name once, as a map.
func cmdConfigGet(s *Server, _ *client, args [][]byte) resp.Value {
	var out []resp.Value
	seen := map[string]bool{} // lowercase names answered
	add := func(name string, p *configParam) {
		if !seen[strings.ToLower(name)] {
			seen[strings.ToLower(name)] = true
			out = append(out, resp.BulkString(name), resp.BulkString(s.cfg.value(s, p)))
		}
	}
	for _, arg := range args[2:] {
		pat := string(arg)
		if !strings.ContainsAny(pat, "[*?") {
			if p := s.cfg.reg.lookup(pat); p != nil {
				add(pat, p)
			}
			continue
		}
		for _, p := range s.cfg.reg.params {
			for _, name := range []string{p.name, p.alias} {
				if name != "" && p.flags&cfgHidden == 0 && fsm.Match([]byte(strings.ToLower(pat)), []byte(name)) {
					add(name, p)
				}
			}
		}
	}
	return resp.Map(out...)
}

// cmdConfigSet is CONFIG SET name value [name value ...], all or nothing
// (configValues.set). The names are checked first, in order, and the
// first problem is the reply: unknown, immutable, protected, given twice.
// A name and its alias are two parameters to Redis (the last one wins).
func cmdConfigSet(s *Server, c *client, args [][]byte) resp.Value {
	if len(args)%2 != 0 {
		return resp.Err(resp.ErrSyntax)
	}
	changes := make([]configChange, 0, (len(args)-2)/2)
	for i := 2; i < len(args); i += 2 {
		name := string(args[i])
		p := s.cfg.reg.lookup(name)
		if p == nil {
			return resp.Err(resp.Errorf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", name))
		}
		lname := strings.ToLower(name)
		if err := s.settable(c, p, lname, changes); err != nil {
			return configSetFailed(name, err)
		}
		changes = append(changes, configChange{p: p, name: lname, value: string(args[i+1])})
	}
	var se *configSetError
	err := s.cfg.set(s, changes)
	s.refreshStatsSettings()     // the accounting's mirror (stats_account.go)
	s.refreshEviction()          // the node's maxmemory (maxmemory.go)
	s.refreshGroupSettings(true) // the encoding limits of the groups led here (group_settings.go)
	if errors.As(err, &se) {
		return configSetFailed(se.name, se.err)
	}
	return resp.OK()
}

// settable refuses a parameter CONFIG SET may not change now: immutable,
// protected (unless enable-protected-configs allows c), or already in
// changes under the same name.
func (s *Server) settable(c *client, p *configParam, name string, changes []configChange) error {
	switch {
	case p.flags&cfgImmutable != 0:
		return errConfigImmutable
	case p.flags&cfgProtected != 0 && !s.protectedAllowed(c, "enable-protected-configs"):
		return errConfigProtected
	case slices.ContainsFunc(changes, func(ch configChange) bool { return ch.name == name }):
		return errConfigDuplicate
	}
	return nil
}

// protectedAllowed is Redis's allowProtectedAction for the setting named
// (enable-protected-configs, enable-module-command, enable-debug-command):
// yes, or local and c on a loopback address.
func (s *Server) protectedAllowed(c *client, setting string) bool {
	p := s.cfg.reg.lookup(setting)
	if p == nil {
		return false
	}
	switch s.cfg.value(s, p) {
	case "yes":
		return true
	case "local":
		host, _, err := net.SplitHostPort(c.addr)
		ip := net.ParseIP(host)
		return err == nil && ip != nil && ip.IsLoopback()
	}
	return false
}

var (
	errConfigProtected = errors.New("can't set protected config")
	errConfigDuplicate = errors.New("duplicate parameter")
)

func configSetFailed(name string, err error) resp.Value {
	return resp.Err(resp.Errorf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, err))
}

// cmdConfigResetStat zeroes INFO's counters, as Redis's resetServerStats
// (the slow log and the latency events are not counters: SLOWLOG RESET
// and LATENCY RESET clear them).
func cmdConfigResetStat(s *Server, _ *client, _ [][]byte) resp.Value {
	s.resetStats()
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
