package server

import (
	"strings"
	"time"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// Connection and server commands: PING, ECHO, QUIT, SELECT, HELLO, AUTH,
// READONLY and READWRITE (COMMAND is in command_cmd.go, INFO in info.go).

// Version is the Redis version slotraft answers as (HELLO, INFO).
const Version = "7.2.0"

var (
	errProtoVersion = resp.NewError("ERR Protocol version is not an integer or out of range")
	errNoProto      = resp.NewError("NOPROTO unsupported protocol version")
	errClientName   = resp.NewError("ERR Client names cannot contain spaces, newlines or special characters.")
)

func serverCommands() []*command {
	conn := []string{"fast", "connection"}
	return []*command{
		withSubscribed(fsmNode("ping", cmdPing)),
		fsmNode("echo", cmdEcho),
		fsmNode("time", cmdTime),
		{meta: &resp.Command{Name: "quit", Arity: -1, Flags: resp.FlagAllowBusy | resp.FlagNoScript | resp.FlagLoading | resp.FlagStale | resp.FlagFast | resp.FlagNoAuth,
			ACL: conn, Group: "connection", Since: "1.0.0", Summary: "Closes the connection.", Complexity: "O(1)"}, node: cmdQuit,
			now: true, subscribed: true},
		{meta: &resp.Command{Name: "select", Arity: 2, Flags: resp.FlagLoading | resp.FlagStale | resp.FlagFast, ACL: []string{"fast", "connection"},
			Group: "connection", Since: "1.0.0", Summary: "Changes the selected database.", Complexity: "O(1)"}, node: cmdSelect},
		{meta: &resp.Command{Name: "hello", Arity: -1, Flags: resp.FlagNoScript | resp.FlagLoading | resp.FlagStale | resp.FlagFast | resp.FlagNoAuth | resp.FlagAllowBusy,
			ACL: conn, Group: "connection", Since: "6.0.0", Summary: "Handshakes with the Redis server.", Complexity: "O(1)"}, node: cmdHello},
		{meta: &resp.Command{Name: "auth", Arity: -2, Flags: resp.FlagNoScript | resp.FlagLoading | resp.FlagStale | resp.FlagFast | resp.FlagNoAuth | resp.FlagAllowBusy,
			ACL: conn, Group: "connection", Since: "1.0.0", Summary: "Authenticates the connection.",
			Complexity: "O(N) where N is the number of passwords defined for the user"}, node: cmdAuth},
		{meta: &resp.Command{Name: "readonly", Arity: 1, Flags: resp.FlagFast | resp.FlagLoading | resp.FlagStale, ACL: []string{"fast", "connection"},
			Group: "cluster", Since: "3.0.0", Summary: "Enables read-only queries for a connection to a Redis Cluster replica node.", Complexity: "O(1)"},
			node: func(_ *Server, c *client, _ [][]byte) resp.Value { c.setReadonly(true); return resp.OK() }},
		{meta: &resp.Command{Name: "readwrite", Arity: 1, Flags: resp.FlagFast | resp.FlagLoading | resp.FlagStale, ACL: []string{"fast", "connection"},
			Group: "cluster", Since: "3.0.0", Summary: "Enables read-write queries for a connection to a Redis Cluster replica node.", Complexity: "O(1)"},
			node: func(_ *Server, c *client, _ [][]byte) resp.Value { c.setReadonly(false); return resp.OK() }},
	}
}

// cmdPing is PING [message]; a RESP2 connection in subscribed state gets
// ["pong", message], as in Redis.
func cmdPing(_ *Server, c *client, args [][]byte) resp.Value {
	if len(args) > 2 {
		return resp.Err(resp.ErrWrongArgs("ping"))
	}
	if c.sub != nil && c.sub.subscribed() && c.protocol() == resp.RESP2 {
		arg := []byte{}
		if len(args) == 2 {
			arg = args[1]
		}
		return resp.Array(resp.BulkString("pong"), resp.Bulk(arg))
	}
	if len(args) == 2 {
		return resp.Bulk(args[1])
	}
	return resp.Status("PONG")
}

func cmdEcho(_ *Server, _ *client, args [][]byte) resp.Value { return resp.Bulk(args[1]) }

// cmdTime is TIME: this node's clock (scripts get their entry's time).
func cmdTime(*Server, *client, [][]byte) resp.Value { return fsm.TimeReply(time.Now().UnixMicro()) }

// withSubscribed lets a RESP2 connection in subscribed state run c.
func withSubscribed(c *command) *command {
	c.subscribed = true
	return c
}

func cmdQuit(_ *Server, c *client, _ [][]byte) resp.Value {
	c.closing = true
	return resp.OK()
}

func cmdSelect(_ *Server, _ *client, args [][]byte) resp.Value {
	db, err := resp.ParseInt(args[1])
	if err != nil {
		return resp.Err(resp.ErrNotInteger)
	}
	if db != 0 {
		return resp.Err(resp.ErrSelectCluster)
	}
	return resp.OK()
}

// cmdAuth is AUTH [username] password (authCommand).
func cmdAuth(s *Server, c *client, args [][]byte) resp.Value {
	switch len(args) {
	case 2:
		if s.n.ACL().Users.DefaultNoPass() {
			return resp.Err(acl.ErrAuthNoPassword)
		}
		return s.authenticate(c, []byte(acl.DefaultUser), args[1])
	case 3:
		return s.authenticate(c, args[1], args[2])
	}
	return resp.Err(resp.ErrSyntax)
}

// cmdHello is HELLO [protover [AUTH username password] [SETNAME clientname]].
func cmdHello(s *Server, c *client, args [][]byte) resp.Value { return s.hello(c, args, "cluster") }

// hello is HELLO for a listener in mode (cluster, or sentinel for the
// Sentinel facade, whose reply has no role, as Redis's in sentinel mode).
func (s *Server) hello(c *client, args [][]byte, mode string) resp.Value {
	ver := 0
	next := 1
	if len(args) >= 2 {
		n, err := resp.ParseInt(args[1])
		if err != nil {
			return resp.Err(errProtoVersion)
		}
		if n < 2 || n > 3 {
			return resp.Err(errNoProto)
		}
		ver, next = int(n), 2
	}
	var user, pass, name []byte
	for j := next; j < len(args); j++ {
		more := len(args) - 1 - j
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "auth" && more >= 2:
			user, pass = args[j+1], args[j+2]
			j += 2
		case opt == "setname" && more >= 1:
			name = args[j+1]
			j++
		default:
			return resp.Err(resp.Errorf("ERR Syntax error in HELLO option '%s'", args[j]))
		}
	}
	if user != nil {
		if v := s.authenticate(c, user, pass); v.IsError() {
			return v
		}
	} else if s.mustAuth(c) {
		return resp.Err(acl.ErrHelloNoAuth)
	}
	if name != nil {
		if !validClientName(name) {
			return resp.Err(errClientName)
		}
		c.setName(string(name))
	}
	if ver != 0 {
		c.setProtocol(ver)
	}
	kv := []resp.Value{
		resp.BulkString("server"), resp.BulkString("redis"),
		resp.BulkString("version"), resp.BulkString(Version),
		resp.BulkString("proto"), resp.Int(int64(c.protocol())),
		resp.BulkString("id"), resp.Int(int64(c.id)),
		resp.BulkString("mode"), resp.BulkString(mode),
	}
	if mode != "sentinel" {
		kv = append(kv, resp.BulkString("role"), resp.BulkString("master"))
	}
	return resp.Map(append(kv, resp.BulkString("modules"), resp.Array())...)
}
