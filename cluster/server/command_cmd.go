package server

import (
	"strings"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// COMMAND and its subcommands, over the full table (data + node commands).

func commandCommand() *command {
	acl := []string{"slow", "connection"}
	sub := func(name string, arity int, since, summary, complexity string, run nodeHandler) *command {
		m := subMeta("command", name, arity, resp.FlagLoading|resp.FlagStale, acl, since, summary, complexity)
		return &command{meta: m, node: run}
	}
	meta := &resp.Command{Name: "command", Arity: -1, Flags: resp.FlagLoading | resp.FlagStale, ACL: acl, Group: "server",
		Since: "2.8.13", Summary: "Returns detailed information about all commands.",
		Complexity: "O(N) where N is the total number of Redis commands", Tips: []string{"nondeterministic_output_order"}}
	c := container(meta,
		sub("count", 2, "2.8.13", "Returns a count of commands.", "O(1)", cmdCommandCount),
		sub("docs", -2, "7.0.0", "Returns documentary information about one, multiple or all commands.", "O(N) where N is the number of commands to look up", cmdCommandDocs),
		sub("getkeys", -3, "2.8.13", "Extracts the key names from an arbitrary command.", "O(N) where N is the number of arguments to the command", cmdCommandGetKeys(false)),
		sub("getkeysandflags", -3, "7.0.0", "Extracts the key names and access flags for an arbitrary command.", "O(N) where N is the number of arguments to the command", cmdCommandGetKeys(true)),
		sub("help", 2, "5.0.0", "Returns helpful text about the different subcommands.", "O(1)", cmdCommandHelp),
		sub("info", -2, "2.8.13", "Returns information about one, multiple or all commands.", "O(N) where N is the number of commands to look up", cmdCommandInfo),
		sub("list", -2, "7.0.0", "Returns a list of command names.", "O(N) where N is the total number of Redis commands", cmdCommandList),
	)
	// COMMAND alone lists every command.
	c.node = func(s *Server, _ *client, _ [][]byte) resp.Value { return commandInfos(s.table.meta.All()) }
	return c
}

func commandInfos(cmds []*resp.Command) resp.Value {
	out := make([]resp.Value, len(cmds))
	for i, c := range cmds {
		out[i] = c.Info()
	}
	return resp.Array(out...)
}

func cmdCommandCount(s *Server, _ *client, _ [][]byte) resp.Value {
	return resp.Int(int64(s.table.meta.Len()))
}

// lookupMeta finds a command or a "container|sub" subcommand by name.
func (s *Server) lookupMeta(name []byte) *resp.Command { return lookupMetaIn(s.table.meta, name) }

// lookupMetaIn finds a command or a "container|sub" subcommand of t.
func lookupMetaIn(t *resp.Table, name []byte) *resp.Command {
	top, sub, isSub := strings.Cut(strings.ToLower(string(name)), "|")
	c := t.Lookup([]byte(top))
	if c == nil || !isSub {
		return c
	}
	for _, sc := range c.Subcommands {
		if sc.Name == top+"|"+sub {
			return sc
		}
	}
	return nil
}

func cmdCommandInfo(s *Server, _ *client, args [][]byte) resp.Value {
	return commandInfoOf(s.table.meta, args)
}

// commandInfoOf is COMMAND INFO [name ...] over table t.
func commandInfoOf(t *resp.Table, args [][]byte) resp.Value {
	if len(args) == 2 {
		return commandInfos(t.All())
	}
	out := make([]resp.Value, 0, len(args)-2)
	for _, name := range args[2:] {
		if c := lookupMetaIn(t, name); c != nil {
			out = append(out, c.Info())
		} else {
			out = append(out, resp.NullArray())
		}
	}
	return resp.Array(out...)
}

func cmdCommandDocs(s *Server, _ *client, args [][]byte) resp.Value {
	var cmds []*resp.Command
	if len(args) == 2 {
		cmds = s.table.meta.All()
	} else {
		for _, name := range args[2:] {
			if c := s.lookupMeta(name); c != nil {
				cmds = append(cmds, c)
			}
		}
	}
	out := make([]resp.Value, 0, 2*len(cmds))
	for _, c := range cmds {
		out = append(out, resp.BulkString(c.Name), c.Docs())
	}
	return resp.Map(out...)
}

// cmdCommandGetKeys is COMMAND GETKEYS and (withFlags) GETKEYSANDFLAGS:
// Redis 7.2's keys of a full command, each with its key-spec flags
// (resp.Command.GetKeys), and Redis's errors. A container names its
// subcommand: an unknown one is an invalid command, the container alone
// has no key arguments.
func cmdCommandGetKeys(withFlags bool) nodeHandler {
	return func(s *Server, _ *client, args [][]byte) resp.Value {
		target := args[2:]
		cmd := s.table.lookup(target[0])
		if cmd == nil {
			return resp.Err(resp.ErrGetKeysCommand)
		}
		meta := cmd.meta
		if len(meta.Subcommands) > 0 && len(target) > 1 {
			if meta = s.lookupMeta([]byte(meta.Name + "|" + string(target[1]))); meta == nil {
				return resp.Err(resp.ErrGetKeysCommand)
			}
		}
		keys, err := meta.GetKeys(target)
		if err != nil {
			return resp.Err(err)
		}
		out := make([]resp.Value, len(keys))
		for i, k := range keys {
			out[i] = resp.Bulk(target[k.Pos])
			if withFlags {
				flags := make([]resp.Value, len(k.Flags))
				for j, f := range k.Flags {
					flags[j] = resp.Status(f)
				}
				out[i] = resp.Array(out[i], resp.Set(flags...))
			}
		}
		return resp.Array(out...)
	}
}

// cmdCommandList is COMMAND LIST [FILTERBY MODULE name | ACLCAT cat | PATTERN pattern].
func cmdCommandList(s *Server, _ *client, args [][]byte) resp.Value {
	var keep func(c *resp.Command) bool
	switch {
	case len(args) == 2:
		keep = func(*resp.Command) bool { return true }
	case len(args) == 5 && resp.EqualFold(args[2], "filterby"):
		arg := string(args[4])
		switch strings.ToLower(string(args[3])) {
		case "module":
			keep = func(*resp.Command) bool { return false }
		case "aclcat":
			keep = func(c *resp.Command) bool { return hasACL(c, arg) }
		case "pattern":
			keep = func(c *resp.Command) bool { return fsm.Match([]byte(strings.ToLower(arg)), []byte(c.Name)) }
		default:
			return resp.Err(resp.ErrSyntax)
		}
	default:
		return resp.Err(resp.ErrSyntax)
	}
	var out [][]byte
	for _, c := range s.table.meta.All() {
		if keep(c) {
			out = append(out, []byte(c.Name))
		}
		for _, sc := range c.Subcommands {
			if keep(sc) {
				out = append(out, []byte(sc.Name))
			}
		}
	}
	return resp.BulkArray(out)
}

func hasACL(c *resp.Command, cat string) bool {
	cat = "@" + strings.TrimPrefix(strings.ToLower(cat), "@")
	for _, a := range c.Categories() {
		if a == cat {
			return true
		}
	}
	return false
}

func cmdCommandHelp(_ *Server, _ *client, _ [][]byte) resp.Value {
	return helpReply("COMMAND", []string{
		"(no subcommand)",
		"    Return details about all Redis commands.",
		"COUNT",
		"    Return the total number of commands in this Redis server.",
		"LIST",
		"    Return a list of all commands in this Redis server.",
		"INFO [<command-name> ...]",
		"    Return details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"DOCS [<command-name> ...]",
		"    Return documentation details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"GETKEYS <full-command>",
		"    Return the keys from a full Redis command.",
		"GETKEYSANDFLAGS <full-command>",
		"    Return the keys and the access flags from a full Redis command.",
	})
}

// helpReply renders a HELP reply as Redis does: a header line, the lines,
// and the standard HELP line, all as simple strings.
func helpReply(container string, lines []string) resp.Value {
	out := []resp.Value{resp.Status(container + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")}
	for _, l := range lines {
		out = append(out, resp.Status(l))
	}
	out = append(out, resp.Status("HELP"), resp.Status("    Print this help."))
	return resp.Array(out...)
}
