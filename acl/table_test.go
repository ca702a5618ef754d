package acl

import "github.com/slotraft/slotraft/resp"

// testCommands is a small table shaped like Redis's: flags and
// categories as Redis 7.2 declares them.
func testCommands() *Commands {
	return NewCommands(testTable())
}

func testTable() []*resp.Command {
	cmd := func(name string, arity int, flags resp.Flag, first, last int, acl ...string) *resp.Command {
		return &resp.Command{Name: name, Arity: arity, Flags: flags, FirstKey: first, LastKey: last, Step: 1, ACL: acl}
	}
	config := cmd("config", -2, 0, 0, 0)
	config.Subcommands = []*resp.Command{
		cmd("config|get", -3, resp.FlagAdmin|resp.FlagNoScript|resp.FlagLoading|resp.FlagStale, 0, 0),
		cmd("config|set", -4, resp.FlagAdmin|resp.FlagNoScript|resp.FlagLoading|resp.FlagStale, 0, 0),
	}
	return []*resp.Command{
		cmd("get", 2, resp.FlagReadOnly|resp.FlagFast, 1, 1, "string"),
		cmd("set", -3, resp.FlagWrite|resp.FlagDenyOOM, 1, 1, "string"),
		cmd("del", -2, resp.FlagWrite, 1, -1, "keyspace"),
		cmd("copy", -3, resp.FlagWrite|resp.FlagDenyOOM, 1, 2, "keyspace"),
		cmd("lpush", -3, resp.FlagWrite|resp.FlagDenyOOM|resp.FlagFast, 1, 1, "list"),
		cmd("select", 2, resp.FlagLoading|resp.FlagStale|resp.FlagFast, 0, 0, "connection"),
		cmd("auth", -2, resp.FlagNoScript|resp.FlagLoading|resp.FlagStale|resp.FlagFast|resp.FlagNoAuth, 0, 0, "connection"),
		cmd("debug", -2, resp.FlagAdmin|resp.FlagNoScript|resp.FlagLoading|resp.FlagStale, 0, 0),
		cmd("publish", 3, resp.FlagPubSub|resp.FlagLoading|resp.FlagStale|resp.FlagFast, 0, 0),
		cmd("subscribe", -2, resp.FlagPubSub|resp.FlagNoScript|resp.FlagLoading|resp.FlagStale, 0, 0),
		cmd("psubscribe", -2, resp.FlagPubSub|resp.FlagNoScript|resp.FlagLoading|resp.FlagStale, 0, 0),
		config,
	}
}
