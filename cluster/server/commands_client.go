package server

import (
	"slices"
	"strconv"
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
	subs := []*command{
		sub("getname", 2, base, "2.6.9", "Returns the name of the connection.", cmdClientGetName),
		sub("help", 2, resp.FlagLoading|resp.FlagStale, "5.0.0", "Returns helpful text about the different subcommands.", cmdClientHelp),
		nondeterministic(sub("id", 2, base, "5.0.0", "Returns the unique client ID of the connection.", cmdClientID)),
		nondeterministic(sub("info", 2, base, "6.2.0", "Returns information about the connection.", cmdClientInfo)),
		list,
		admin(sub("no-evict", 3, base, "7.0.0", "Sets the client eviction mode of the connection.", cmdClientOnOff)),
		sub("no-touch", 3, resp.FlagNoScript|resp.FlagLoading|resp.FlagStale, "7.2.0", "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", cmdClientOnOff),
		sub("setinfo", 4, base, "7.2.0", "Sets information specific to the client or connection.", cmdClientSetInfo),
		sub("setname", 3, base, "2.6.9", "Sets the connection name.", cmdClientSetName),
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
	s.stopMonitor(c)
	s.resetPubsub(c)
	c.setProtocol(resp.RESP2)
	c.setName("")
	c.setReadonly(false)
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
	if !validClientName(args[3]) && len(args[3]) > 0 {
		return resp.Err(resp.Errorf("ERR %s cannot contain spaces, newlines or special characters.", attr))
	}
	if attr == "lib-name" {
		c.setLib(&val, nil)
	} else {
		c.setLib(nil, &val)
	}
	return resp.OK()
}

// cmdClientOnOff accepts NO-EVICT and NO-TOUCH: slotraft never evicts a
// client, and reads never change a key's access time, so both are no-ops.
func cmdClientOnOff(_ *Server, _ *client, args [][]byte) resp.Value {
	if !resp.EqualFold(args[2], "on") && !resp.EqualFold(args[2], "off") {
		return resp.Err(resp.ErrSyntax)
	}
	return resp.OK()
}

func cmdClientInfo(_ *Server, c *client, _ [][]byte) resp.Value {
	return resp.Verbatim("txt", []byte(c.info(time.Now())+"\n"))
}

// cmdClientList is CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id ...].
func cmdClientList(s *Server, _ *client, args [][]byte) resp.Value {
	var ids []uint64
	typ := ""
	switch {
	case len(args) == 2:
	case len(args) == 4 && resp.EqualFold(args[2], "type"):
		typ = strings.ToLower(string(args[3]))
		switch typ {
		case "normal", "master", "replica", "slave", "pubsub":
		default:
			return resp.Err(resp.Errorf("ERR Unknown client type '%s'", args[3]))
		}
	case len(args) > 3 && resp.EqualFold(args[2], "id"):
		for _, a := range args[3:] {
			id, err := strconv.ParseUint(string(a), 10, 64)
			if err != nil || id == 0 {
				return resp.Err(resp.NewError("ERR Invalid client ID"))
			}
			ids = append(ids, id)
		}
	default:
		return resp.Err(resp.ErrSyntax)
	}
	now := time.Now()
	var b strings.Builder
	for _, c := range s.clientList() {
		if typ != "" && typ != clientType(c) {
			continue
		}
		if ids != nil && !slices.Contains(ids, c.id) {
			continue
		}
		b.WriteString(c.info(now))
		b.WriteByte('\n')
	}
	return resp.Verbatim("txt", []byte(b.String()))
}

// clientType is the class CLIENT LIST TYPE filters on: pubsub while
// subscribed, else normal (no replication links are clients here).
func clientType(c *client) string {
	c.mu.Lock()
	sub := c.sub
	c.mu.Unlock()
	if sub.subscribed() {
		return "pubsub"
	}
	return "normal"
}

func sortClients(cs []*client) {
	slices.SortFunc(cs, func(a, b *client) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
}

func cmdClientHelp(_ *Server, _ *client, _ [][]byte) resp.Value {
	return helpReply("CLIENT", []string{
		"GETNAME",
		"    Return the name of the current connection.",
		"ID",
		"    Return the ID of the current connection.",
		"INFO",
		"    Return information about the current client connection.",
		"LIST [options ...]",
		"    Return information about client connections. Options:",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Return clients of specified type.",
		"    * ID <client-id> [<client-id> ...]",
		"      Return clients of specified IDs only.",
		"NO-EVICT (ON|OFF)",
		"    Protect current client connection from eviction.",
		"NO-TOUCH (ON|OFF)",
		"    Will not touch LRU/LFU stats when this mode is on.",
		"SETINFO <option> <value>",
		"    Set client meta attr. Options are:",
		"    * LIB-NAME: the client lib name.",
		"    * LIB-VER: the client lib version.",
		"SETNAME <name>",
		"    Assign the name <name> to the current connection.",
	})
}

// clientList is a snapshot of the connected clients, in id order.
func (s *Server) clientList() []*client {
	s.mu.Lock()
	out := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		out = append(out, c)
	}
	s.mu.Unlock()
	sortClients(out)
	return out
}
