package server

import "github.com/slotraft/slotraft/resp"

// MODULE: slotraft loads no Redis modules (they are C libraries for
// redis-server's API). LIST answers the empty list; LOAD, LOADEX and
// UNLOAD are protected as in Redis (enable-module-command, immutable,
// default no) and, where allowed, fail as a module that does not load.

var errModuleNotAllowed = resp.NewError("ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.")

func moduleCommand() *command {
	admin := []string{"admin", "slow", "dangerous"}
	const protected = resp.FlagAdmin | resp.FlagNoScript
	sub := func(name string, arity int, flags resp.Flag, acl []string, since, summary, complexity string, run nodeHandler) *command {
		return &command{meta: subMeta("module", name, arity, flags, acl, since, summary, complexity), node: run}
	}
	list := sub("list", 2, resp.FlagAdmin|resp.FlagNoScript, admin, "4.0.0", "Returns all loaded modules.",
		"O(N) where N is the number of loaded modules.", func(*Server, *client, [][]byte) resp.Value { return resp.Array() })
	list.meta.Tips = []string{"nondeterministic_output_order"}
	meta := &resp.Command{Name: "module", Arity: -2, Group: "server", Since: "4.0.0",
		Summary: "A container for module commands.", Complexity: "Depends on subcommand."}
	return container(meta,
		sub("help", 2, resp.FlagLoading|resp.FlagStale, []string{"slow"}, "5.0.0", "Returns helpful text about the different subcommands.", "O(1)", cmdModuleHelp),
		list,
		sub("load", -3, protected, admin, "4.0.0", "Loads a module.", "O(1)", cmdModuleLoad),
		sub("loadex", -3, protected, admin, "7.0.0", "Loads a module using extended parameters.", "O(1)", cmdModuleLoad),
		sub("unload", 3, protected, admin, "4.0.0", "Unloads a module.", "O(1)", cmdModuleUnload),
	)
}

func cmdModuleHelp(*Server, *client, [][]byte) resp.Value {
	return helpReply("MODULE", []string{
		"LIST",
		"    Return a list of loaded modules.",
		"LOAD <path> [<arg> ...]",
		"    Load a module library from <path>, passing to it any optional arguments.",
		"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
		"    Load a module library from <path>, while passing it module configurations and optional arguments.",
		"UNLOAD <name>",
		"    Unload a module.",
	})
}

// cmdModuleLoad is LOAD and LOADEX: refused unless enable-module-command
// allows c; then no module can load.
func cmdModuleLoad(s *Server, c *client, args [][]byte) resp.Value {
	if !s.protectedAllowed(c, "enable-module-command") {
		return resp.Err(errModuleNotAllowed)
	}
	s.log.Warn("MODULE LOAD: slotraft cannot load Redis modules", "path", string(args[2]))
	return resp.Err(resp.NewError("ERR Error loading the extension. Please check the server logs."))
}

func cmdModuleUnload(s *Server, c *client, _ [][]byte) resp.Value {
	if !s.protectedAllowed(c, "enable-module-command") {
		return resp.Err(errModuleNotAllowed)
	}
	return resp.Err(resp.NewError("ERR Error unloading module: no such module with that name"))
}
