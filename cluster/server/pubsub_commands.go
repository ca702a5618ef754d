package server

import (
	"time"

	"github.com/slotraft/slotraft/resp"
)

// The pub/sub commands: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE
// PUBLISH PUBSUB SSUBSCRIBE SUNSUBSCRIBE SPUBLISH, and the rules of the
// RESP2 subscribed state.

func pubsubCommands() []*command {
	const (
		subFlags = resp.FlagPubSub | resp.FlagNoScript | resp.FlagLoading | resp.FlagStale
		pubFlags = resp.FlagPubSub | resp.FlagLoading | resp.FlagStale | resp.FlagFast | resp.FlagMayReplicate
	)
	slow, fast := []string{"pubsub", "slow"}, []string{"pubsub", "fast"}
	meta := func(name string, arity int, flags resp.Flag, acl []string, since, summary, complexity string) *resp.Command {
		return &resp.Command{Name: name, Arity: arity, Flags: flags, ACL: acl, Group: "pubsub",
			Since: since, Summary: summary, Complexity: complexity}
	}
	cmd := func(name string, arity int, flags resp.Flag, acl []string, since, summary, complexity string, run nodeHandler) *command {
		return &command{meta: meta(name, arity, flags, acl, since, summary, complexity), node: run}
	}
	// The subscribe family answers with confirmations it queues itself.
	sub := func(name string, arity int, since, summary, complexity string, run pushHandler) *command {
		return &command{meta: meta(name, arity, subFlags, slow, since, summary, complexity), push: run}
	}
	ssub := sub("ssubscribe", -2, "7.0.0", "Listens for messages published to shard channels.",
		"O(N) where N is the number of shard channels to subscribe to.", cmdSSubscribe)
	sunsub := sub("sunsubscribe", -1, "7.0.0", "Stops listening to messages posted to shard channels.",
		"O(N) where N is the number of shard channels to unsubscribe.", cmdSUnsubscribe)
	spub := cmd("spublish", 3, pubFlags, fast, "7.0.0", "Post a message to a shard channel",
		"O(N) where N is the number of clients subscribed to the receiving shard channel.", cmdSPublish)
	// Shard channels are keys for routing (so clients and COMMAND GETKEYS
	// find their slot), flagged not_key as in Redis.
	for _, c := range []*command{ssub, sunsub} {
		c.meta.FirstKey, c.meta.LastKey, c.meta.Step = 1, -1, 1
		c.meta.KeySpecs = []resp.KeySpec{{Flags: []string{"not_key"}, Index: 1, LastKey: -1, KeyStep: 1}}
	}
	spub.meta.FirstKey, spub.meta.LastKey, spub.meta.Step = 1, 1, 1
	spub.meta.KeySpecs = []resp.KeySpec{{Flags: []string{"not_key"}, Index: 1, LastKey: 0, KeyStep: 1}}
	return []*command{
		sub("subscribe", -2, "2.0.0", "Listens for messages published to channels.",
			"O(N) where N is the number of channels to subscribe to.", cmdSubscribe),
		sub("unsubscribe", -1, "2.0.0", "Stops listening to messages posted to channels.",
			"O(N) where N is the number of channels to unsubscribe.", cmdUnsubscribe),
		sub("psubscribe", -2, "2.0.0", "Listens for messages published to channels that match one or more patterns.",
			"O(N) where N is the number of patterns to subscribe to.", cmdPSubscribe),
		sub("punsubscribe", -1, "2.0.0", "Stops listening to messages published to channels that match one or more patterns.",
			"O(N) where N is the number of patterns to unsubscribe.", cmdPUnsubscribe),
		cmd("publish", 3, pubFlags, fast, "2.0.0", "Posts a message to a channel.",
			"O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).", cmdPublish),
		ssub, sunsub, spub,
		pubsubContainer(),
	}
}

func pubsubContainer() *command {
	sub := func(name string, arity int, flags resp.Flag, acl []string, since, summary, complexity string, run nodeHandler) *command {
		m := subMeta("pubsub", name, arity, flags, acl, since, summary, complexity)
		m.Group = "pubsub"
		return &command{meta: m, node: run}
	}
	const flags = resp.FlagPubSub | resp.FlagLoading | resp.FlagStale
	acl := []string{"pubsub", "slow"}
	subs := []*command{
		sub("channels", -2, flags, acl, "2.8.0", "Returns the active channels.",
			"O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)", cmdPubsubChannels),
		sub("help", 2, resp.FlagLoading|resp.FlagStale, []string{"slow"}, "6.2.0", "Returns helpful text about the different subcommands.", "O(1)", cmdPubsubHelp),
		sub("numpat", 2, flags, acl, "2.8.0", "Returns a count of unique pattern subscriptions.", "O(1)", cmdPubsubNumPat),
		sub("numsub", -2, flags, acl, "2.8.0", "Returns a count of subscribers to channels.",
			"O(N) for the NUMSUB subcommand, where N is the number of requested channels", cmdPubsubNumSub),
		sub("shardchannels", -2, flags, acl, "7.0.0", "Returns the active shard channels.",
			"O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).", cmdPubsubShardChannels),
		sub("shardnumsub", -2, flags, acl, "7.0.0", "Returns the count of subscribers of shard channels.",
			"O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels", cmdPubsubShardNumSub),
	}
	meta := &resp.Command{Name: "pubsub", Arity: -2, ACL: []string{"slow"}, Group: "pubsub", Since: "2.8.0",
		Summary: "A container for Pub/Sub commands.", Complexity: "Depends on subcommand."}
	return container(meta, subs...)
}

func cmdSubscribe(s *Server, c *client, args [][]byte) {
	s.ps.reg.subscribe(s.subscriberOf(c), kindChannel, args[1:])
}

func cmdPSubscribe(s *Server, c *client, args [][]byte) {
	s.ps.reg.subscribe(s.subscriberOf(c), kindPattern, args[1:])
}

func cmdSSubscribe(s *Server, c *client, args [][]byte) {
	if _, v, ok := s.shardRoute(c, args[1:]); !ok {
		s.send(c, v)
		return
	}
	s.ps.reg.subscribe(s.subscriberOf(c), kindShard, args[1:])
	s.ps.watchShards()
}

func cmdUnsubscribe(s *Server, c *client, args [][]byte) {
	s.unsubscribe(c, kindChannel, args[1:])
}

func cmdPUnsubscribe(s *Server, c *client, args [][]byte) {
	s.unsubscribe(c, kindPattern, args[1:])
}

func cmdSUnsubscribe(s *Server, c *client, args [][]byte) {
	if len(args) > 1 {
		if _, v, ok := s.shardRoute(c, args[1:]); !ok {
			s.send(c, v)
			return
		}
	}
	s.unsubscribe(c, kindShard, args[1:])
}

// unsubscribe runs an unsubscribe-family command. A connection that never
// subscribed gets its confirmations as plain replies (count 0).
func (s *Server) unsubscribe(c *client, k subKind, names [][]byte) {
	if c.sub != nil {
		s.ps.reg.unsubscribe(c.sub, k, names)
		return
	}
	if len(names) == 0 {
		s.sendPush(c, confirmation(kindWords[k].unsub, nil, 0))
		return
	}
	for _, name := range names {
		s.sendPush(c, confirmation(kindWords[k].unsub, name, 0))
	}
}

// cmdPublish is PUBLISH: delivered here and forwarded to every node; the
// reply counts this node's receivers only, as in Redis Cluster.
func cmdPublish(s *Server, _ *client, args [][]byte) resp.Value {
	return resp.Int(int64(s.publishCluster(args[1], args[2])))
}

func cmdSPublish(s *Server, c *client, args [][]byte) resp.Value {
	if _, v, ok := s.shardRoute(c, args[1:2]); !ok {
		return v
	}
	return resp.Int(int64(s.publishShard(args[1], args[2])))
}

func cmdPubsubChannels(s *Server, _ *client, args [][]byte) resp.Value {
	return s.pubsubList(kindChannel, args)
}

func cmdPubsubShardChannels(s *Server, _ *client, args [][]byte) resp.Value {
	return s.pubsubList(kindShard, args)
}

// pubsubList is PUBSUB CHANNELS|SHARDCHANNELS [pattern]: this node's
// channels with subscribers (node-local, as in Redis Cluster), sorted.
func (s *Server) pubsubList(k subKind, args [][]byte) resp.Value {
	if len(args) > 3 {
		return resp.Err(resp.ErrSubcommandSyntax(args[0], args[1]))
	}
	var pattern []byte
	if len(args) == 3 {
		pattern = args[2]
	}
	return resp.BulkArray(s.ps.reg.list(k, pattern))
}

func cmdPubsubNumSub(s *Server, _ *client, args [][]byte) resp.Value {
	return s.pubsubNumSub(kindChannel, args[2:])
}

func cmdPubsubShardNumSub(s *Server, _ *client, args [][]byte) resp.Value {
	return s.pubsubNumSub(kindShard, args[2:])
}

// pubsubNumSub is PUBSUB NUMSUB|SHARDNUMSUB: channel, count pairs counting
// this node's subscribers (node-local, as in Redis Cluster).
func (s *Server) pubsubNumSub(k subKind, names [][]byte) resp.Value {
	out := make([]resp.Value, 0, 2*len(names))
	for _, name := range names {
		out = append(out, resp.Bulk(name), resp.Int(int64(s.ps.reg.numSubs(k, name))))
	}
	return resp.Array(out...)
}

func cmdPubsubNumPat(s *Server, _ *client, _ [][]byte) resp.Value {
	_, patterns, _ := s.ps.reg.counts()
	return resp.Int(int64(patterns))
}

func cmdPubsubHelp(_ *Server, _ *client, _ [][]byte) resp.Value {
	return helpReply("PUBSUB", []string{
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]",
		"    Return the currently active shard level channels matching a <pattern> (default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]",
		"    Return the number of subscribers for the specified shard level channel(s)",
	})
}

// pubsubGate answers, before the command is queued or routed, what pub/sub
// rules decide; it reports whether it answered cmd.
//   - Inside MULTI the subscribe family is refused (flagging the
//     transaction): its confirmations cannot take one place in EXEC's reply.
//   - A RESP2 connection in subscribed state may only run the subscribe
//     family and the commands flagged subscribed (PING, QUIT, RESET);
//     anything else gets Redis's error. Unknown commands, arity errors and
//     redirects come first, as in Redis (the normal path answers them).
//
// subscribeFamily: cmd is (P|S)SUBSCRIBE or (P|S)UNSUBSCRIBE, the push
// commands of the pubsub group (MONITOR pushes too, but is not one).
func subscribeFamily(cmd *command) bool { return cmd.push != nil && cmd.meta.Group == "pubsub" }

func (s *Server) pubsubGate(c *client, cmd resp.Request) bool {
	if c.sub == nil && c.tx == nil {
		return false // the common case: one check
	}
	args := cmd.Args
	if inMulti(c) {
		found := s.table.lookup(args[0])
		if found == nil || !subscribeFamily(found) || !found.meta.ArityOK(len(args)) {
			return false
		}
		s.received(c, cmd, route{cmd: found}, time.Now())
		s.rejected(found, args)
		txOf(c).dirty = true
		s.send(c, resp.Err(errNotInMulti))
		return true
	}
	if !c.sub.subscribed() || c.protocol() != resp.RESP2 {
		return false
	}
	r := s.route(c, args)
	if r.kind == routeReply {
		return false
	}
	name, run, ok := fullName(r.cmd, args)
	if !ok || subscribeFamily(run) || run.subscribed {
		return false
	}
	if keys := r.cmd.meta.KeysOf(args); r.kind == routeNode && len(keys) > 0 {
		if _, _, ok := s.shardRoute(c, keys); !ok {
			return false // a redirect comes first, as for a data command's key
		}
	}
	s.received(c, cmd, r, time.Now())
	s.rejected(r.cmd, args)
	s.send(c, resp.Err(resp.ErrSubscribedContext(name)))
	return true
}

// fullName is the name of the command args call as Redis's errors spell
// it ("pubsub|numsub" for a subcommand) and the table entry that runs it;
// false for an unknown subcommand or a subcommand's arity error, which the
// container answers.
func fullName(cmd *command, args [][]byte) (string, *command, bool) {
	if len(cmd.meta.Subcommands) == 0 || len(args) < 2 {
		return cmd.meta.Name, cmd, true
	}
	i, err := cmd.meta.SubcommandIndex(args)
	switch {
	case err != nil:
		return "", nil, false
	case len(cmd.subs) > 0:
		return cmd.subs[i].meta.Name, cmd.subs[i], true
	}
	return cmd.meta.Subcommands[i].Name, cmd, true
}

// resetPubsub is RESET's part: every subscription is dropped without
// confirmations, and the connection leaves subscribed state.
func (s *Server) resetPubsub(c *client) {
	if c.sub != nil {
		s.ps.reg.removeAll(c.sub)
	}
}
