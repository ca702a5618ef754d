package server

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/resp"
)

// ACL and its subcommands, as Redis 7.2 (src/commands/acl-*.json). The
// users are the meta group's (SETUSER, DELUSER and LOAD propose a change
// and answer once this node applied it); ACL LOG and the aclfile are this
// node's, as in Redis.

func aclCommand() *command {
	const base = resp.FlagNoScript | resp.FlagLoading | resp.FlagStale
	admin := []string{"admin", "slow", "dangerous"}
	slow := []string{"slow"}
	sub := func(name string, arity int, flags resp.Flag, acl []string, summary, complexity string, run nodeHandler) *command {
		return &command{meta: subMeta("acl", name, arity, flags, acl, "6.0.0", summary, complexity), node: run}
	}
	dryrun := sub("dryrun", -4, base|resp.FlagAdmin, admin, "Simulates the execution of a command by a user, without executing the command.", "O(1).", cmdACLDryRun)
	dryrun.meta.Since = "7.0.0"
	subs := []*command{
		sub("cat", -2, base, slow, "Lists the ACL categories, or the commands inside a category.", "O(1) since the categories and commands are a fixed set.", cmdACLCat),
		sub("deluser", -3, base|resp.FlagAdmin, admin, "Deletes ACL users, and terminates their connections.", "O(1) amortized time considering the typical user.", cmdACLDelUser),
		dryrun,
		sub("genpass", -2, base, slow, "Generates a pseudorandom, secure password that can be used to identify ACL users.", "O(1)", cmdACLGenPass),
		sub("getuser", 3, base|resp.FlagAdmin, admin, "Lists the ACL rules of a user.", "O(N). Where N is the number of password, command and pattern rules that the user has.", cmdACLGetUser),
		sub("help", 2, resp.FlagLoading|resp.FlagStale, slow, "Returns helpful text about the different subcommands.", "O(1)", cmdACLHelp),
		sub("list", 2, base|resp.FlagAdmin, admin, "Dumps the effective rules in ACL file format.", "O(N). Where N is the number of configured users.", cmdACLList),
		sub("load", 2, base|resp.FlagAdmin, admin, "Reloads the rules from the configured ACL file.", "O(N). Where N is the number of configured users.", cmdACLLoad),
		sub("log", -2, base|resp.FlagAdmin, admin, "Lists recent security events generated due to ACL rules.", "O(N) with N being the number of entries shown.", cmdACLLog),
		sub("save", 2, base|resp.FlagAdmin, admin, "Saves the effective ACL rules in the configured ACL file.", "O(N). Where N is the number of configured users.", cmdACLSave),
		sub("setuser", -3, base|resp.FlagAdmin, admin, "Creates and modifies an ACL user and its rules.", "O(N). Where N is the number of rules provided.", cmdACLSetUser),
		sub("users", 2, base|resp.FlagAdmin, admin, "Lists all ACL users.", "O(N). Where N is the number of configured users.", cmdACLUsers),
		sub("whoami", 2, base, slow, "Returns the authenticated username of the current connection.", "O(1)", cmdACLWhoAmI),
	}
	meta := &resp.Command{Name: "acl", Arity: -2, ACL: slow, Group: "server", Since: "6.0.0",
		Summary: "A container for Access List Control commands.", Complexity: "Depends on subcommand."}
	return container(meta, subs...)
}

// aclProposeTimeout bounds an ACL change's way through the meta group.
const aclProposeTimeout = 10 * time.Second

// proposeACL proposes an ACL change: nil once this node applied it, or
// the error (the change's own, as Redis words it, or the meta group's).
func (s *Server) proposeACL(cmd meta.Command) error {
	ctx, cancel := context.WithTimeout(s.ctx, aclProposeTimeout)
	defer cancel()
	return s.n.ProposeACL(ctx, cmd)
}

// proposeACLReply is proposeACL's reply: ok, or the error's.
func (s *Server) proposeACLReply(cmd meta.Command, ok resp.Value) resp.Value {
	if err := s.proposeACL(cmd); err != nil {
		return resp.Err(err)
	}
	return ok
}

func ruleStrings(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

// cmdACLSetUser checks the rules on a copy of this node's set (Redis's
// error, nothing proposed), then proposes them; the meta group applies
// them all or none on every node.
func cmdACLSetUser(s *Server, _ *client, args [][]byte) resp.Value {
	trial := s.n.ACL().Users.Clone()
	trial.SetPubsubDefault(s.acl.pubsubAll.Load())
	if err := trial.SetUser(string(args[2]), ruleStrings(args[3:])...); err != nil {
		return resp.Err(err)
	}
	return s.proposeACLReply(meta.NewACLSetUser(args[2], args[3:], s.acl.pubsubAll.Load()), resp.OK())
}

// cmdACLDelUser answers how many of the names existed here when it was
// proposed; their connections are closed on every node (watchACL).
func cmdACLDelUser(s *Server, _ *client, args [][]byte) resp.Value {
	trial := s.n.ACL().Users.Clone()
	n, err := trial.DelUsers(ruleStrings(args[2:])...)
	if err != nil {
		return resp.Err(err)
	}
	if n == 0 {
		return resp.Int(0) // nothing to change
	}
	return s.proposeACLReply(meta.NewACLDelUsers(args[2:]), resp.Int(int64(n)))
}

func cmdACLGetUser(s *Server, _ *client, args [][]byte) resp.Value {
	u := s.n.ACL().Users.Get(string(args[2]))
	if u == nil {
		return resp.Null()
	}
	return u.GetUserReply()
}

func cmdACLList(s *Server, _ *client, _ [][]byte) resp.Value {
	return bulkStrings(s.n.ACL().Users.List())
}

func cmdACLUsers(s *Server, _ *client, _ [][]byte) resp.Value {
	return bulkStrings(s.n.ACL().Users.Names())
}

func bulkStrings(ss []string) resp.Value { return stringsArray(ss, resp.BulkString) }

func cmdACLWhoAmI(_ *Server, c *client, _ [][]byte) resp.Value {
	return resp.BulkString(c.acl.name)
}

func cmdACLCat(s *Server, _ *client, args [][]byte) resp.Value {
	switch len(args) {
	case 2:
		return bulkStrings(acl.CategoryNames())
	case 3:
		names, err := s.aclTable.Category(string(args[2]))
		if err != nil {
			return resp.Err(err)
		}
		return bulkStrings(names)
	}
	return resp.Err(resp.ErrSubcommandSyntax(args[0], args[1]))
}

func cmdACLGenPass(_ *Server, _ *client, args [][]byte) resp.Value {
	bits := 256
	switch len(args) {
	case 2:
	case 3:
		b, err := acl.ParseGenPassBits(args[2])
		if err != nil {
			return resp.Err(err)
		}
		bits = b
	default:
		return resp.Err(resp.ErrSubcommandSyntax(args[0], args[1]))
	}
	pw, err := acl.GenPass(bits, rand.Reader)
	if err != nil {
		return resp.Err(err)
	}
	return resp.BulkString(pw)
}

// cmdACLLog is ACL LOG [count | RESET] of this node.
func cmdACLLog(s *Server, _ *client, args [][]byte) resp.Value {
	count := 10
	switch {
	case len(args) > 3:
		return resp.Err(resp.ErrSubcommandSyntax(args[0], args[1]))
	case len(args) == 3 && resp.EqualFold(args[2], "reset"):
		s.acl.mu.Lock()
		s.acl.log.Reset()
		s.acl.mu.Unlock()
		return resp.OK()
	case len(args) == 3:
		n, err := resp.ParseInt(args[2])
		if err != nil {
			return resp.Err(resp.ErrNotInteger)
		}
		count = int(max(min(n, 1<<30), -1))
	}
	s.acl.mu.Lock()
	defer s.acl.mu.Unlock()
	return s.acl.log.Reply(count, time.Now().UnixMilli())
}

// cmdACLDryRun is ACL DRYRUN username command [arg …].
func cmdACLDryRun(s *Server, _ *client, args [][]byte) resp.Value {
	u := s.n.ACL().Users.Get(string(args[2]))
	if u == nil {
		return resp.Err(acl.ErrDryRunNoUser(args[2]))
	}
	cmd := s.table.lookup(args[3])
	if cmd == nil {
		return resp.Err(acl.ErrDryRunNoCommand(args[3]))
	}
	run := args[3:]
	m := cmd.meta
	if len(m.Subcommands) > 0 && len(run) > 1 {
		i := slices.IndexFunc(m.Subcommands, func(sc *resp.Command) bool {
			_, name, _ := strings.Cut(sc.Name, "|")
			return resp.EqualFold(run[1], name)
		})
		if i < 0 {
			return resp.Err(acl.ErrDryRunNoCommand(args[3])) // as lookupCommand: the container's name
		}
		m = m.Subcommands[i]
	}
	if !m.ArityOK(len(run)) {
		return resp.Err(resp.ErrWrongArgs(m.Name))
	}
	return u.DryRun(cmd.meta, run)
}

func cmdACLHelp(_ *Server, _ *client, _ [][]byte) resp.Value {
	return helpReply("ACL", acl.HelpLines)
}

// cmdACLLoad reads this node's aclfile and proposes its users as the
// whole set (all or nothing, Redis's errors).
func cmdACLLoad(s *Server, _ *client, _ [][]byte) resp.Value {
	path := s.aclFile()
	if path == "" {
		return resp.Err(acl.ErrNoACLFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return resp.Err(resp.Errorf("ERR Error loading ACLs, opening file '%s': %s", path, strerror(err)))
	}
	trial := s.n.ACL().Users.Clone()
	trial.SetPubsubDefault(s.acl.pubsubAll.Load())
	if err := trial.Load(data, path); err != nil {
		return resp.Err(err)
	}
	return s.proposeACLReply(meta.ACLLoad{Data: data, File: path, AllChannels: s.acl.pubsubAll.Load()}, resp.OK())
}

// cmdACLSave writes the replicated set to this node's aclfile, atomically.
func cmdACLSave(s *Server, _ *client, _ [][]byte) resp.Value {
	path := s.aclFile()
	if path == "" {
		return resp.Err(acl.ErrNoACLFile)
	}
	if err := cluster.WriteFileAtomic(path, s.n.ACL().Users.Save(), 0o600); err != nil {
		s.log.Warn("ACL SAVE failed", "path", path, "err", err)
		return resp.Err(acl.ErrSave)
	}
	return resp.OK()
}

// errACLNotDefault: the aclfile was not loaded at start, as the users
// had changed already.
var errACLNotDefault = meta.ErrACLNotDefault

// loadACLFileAtStart proposes this node's aclfile while the replicated
// set was never changed (meta.ACLLoad.IfDefault): a fresh cluster started
// with the same aclfile on every node gets its users once; a later start
// never undoes ACL changes made since. It retries until the meta group
// answers or the server closes.
func (s *Server) loadACLFileAtStart() {
	path := s.aclFile()
	if path == "" || s.n.ACL().Changes > 0 {
		return
	}
	data, err := os.ReadFile(path)
	if err == nil {
		err = s.n.ACL().Users.Clone().Load(data, path)
	}
	if err != nil {
		s.log.Error("aclfile: not loaded", "path", path, "err", err)
		return
	}
	for s.ctx.Err() == nil && s.n.ACL().Changes == 0 {
		ctx, cancel := context.WithTimeout(s.ctx, aclProposeTimeout)
		err = s.n.ProposeACL(ctx, meta.ACLLoad{Data: data, File: path, AllChannels: s.acl.pubsubAll.Load(), IfDefault: true})
		cancel()
		switch {
		case err == nil:
			s.log.Info("aclfile: loaded into the cluster's users", "path", path)
			return
		case errors.Is(err, errACLNotDefault):
			return
		}
		s.log.Debug("aclfile: not applied yet, retrying", "err", err)
		s.aclRetryPause()
	}
}
