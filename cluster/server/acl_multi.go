package server

import (
	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/resp"
)

// ACL checks of MULTI, as Redis 7.2: a command is checked when it is
// queued (NOPERM flags the transaction: EXECABORT) and again at EXEC, as
// the rules may have changed in between; a command refused at EXEC gets
// its error in the EXEC array and does not run, the others do.

// aclQueued is the check of a command being queued: its NOPERM (logged
// with context multi), or nil.
func (s *Server) aclQueued(c *client, cmd *command, args [][]byte) *resp.Value {
	v, d := s.aclDenied(c, cmd, args)
	if d != nil {
		s.aclNote(c, d, acl.ContextMulti, d.Object, c.acl.name)
	}
	return v
}

// execDeniedReason is multi.c's reason text for a command refused at EXEC.
func execDeniedReason(r acl.Reason) string {
	switch r {
	case acl.ReasonCommand:
		return "no permission to execute the command or subcommand"
	case acl.ReasonKey:
		return "no permission to touch the specified keys"
	case acl.ReasonChannel:
		return "no permission to access one of the channels used as arguments"
	}
	return "no permission"
}

// aclExecDenied checks the queued commands again at EXEC: denied[i] when
// queued[i] may not run, its error put in replies[i].
func (s *Server) aclExecDenied(c *client, queued []queuedCmd, replies []resp.Value) []bool {
	denied := make([]bool, len(queued))
	if !s.aclRead(c) || c.acl.open {
		return denied
	}
	for i, q := range queued {
		d := c.acl.user.Check(q.cmd.meta, q.args)
		if d == nil {
			continue
		}
		denied[i] = true
		s.aclNote(c, d, acl.ContextMulti, d.Object, c.acl.name)
		replies[i] = resp.Err(resp.Errorf("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: %s", execDeniedReason(d.Reason)))
	}
	return denied
}
