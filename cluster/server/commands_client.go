package server

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// CLIENT subcommands.

func clientCommands() []*command {
	acl := []string{"slow", "connection"}
	base := resp.FlagNoScript | resp.FlagLoading | resp.FlagStale
	sub := func(name string, arity int, flags resp.Flag, since, summary string, run nodeHandler) *command {
		return &command{meta: subMeta("client", name, arity, flags, acl, since, summary, "O(1)"), node: run}
	}
	admin := func(c *command) *command {
		c.meta.ACL = []string{"admin", "slow", "dangerous", "connection"}
		c.meta.Flags |= resp.FlagAdmin
		return c
	}
	list := nondeterministic(admin(sub("list", -2, base, "2.4.0", "Lists open connections.", cmdClientList)))
	list.meta.Complexity = "O(N) where N is the number of client connections"
	kill := admin(sub("kill", -3, base, "2.4.0", "Terminates open connections.", cmdClientKill))
	kill.meta.Complexity = list.meta.Complexity
	unblock := admin(sub("unblock", -3, base, "5.0.0", "Unblocks a client blocked by a blocking command from a different connection.", cmdClientUnblock))
	unblock.meta.Complexity = "O(log N) where N is the number of client connections"
	unpause := admin(sub("unpause", 2, base, "6.2.0", "Resumes processing commands from paused clients.", cmdClientUnpause))
	unpause.meta.Complexity = "O(N) Where N is the number of paused clients"
	tracking := trackingCommands(func(name string, arity int, since, summary string, run nodeHandler) *command {
		return sub(name, arity, base, since, summary, run)
	}) // caching, getredir, tracking, trackinginfo (tracking_cmd.go)
	subs := []*command{
		tracking[0],
		sub("getname", 2, base, "2.6.9", "Returns the name of the connection.", cmdClientGetName),
		tracking[1],
		sub("help", 2, resp.FlagLoading|resp.FlagStale, "5.0.0", "Returns helpful text about the different subcommands.", cmdClientHelp),
		nondeterministic(sub("id", 2, base, "5.0.0", "Returns the unique client ID of the connection.", cmdClientID)),
		nondeterministic(sub("info", 2, base, "6.2.0", "Returns information about the connection.", cmdClientInfo)),
		kill,
		list,
		admin(sub("no-evict", 3, base, "7.0.0", "Sets the client eviction mode of the connection.", cmdClientNoEvict)),
		sub("no-touch", 3, resp.FlagNoScript|resp.FlagLoading|resp.FlagStale, "7.2.0", "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", cmdClientNoTouch),
		admin(sub("pause", -3, base, "3.0.0", "Suspends commands processing.", cmdClientPause)),
		sub("reply", 3, base, "3.2.0", "Instructs the server whether to reply to commands.", cmdClientReply),
		sub("setinfo", 4, base, "7.2.0", "Sets information specific to the client or connection.", cmdClientSetInfo),
		sub("setname", 3, base, "2.6.9", "Sets the connection name.", cmdClientSetName),
		tracking[2],
		tracking[3],
		unblock,
		unpause,
	}
	meta := &resp.Command{Name: "client", Arity: -2, Group: "connection", Since: "2.4.0",
		Summary: "A container for client connection commands.", Complexity: "Depends on subcommand."}
	return []*command{container(meta, subs...), resetCommand()}
}

func resetCommand() *command {
	return &command{meta: &resp.Command{Name: "reset", Arity: 1,
		Flags: resp.FlagNoScript | resp.FlagLoading | resp.FlagStale | resp.FlagFast | resp.FlagNoAuth | resp.FlagAllowBusy,
		ACL:   []string{"fast", "connection"}, Group: "connection", Since: "6.2.0",
		Summary: "Resets the connection.", Complexity: "O(1)"}, node: cmdReset, now: true, subscribed: true}
}

// cmdReset is RESET: the connection's state goes back to a new
// connection's (no transaction or watches, no subscriptions, RESP2, no
// name, READWRITE, no ASKING), then +RESET. The library name stays, as in
// Redis.
func cmdReset(s *Server, c *client, _ [][]byte) resp.Value {
	c.tx = nil
	c.asking = false
	s.trk.disable(c) // as Redis's clearClientConnectionState
	s.stopMonitor(c)
	s.resetPubsub(c)
	c.setProtocol(resp.RESP2)
	c.setName("")
	c.setReadonly(false)
	s.initACL(c) // the default user, authenticated only if it needs no password
	// As Redis's clearClientConnectionState: replies on, eviction
	// allowed, accesses recorded.
	c.replyOff, c.skipNext = false, false
	c.mu.Lock()
	c.noEvict, c.noTouch = false, false
	c.mu.Unlock()
	return resp.Status("RESET")
}

func cmdClientID(_ *Server, c *client, _ [][]byte) resp.Value { return resp.Int(int64(c.id)) }

func cmdClientGetName(_ *Server, c *client, _ [][]byte) resp.Value {
	if name := c.getName(); name != "" {
		return resp.BulkString(name)
	}
	return resp.Null()
}

func cmdClientSetName(_ *Server, c *client, args [][]byte) resp.Value {
	if !validClientName(args[2]) {
		return resp.Err(errClientName)
	}
	c.setName(string(args[2]))
	return resp.OK()
}

func cmdClientSetInfo(_ *Server, c *client, args [][]byte) resp.Value {
	attr, val := strings.ToLower(string(args[2])), string(args[3])
	if attr != "lib-name" && attr != "lib-ver" {
		return resp.Err(resp.Errorf("ERR Unrecognized option '%s'", args[2]))
	}
	if !validClientName(args[3]) {
		// Redis names the attribute as the client spelt it.
		return resp.Err(resp.Errorf("ERR %s cannot contain spaces, newlines or special characters.", args[2]))
	}
	if attr == "lib-name" {
		c.setLib(&val, nil)
	} else {
		c.setLib(nil, &val)
	}
	return resp.OK()
}

// cmdClientNoEvict is CLIENT NO-EVICT ON|OFF: it sets flag e; slotraft
// never evicts a client anyway.
func cmdClientNoEvict(_ *Server, c *client, args [][]byte) resp.Value {
	on := resp.EqualFold(args[2], "on")
	if !on && !resp.EqualFold(args[2], "off") {
		return resp.Err(resp.ErrSyntax)
	}
	c.mu.Lock()
	c.noEvict = on
	c.mu.Unlock()
	return resp.OK()
}

func cmdClientInfo(s *Server, c *client, _ [][]byte) resp.Value {
	c.publish()
	return resp.Verbatim("txt", []byte(c.info(time.Now(), s.watchesChanged)+"\n"))
}

// cmdClientList is CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id ...]:
// with IDs, the clients in the order asked (once per mention, as Redis).
func cmdClientList(s *Server, c *client, args [][]byte) resp.Value { return s.listClients(s, c, args) }

// clientSet is a listener's connections: the data port's (Server) or the
// Sentinel facade's, which CLIENT LIST and KILL see.
type clientSet interface {
	clientList() []*client
	clientByID(id int64) *client
	kill(o *client)
}

// listClients is CLIENT LIST over set's connections.
func (s *Server) listClients(set clientSet, c *client, args [][]byte) resp.Value {
	c.publish()
	var list []*client
	switch {
	case len(args) == 4 && resp.EqualFold(args[2], "type"):
		typ, ok := parseClientType(args[3])
		if !ok {
			return resp.Err(resp.Errorf("ERR Unknown client type '%s'", args[3]))
		}
		for _, o := range set.clientList() {
			if clientType(o) == typ {
				list = append(list, o)
			}
		}
	case len(args) > 3 && resp.EqualFold(args[2], "id"):
		for _, a := range args[3:] {
			id, err := resp.ParseInt(a)
			if err != nil {
				return resp.Err(resp.NewError("ERR Invalid client ID"))
			}
			if o := set.clientByID(id); o != nil {
				list = append(list, o)
			}
		}
	case len(args) == 2:
		list = set.clientList()
	default:
		return resp.Err(resp.ErrSyntax)
	}
	now := time.Now()
	var b strings.Builder
	for _, o := range list {
		b.WriteString(o.info(now, s.watchesChanged))
		b.WriteByte('\n')
	}
	return resp.Verbatim("txt", []byte(b.String()))
}

// clientByID is the connected client with id, nil if none.
func (s *Server) clientByID(id int64) *client {
	if id <= 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[uint64(id)]
}

// sortedClients are the clients of m in id order.
func sortedClients(m map[uint64]*client) []*client {
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, func(a, b *client) int { return cmp.Compare(a.id, b.id) })
	return out
}

// cmdClientHelp is Redis 7.2's text.
func cmdClientHelp(_ *Server, _ *client, _ [][]byte) resp.Value {
	lines := append([]string(nil), trackingHelp.caching...)
	lines = append(lines,
		"GETNAME",
		"    Return the name of the current connection.",
		"ID",
		"    Return the ID of the current connection.",
		"INFO",
		"    Return information about the current client connection.",
		"KILL <ip:port>",
		"    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]",
		"    Kill connections. Options are:",
		"    * ADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made from the specified address",
		"    * LADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made to specified local address",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Kill connections by type.",
		"    * USER <username>",
		"      Kill connections authenticated by <username>.",
		"    * SKIPME (YES|NO)",
		"      Skip killing current connection (default: yes).",
		"LIST [options ...]",
		"    Return information about client connections. Options:",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Return clients of specified type.",
		"UNPAUSE",
		"    Stop the current client pause, resuming traffic.",
		"PAUSE <timeout> [WRITE|ALL]",
		"    Suspend all, or just write, clients for <timeout> milliseconds.",
		"REPLY (ON|OFF|SKIP)",
		"    Control the replies sent to the current connection.",
		"SETNAME <name>",
		"    Assign the name <name> to the current connection.",
		"SETINFO <option> <value>",
		"    Set client meta attr. Options are:",
		"    * LIB-NAME: the client lib name.",
		"    * LIB-VER: the client lib version.",
		"UNBLOCK <clientid> [TIMEOUT|ERROR]",
		"    Unblock the specified blocked client.")
	lines = append(lines, trackingHelp.tracking...)
	lines = append(lines,
		"NO-EVICT (ON|OFF)",
		"    Protect current client connection from eviction.",
		"NO-TOUCH (ON|OFF)",
		"    Will not touch LRU/LFU stats when this mode is on.")
	return helpReply("CLIENT", lines)
}

// clientList is a snapshot of the connected clients, in id order.
func (s *Server) clientList() []*client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedClients(s.clients)
}
