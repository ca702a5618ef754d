package server

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// SENTINEL and its subcommands (Redis 7.2's sentinelCommand), over the
// monitor's state. Those that change a Sentinel's configuration are
// either mapped onto what they mean here (FAILOVER: a leadership transfer
// of the group, sentinel_failover.go; RESET: the facade forgets and
// relearns its instances; FLUSHCONFIG: nothing to save) or refused with an
// error that says why (docs/sentinel.md).

var errNoSuchMaster = resp.NewError("ERR No such master with that name")

// errNoMasterAddr answers for a master name the facade knows but cannot
// give an address for: a cluster of several groups where no node runs a
// proxy.
func errNoMasterAddr(name string, groups int) resp.Value {
	return resp.Err(resp.Errorf("ERR master '%s' has no address: the cluster has %d slot groups and no node announces a proxy (--proxy-bind) that serves them all; see docs/sentinel.md", name, groups))
}

func sentinelContainer() *sentinelCommand {
	sub := func(name string, arity int, since, summary string, run sentinelHandler) *sentinelCommand {
		flags := resp.FlagAdmin
		if name == "help" {
			flags = resp.FlagLoading | resp.FlagStale
		}
		return &sentinelCommand{meta: &resp.Command{Name: "sentinel|" + name, Arity: arity, Flags: flags,
			ACL: []string{"admin", "slow", "dangerous"}, Group: "sentinel", Since: since, Summary: summary}, run: run}
	}
	refuse := func(what string) sentinelHandler {
		return refusedOnFacade(what + ": its masters are this cluster, named by --sentinel-master-name")
	}
	// FAILOVER moves a leadership: it takes the data port's permission
	// for CLUSTER FAILOVER (args[1] names that subcommand too).
	failover := sub("failover", 3, "2.8.4", "Forces a Redis Sentinel failover.", cmdSentinelFailover)
	failover.aclAs = commands().byName["cluster"]
	subs := []*sentinelCommand{
		sub("ckquorum", 3, "2.8.4", "Checks for a Redis Sentinel quorum.", cmdSentinelCkQuorum),
		sub("config", -4, "6.2.0", "Configures Redis Sentinel.", cmdSentinelConfig),
		sub("debug", -2, "7.0.0", "Lists or updates the current configurable parameters of Redis Sentinel.",
			refusedOnFacade("SENTINEL DEBUG: it has no Sentinel timers to show or tune")),
		failover,
		sub("flushconfig", 2, "2.8.4", "Rewrites the Redis Sentinel configuration file.",
			func(*Sentinel, *client, [][]byte) resp.Value { return resp.OK() }),
		sub("get-master-addr-by-name", 3, "2.8.4", "Returns the port and address of a master Redis instance.", cmdSentinelMasterAddr),
		sub("help", 2, "6.2.0", "Returns helpful text about the different subcommands.", cmdSentinelHelp),
		sub("info-cache", -3, "3.2.0", "Returns the cached `INFO` replies from the deployment's instances.", cmdSentinelInfoCache),
		sub("is-master-down-by-addr", 6, "2.8.4", "Determines whether a master Redis instance is down.", cmdSentinelIsMasterDown),
		sub("master", 3, "2.8.4", "Returns the state of a master Redis instance.", cmdSentinelMaster),
		sub("masters", 2, "2.8.4", "Returns a list of monitored Redis masters.", cmdSentinelMasters),
		sub("monitor", 6, "2.8.4", "Starts monitoring.", refuse("SENTINEL MONITOR")),
		sub("myid", 2, "6.2.0", "Returns the Redis Sentinel instance ID.",
			func(f *Sentinel, _ *client, _ [][]byte) resp.Value { return resp.BulkString(f.myID) }),
		sub("pending-scripts", 2, "2.8.4", "Returns information about pending scripts for Redis Sentinel.",
			func(*Sentinel, *client, [][]byte) resp.Value { return resp.Array() }), // it runs no scripts
		sub("remove", 3, "2.8.4", "Stops monitoring.", namedMaster(refuse("SENTINEL REMOVE"))),
		sub("replicas", 3, "5.0.0", "Returns a list of the monitored Redis replicas.", cmdSentinelReplicas),
		sub("reset", 3, "2.8.4", "Resets Redis masters by name matching a pattern.", cmdSentinelReset),
		sub("sentinels", 3, "2.8.4", "Returns a list of Sentinel instances.", cmdSentinelSentinels),
		sub("set", -5, "2.8.4", "Changes the configuration of a monitored Redis master.", namedMaster(refuse("SENTINEL SET"))),
		sub("simulate-failure", -3, "3.2.0", "Simulates failover scenarios.", cmdSentinelSimulateFailure),
		sub("slaves", 3, "2.8.0", "Returns a list of the monitored replicas.", cmdSentinelReplicas),
	}
	meta := &resp.Command{Name: "sentinel", Arity: -2, Flags: resp.FlagAdmin, ACL: []string{"admin", "slow", "dangerous"},
		Group: "sentinel", Since: "2.8.4", Summary: "A container for Redis Sentinel commands.", Complexity: "Depends on subcommand."}
	for _, sc := range subs {
		meta.Subcommands = append(meta.Subcommands, sc.meta)
	}
	return &sentinelCommand{meta: meta, subs: subs}
}

// namedMaster answers "No such master" for an unknown args[2] before h,
// as Sentinel looks the master up first.
func namedMaster(h sentinelHandler) sentinelHandler {
	return func(f *Sentinel, c *client, args [][]byte) resp.Value {
		if f.mon.master(args[2]) == nil {
			return resp.Err(errNoSuchMaster)
		}
		return h(f, c, args)
	}
}

// sentinelHelpLines are Redis 7.2's SENTINEL HELP.
var sentinelHelpLines = []string{
	"CKQUORUM <master-name>",
	"    Check if the current Sentinel configuration is able to reach the quorum",
	"    needed to failover a master and the majority needed to authorize the",
	"    failover.",
	"CONFIG SET param value [param value ...]",
	"    Set a global Sentinel configuration parameter.",
	"CONFIG GET <param> [param param param ...]",
	"    Get global Sentinel configuration parameter.",
	"DEBUG [<param> <value> ...]",
	"    Show a list of configurable time parameters and their values (milliseconds).",
	"    Or update current configurable parameters values (one or more).",
	"GET-MASTER-ADDR-BY-NAME <master-name>",
	"    Return the ip and port number of the master with that name.",
	"FAILOVER <master-name>",
	"    Manually failover a master node without asking for agreement from other",
	"    Sentinels",
	"FLUSHCONFIG",
	"    Force Sentinel to rewrite its configuration on disk, including the current",
	"    Sentinel state.",
	"INFO-CACHE <master-name>",
	"    Return last cached INFO output from masters and all its replicas.",
	"IS-MASTER-DOWN-BY-ADDR <ip> <port> <current-epoch> <runid>",
	"    Check if the master specified by ip:port is down from current Sentinel's",
	"    point of view.",
	"MASTER <master-name>",
	"    Show the state and info of the specified master.",
	"MASTERS",
	"    Show a list of monitored masters and their state.",
	"MONITOR <name> <ip> <port> <quorum>",
	"    Start monitoring a new master with the specified name, ip, port and quorum.",
	"MYID",
	"    Return the ID of the Sentinel instance.",
	"PENDING-SCRIPTS",
	"    Get pending scripts information.",
	"REMOVE <master-name>",
	"    Remove master from Sentinel's monitor list.",
	"REPLICAS <master-name>",
	"    Show a list of replicas for this master and their state.",
	"RESET <pattern>",
	"    Reset masters for specific master name matching this pattern.",
	"SENTINELS <master-name>",
	"    Show a list of Sentinel instances for this master and their state.",
	"SET <master-name> <option> <value> [<option> <value> ...]",
	"    Set configuration parameters for certain masters.",
	"SIMULATE-FAILURE [CRASH-AFTER-ELECTION] [CRASH-AFTER-PROMOTION] [HELP]",
	"    Simulate a Sentinel crash.",
}

func cmdSentinelHelp(*Sentinel, *client, [][]byte) resp.Value {
	return helpReply("SENTINEL", sentinelHelpLines)
}

// withMaster runs fn on the master args[2] names, under the monitor's
// lock after a refresh; the reply is Sentinel's error for an unknown name
// and errNoMasterAddr for one without an address.
func (f *Sentinel) withMaster(name []byte, fn func(ms *sentinelMaster, o *sentinelObservation) resp.Value) resp.Value {
	var v resp.Value
	f.mon.refresh(func(o *sentinelObservation) {
		ms := f.mon.master(name)
		switch {
		case ms == nil:
			v = resp.Err(errNoSuchMaster)
		case ms.addr == "":
			v = errNoMasterAddr(ms.name, o.groups)
		default:
			v = fn(ms, o)
		}
	})
	return v
}

// cmdSentinelMasterAddr is GET-MASTER-ADDR-BY-NAME: [ip, port], a null
// array for an unknown name.
func cmdSentinelMasterAddr(f *Sentinel, _ *client, args [][]byte) resp.Value {
	if f.mon.master(args[2]) == nil {
		return resp.NullArray()
	}
	return f.withMaster(args[2], func(ms *sentinelMaster, _ *sentinelObservation) resp.Value {
		host, port := splitHostPort(ms.addr)
		return resp.Array(resp.BulkString(host), resp.BulkString(port))
	})
}

// theGroup is the deployment's one group that owns slots, nil for a
// cluster of several (or none).
func (f *Sentinel) theGroup() *cluster.Group {
	var one *cluster.Group
	for _, g := range f.s.n.Groups() {
		if len(g.Ranges()) == 0 {
			continue
		}
		if one != nil {
			return nil
		}
		one = g
	}
	return one
}

// groupTerm is the Raft term of the deployment's one group, the master's
// config epoch (0 for a cluster of several groups).
func (f *Sentinel) groupTerm() uint64 {
	g := f.theGroup()
	if g == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(f.s.ctx, reportTimeout)
	defer cancel()
	return g.KnownTerm(ctx)
}

func cmdSentinelMaster(f *Sentinel, _ *client, args [][]byte) resp.Value {
	term := f.groupTerm()
	return f.withMaster(args[2], func(ms *sentinelMaster, o *sentinelObservation) resp.Value {
		return f.masterReply(ms, o, term, time.Now())
	})
}

func cmdSentinelMasters(f *Sentinel, _ *client, _ [][]byte) resp.Value {
	term := f.groupTerm()
	var out []resp.Value
	f.mon.refresh(func(o *sentinelObservation) {
		for _, ms := range f.mon.masters {
			if ms.addr != "" {
				out = append(out, f.masterReply(ms, o, term, time.Now()))
			}
		}
	})
	return resp.Array(out...)
}

// cmdSentinelReplicas is REPLICAS (and SLAVES): each with how far it
// follows, asked over the bus first (not under the monitor's lock).
func cmdSentinelReplicas(f *Sentinel, _ *client, args [][]byte) resp.Value {
	progress := f.replicaProgress()
	return f.withMaster(args[2], func(ms *sentinelMaster, o *sentinelObservation) resp.Value {
		now := time.Now()
		out := []resp.Value{}
		for _, r := range sortedInstances(ms.replicas) {
			out = append(out, f.replicaReply(ms, r, o, progress[r.id], now))
		}
		return resp.Array(out...)
	})
}

// replicaProgress asks the replicas of the deployment's one group how
// far they applied its log (this node's own replica answers locally).
func (f *Sentinel) replicaProgress() map[string]replicaProgress {
	out := map[string]replicaProgress{}
	g := f.theGroup()
	if g == nil {
		return out
	}
	ctx, cancel := context.WithTimeout(f.s.ctx, reportTimeout)
	defer cancel()
	for _, fp := range g.Followers(ctx) {
		out[fp.Peer.ID] = replicaProgress{applied: fp.Applied, ok: fp.Err == nil}
	}
	if g.Local() {
		out[f.s.n.Self().ID] = replicaProgress{applied: g.AppliedIndex(), ok: true}
	}
	return out
}

func cmdSentinelSentinels(f *Sentinel, _ *client, args [][]byte) resp.Value {
	return f.withMaster(args[2], func(ms *sentinelMaster, o *sentinelObservation) resp.Value {
		now := time.Now()
		out := []resp.Value{}
		for _, in := range sortedInstances(ms.sentinels) {
			out = append(out, f.sentinelReply(in, o, now))
		}
		return resp.Array(out...)
	})
}

// cmdSentinelCkQuorum is CKQUORUM: the usable "Sentinels" are the voters
// (the group's replicas; every node of a cluster of several groups)
// gossip sees alive, and a failover needs a majority of them (the quorum,
// which is also the majority that authorizes it).
func cmdSentinelCkQuorum(f *Sentinel, _ *client, args [][]byte) resp.Value {
	return f.withMaster(args[2], func(_ *sentinelMaster, o *sentinelObservation) resp.Value {
		usable, quorum := o.usableVoters(), o.quorum()
		if usable >= quorum {
			return resp.Status("OK " + strconv.Itoa(usable) + " usable Sentinels. Quorum and failover authorization can be reached")
		}
		return resp.Err(resp.NewError("NOQUORUM " + strconv.Itoa(usable) + " usable Sentinels. " +
			"Not enough available Sentinels to reach the specified quorum for this master. " +
			"Not enough available Sentinels to reach the majority and authorize a failover"))
	})
}

// cmdSentinelIsMasterDown is IS-MASTER-DOWN-BY-ADDR ip port epoch runid:
// whether the master at ip:port is s_down here; the facade takes no part
// in Sentinel's leader votes (failover is Raft's), so the leader is "*"
// and its epoch 0, as for a Sentinel asked for no vote.
func cmdSentinelIsMasterDown(f *Sentinel, _ *client, args [][]byte) resp.Value {
	port, err := resp.ParseInt(args[3])
	if err != nil {
		return resp.Err(resp.ErrNotInteger)
	}
	if _, err := resp.ParseInt(args[4]); err != nil {
		return resp.Err(resp.ErrNotInteger)
	}
	down := false
	f.mon.refresh(func(*sentinelObservation) {
		for _, ms := range f.mon.masters {
			host, p := splitHostPort(ms.addr)
			if ms.addr != "" && strings.EqualFold(host, string(args[2])) && p == strconv.FormatInt(port, 10) && ms.sdown {
				down = true
			}
		}
	})
	isdown := int64(0)
	if down {
		isdown = 1
	}
	return resp.Array(resp.Int(isdown), resp.BulkString("*"), resp.Int(0))
}

// cmdSentinelReset is RESET pattern: the facade forgets what it recorded
// of each master whose name matches (replicas, other facades, down
// flags) and relearns it at once, announcing them again, as a Sentinel
// rediscovers a reset master's instances. The count of masters reset.
func cmdSentinelReset(f *Sentinel, _ *client, args [][]byte) resp.Value {
	n := 0
	f.mon.mu.Lock()
	var evs []sentinelEvent
	for _, ms := range f.mon.masters {
		if !resp.Match(args[2], []byte(ms.name)) {
			continue
		}
		n++
		if ms.addr != "" {
			evs = append(evs, sentinelEvent{"+reset-master", ms.describe()})
		}
		ms.replicas, ms.sentinels = map[string]*sentinelInstance{}, map[string]*sentinelInstance{}
		ms.sdown, ms.odown = false, false
	}
	for _, e := range evs {
		f.publish(e)
	}
	f.mon.mu.Unlock()
	f.mon.refresh(nil)
	return resp.Int(int64(n))
}

func cmdSentinelSimulateFailure(_ *Sentinel, _ *client, args [][]byte) resp.Value {
	for _, a := range args[2:] {
		switch {
		case resp.EqualFold(a, "help"):
			return resp.Array(resp.BulkString("crash-after-election"), resp.BulkString("crash-after-promotion"))
		case resp.EqualFold(a, "crash-after-election"), resp.EqualFold(a, "crash-after-promotion"):
		default:
			return resp.Err(resp.NewError("ERR Unknown failure simulation specified"))
		}
	}
	return resp.Err(resp.NewError("ERR slotraft's Sentinel facade: SENTINEL SIMULATE-FAILURE: it never leads a Sentinel failover to crash in (docs/sentinel.md)"))
}

// cmdSentinelConfig is CONFIG GET param... (glob patterns, any case) over
// the facade's parameters, and CONFIG SET, refused.
func cmdSentinelConfig(f *Sentinel, _ *client, args [][]byte) resp.Value {
	switch {
	case resp.EqualFold(args[2], "set") && len(args) >= 5:
		return resp.Err(resp.NewError("ERR slotraft's Sentinel facade: SENTINEL CONFIG SET: its parameters are the node's flags (docs/sentinel.md)"))
	case !resp.EqualFold(args[2], "get"):
		return resp.Err(resp.NewError("ERR Only SENTINEL CONFIG GET <param> [<param> <param> ...]/ SET <param> <value> [<param> <value> ...] are supported."))
	}
	params := f.configParams()
	seen := map[string]bool{}
	var out []resp.Value
	for _, pat := range args[3:] {
		p := []byte(strings.ToLower(string(pat)))
		for _, kv := range params {
			if !seen[kv[0]] && resp.Match(p, []byte(kv[0])) {
				seen[kv[0]] = true
				out = append(out, resp.BulkString(kv[0]), resp.BulkString(kv[1]))
			}
		}
	}
	return resp.Map(out...)
}

// configParams are Sentinel's global parameters as they are here: the
// addresses given are announced as they are (hostnames too), the facade
// authenticates with the cluster's users and never to other Sentinels.
func (f *Sentinel) configParams() [][2]string {
	host, port := splitHostPort(f.s.n.FrontEndsOf(f.s.n.Self().ID).Sentinel)
	if host == "?" {
		host, port = "", "0"
	}
	return [][2]string{
		{"resolve-hostnames", "yes"},
		{"announce-hostnames", "yes"},
		{"announce-ip", host},
		{"announce-port", port},
		{"sentinel-user", ""},
		{"sentinel-pass", ""},
		{"loglevel", f.s.configValue("loglevel")},
	}
}
