package server

import (
	"strings"
	"time"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/resp"
)

// The Sentinel facade's command table: Redis 7.2 in sentinel mode keeps
// only the commands flagged SENTINEL (ACL, AUTH, CLIENT, COMMAND, HELLO,
// INFO, PING, the subscribe family, PUBLISH, ROLE, SENTINEL, SHUTDOWN) and
// answers any other as unknown. The ones the data port has too take its
// metadata and, where they act on the connection alone, its handlers.

// sentinelHandler runs a facade command for c (arity checked).
type sentinelHandler func(f *Sentinel, c *client, args [][]byte) resp.Value

// sentinelCommand is one entry of the facade's table.
type sentinelCommand struct {
	meta *resp.Command
	run  sentinelHandler
	// push: a subscribe-family command, which queues its replies itself.
	push func(f *Sentinel, c *client, args [][]byte)
	subs []*sentinelCommand // a container's, in meta.Subcommands order
	// subscribed: a RESP2 connection in subscribed state may run it.
	subscribed bool
	// aclAs is the data port's command whose ACL rules apply to this
	// one, args as given; nil: authentication is enough (docs/sentinel.md).
	aclAs *command
}

type sentinelTable struct {
	byName map[string]*sentinelCommand
	meta   *resp.Table
}

func (t *sentinelTable) lookup(name []byte) *sentinelCommand {
	return t.byName[strings.ToLower(string(name))]
}

// sentinelCommands builds the facade's table.
func sentinelCommands() *sentinelTable {
	main := commands()
	same := func(name string, run sentinelHandler) *sentinelCommand {
		c := main.byName[name]
		return &sentinelCommand{meta: c.meta, run: run, aclAs: c}
	}
	viaServer := func(h nodeHandler) sentinelHandler {
		return func(f *Sentinel, c *client, args [][]byte) resp.Value { return h(f.s, c, args) }
	}
	ping := same("ping", viaServer(cmdPing))
	ping.subscribed = true
	cmds := []*sentinelCommand{
		sentinelContainer(),
		ping,
		same("auth", viaServer(cmdAuth)),
		same("hello", func(f *Sentinel, c *client, args [][]byte) resp.Value { return f.s.hello(c, args, "sentinel") }),
		same("info", cmdSentinelInfo),
		same("role", cmdSentinelRole),
		same("publish", cmdSentinelPublish),
		sentinelClientContainer(main, viaServer),
		sentinelCommandContainer(main),
		sentinelACLContainer(main),
		same("shutdown", refusedOnFacade("SHUTDOWN would stop the whole node: send it to the data port")),
	}
	for _, name := range []string{"subscribe", "psubscribe", "unsubscribe", "punsubscribe"} {
		cmds = append(cmds, &sentinelCommand{meta: main.byName[name].meta, push: sentinelSubscribeFamily(name),
			subscribed: true, aclAs: main.byName[name]})
	}
	t := &sentinelTable{byName: map[string]*sentinelCommand{}, meta: resp.NewTable()}
	for _, c := range cmds {
		t.byName[c.meta.Name] = c
		t.meta.Register(c.meta)
	}
	return t
}

// sentinelSubs picks, by name, the data port's subcommands of container
// main (their metadata and ACL rules) and runs them with run; a name run
// does not know is refused as not served here.
func sentinelSubs(main *command, run map[string]sentinelHandler) (*resp.Command, []*sentinelCommand) {
	meta := *main.meta
	meta.Subcommands = nil
	var subs []*sentinelCommand
	for _, sc := range main.subs {
		_, name, _ := strings.Cut(sc.meta.Name, "|")
		h, ok := run[name]
		if !ok {
			h = refusedOnFacade(strings.ToUpper(main.meta.Name+" "+name) + " is served on the data port only")
		}
		subs = append(subs, &sentinelCommand{meta: sc.meta, run: h, aclAs: main})
		meta.Subcommands = append(meta.Subcommands, sc.meta)
	}
	return &meta, subs
}

// sentinelClientContainer is CLIENT on the facade: the subcommands about
// the connection itself are the data port's, LIST and KILL see the
// facade's connections.
func sentinelClientContainer(main *commandTable, viaServer func(nodeHandler) sentinelHandler) *sentinelCommand {
	meta, subs := sentinelSubs(main.byName["client"], map[string]sentinelHandler{
		"getname": viaServer(cmdClientGetName), "setname": viaServer(cmdClientSetName),
		"setinfo": viaServer(cmdClientSetInfo), "id": viaServer(cmdClientID),
		"info": viaServer(cmdClientInfo), "help": viaServer(cmdClientHelp),
		"no-evict": viaServer(cmdClientNoEvict),
		"list":     func(f *Sentinel, c *client, args [][]byte) resp.Value { return f.s.listClients(f, c, args) },
		"kill":     func(f *Sentinel, c *client, args [][]byte) resp.Value { return f.s.killClients(f, c, args) },
	})
	return &sentinelCommand{meta: meta, subs: subs}
}

// sentinelCommandContainer is COMMAND over the facade's own table.
func sentinelCommandContainer(main *commandTable) *sentinelCommand {
	meta, subs := sentinelSubs(main.byName["command"], map[string]sentinelHandler{
		"count": func(f *Sentinel, _ *client, _ [][]byte) resp.Value { return resp.Int(int64(f.table.meta.Len())) },
		"info":  func(f *Sentinel, _ *client, args [][]byte) resp.Value { return commandInfoOf(f.table.meta, args) },
		"list": func(f *Sentinel, _ *client, args [][]byte) resp.Value {
			if len(args) > 2 {
				return resp.Err(resp.NewError("ERR COMMAND LIST FILTERBY is served on the data port only"))
			}
			var names []resp.Value
			for _, c := range f.table.meta.All() {
				names = append(names, resp.BulkString(c.Name))
			}
			return resp.Array(names...)
		},
		"help": func(f *Sentinel, c *client, args [][]byte) resp.Value { return cmdCommandHelp(f.s, c, args) },
	})
	c := &sentinelCommand{meta: meta, subs: subs}
	c.run = func(f *Sentinel, _ *client, _ [][]byte) resp.Value { return commandInfos(f.table.meta.All()) }
	return c
}

// sentinelACLContainer is ACL on the facade: the users are the cluster's
// and are managed on the data port; WHOAMI answers here.
func sentinelACLContainer(main *commandTable) *sentinelCommand {
	meta, subs := sentinelSubs(main.byName["acl"], map[string]sentinelHandler{
		"whoami": func(_ *Sentinel, c *client, _ [][]byte) resp.Value {
			name, _ := c.aclUser()
			return resp.BulkString(name)
		},
	})
	return &sentinelCommand{meta: meta, subs: subs}
}

// refusedOnFacade answers a command Redis's Sentinel has that the facade
// does not serve, saying why.
func refusedOnFacade(why string) sentinelHandler {
	err := resp.NewError("ERR slotraft's Sentinel facade: " + why + " (docs/sentinel.md)")
	return func(*Sentinel, *client, [][]byte) resp.Value { return resp.Err(err) }
}

// serveOne runs one request of c, in Redis's order: the command exists,
// its arity, authentication and ACL, the subscribed state.
func (f *Sentinel) serveOne(c *client, args [][]byte) {
	if len(args) == 0 {
		return
	}
	f.count(func(st *sentinelStats) { st.commands++ })
	c.argvMem = argvLen(args)
	cmd := f.table.lookup(args[0])
	if cmd == nil {
		f.reply(c, resp.Err(resp.ErrUnknownCommand(args[0], args[1:])))
		return
	}
	if !cmd.meta.ArityOK(len(args)) {
		f.reply(c, resp.Err(resp.ErrWrongArgs(cmd.meta.Name)))
		return
	}
	run := cmd
	if len(cmd.subs) > 0 && (len(args) > 1 || cmd.run == nil) {
		i, err := cmd.meta.SubcommandIndex(args)
		if err != nil {
			f.reply(c, resp.Err(err))
			return
		}
		run = cmd.subs[i]
	}
	if v, denied := f.aclDenied(c, run, args); denied {
		f.reply(c, v)
		return
	}
	if c.sub.subscribed() && c.protocol() == resp.RESP2 && !run.subscribed {
		f.reply(c, resp.Err(resp.ErrSubscribedContext(run.meta.Name)))
		return
	}
	c.touch(run.meta.Name, time.Now())
	if run.push != nil {
		defer f.s.onPanic(run.meta.Name, func(e resp.Value) { f.reply(c, e) })
		run.push(f, c, args)
		return
	}
	f.reply(c, f.runCommand(c, run, args))
}

// runCommand runs a handler; a panic (a bug) answers its internal error.
func (f *Sentinel) runCommand(c *client, run *sentinelCommand, args [][]byte) (v resp.Value) {
	defer f.s.onPanic(run.meta.Name, func(e resp.Value) { v = e })
	return run.run(f, c, args)
}

// aclDenied is the facade's ACL gate: the cluster's users, as on the data
// port. A command the data port has too follows its rules (aclAs); the
// others need only an authenticated connection.
func (f *Sentinel) aclDenied(c *client, run *sentinelCommand, args [][]byte) (resp.Value, bool) {
	if !f.s.aclRead(c) {
		return resp.Err(acl.ErrNoAuth), true
	}
	if c.acl.open {
		return resp.Value{}, false
	}
	if !c.acl.authed && c.acl.state.Users.AuthRequired() && !run.meta.Is(resp.FlagNoAuth) {
		return resp.Err(acl.ErrNoAuth), true
	}
	if run.aclAs == nil {
		return resp.Value{}, false
	}
	d := c.acl.user.Check(run.aclAs.meta, args)
	if d == nil {
		return resp.Value{}, false
	}
	f.s.aclNote(c, d, acl.ContextToplevel, d.Object, c.acl.name)
	return resp.Err(d.Err(c.acl.name)), true
}

// cmdSentinelRole is ROLE on the facade: "sentinel" and the master names.
func cmdSentinelRole(f *Sentinel, _ *client, _ [][]byte) resp.Value {
	names := make([]resp.Value, len(f.names))
	for i, n := range f.names {
		names[i] = resp.BulkString(n)
	}
	return resp.Array(resp.BulkString("sentinel"), resp.Array(names...))
}

// sentinelHelloChannel is the channel Sentinels announce themselves on.
const sentinelHelloChannel = "__sentinel__:hello"

var (
	errSentinelPublish = resp.NewError("ERR Only HELLO messages are accepted by Sentinel instances.")
	errSentinelHello   = resp.NewError("ERR slotraft's Sentinel facade does not take part in Sentinel's hello protocol: its peers are the cluster's nodes (docs/sentinel.md)")
)

// cmdSentinelPublish is Sentinel's PUBLISH, which takes hello messages
// only: the facade learns its peers from gossip, so it refuses those too.
func cmdSentinelPublish(_ *Sentinel, _ *client, args [][]byte) resp.Value {
	if string(args[1]) != sentinelHelloChannel {
		return resp.Err(errSentinelPublish)
	}
	return resp.Err(errSentinelHello)
}

// sentinelSubscribeFamily runs (P)(UN)SUBSCRIBE over the facade's events.
func sentinelSubscribeFamily(name string) func(f *Sentinel, c *client, args [][]byte) {
	k := kindChannel
	if strings.HasPrefix(name, "p") {
		k = kindPattern
	}
	if strings.Contains(name, "unsubscribe") {
		return func(f *Sentinel, c *client, args [][]byte) {
			if c.sub != nil {
				f.reg.unsubscribe(c.sub, k, args[1:])
				return
			}
			names := args[1:]
			if len(names) == 0 {
				names = [][]byte{nil}
			}
			for _, n := range names {
				f.reply(c, confirmation(kindWords[k].unsub, n, 0))
			}
		}
	}
	return func(f *Sentinel, c *client, args [][]byte) {
		f.reg.subscribe(f.s.subscriberOf(c), k, args[1:])
	}
}
