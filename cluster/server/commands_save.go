package server

import (
	"errors"
	"strings"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// Persistence commands: SAVE, BGSAVE and LASTSAVE snapshot this node's
// groups (cluster/save.go). Unlike Redis's SAVE, which blocks the whole
// server, SAVE here blocks only the connection that sent it.

var errSaveInProgress = resp.NewError("ERR Background save already in progress")

func saveCommands() []*command {
	admin := []string{"admin", "slow", "dangerous"}
	return []*command{
		{meta: &resp.Command{Name: "save", Arity: 1, Flags: resp.FlagAdmin | resp.FlagNoScript | resp.FlagNoMulti,
			ACL: admin, Group: "server", Since: "1.0.0", Summary: "Synchronously saves the database(s) to disk.",
			Complexity: "O(N) where N is the total number of keys in all databases"}, node: cmdSave},
		{meta: &resp.Command{Name: "bgsave", Arity: -1, Flags: resp.FlagAdmin | resp.FlagNoScript,
			ACL: admin, Group: "server", Since: "1.0.0", Summary: "Asynchronously saves the database(s) to disk.",
			Complexity: "O(1)"}, node: cmdBgsave},
		{meta: &resp.Command{Name: "lastsave", Arity: 1, Flags: resp.FlagLoading | resp.FlagStale | resp.FlagFast,
			ACL: []string{"admin", "fast", "dangerous"}, Group: "server", Since: "1.0.0",
			Summary: "Returns the Unix timestamp of the last successful save to disk.", Complexity: "O(1)",
			Tips: []string{"nondeterministic_output"}}, node: cmdLastsave},
		{meta: &resp.Command{Name: "bgrewriteaof", Arity: 1, Flags: resp.FlagAdmin | resp.FlagNoScript,
			ACL: admin, Group: "server", Since: "1.0.0", Summary: "Asynchronously rewrites the append-only file to disk.",
			Complexity: "O(1)"}, node: cmdBgrewriteaof},
	}
}

// cmdBgrewriteaof: the Raft log is slotraft's append-only file, and a
// snapshot of every group hosted here is its rewrite (Raft compacts the
// log behind a snapshot), so BGREWRITEAOF is BGSAVE SCHEDULE with Redis's
// AOF texts: scheduled behind a save in progress, as Redis schedules a
// rewrite behind a child.
func cmdBgrewriteaof(s *Server, _ *client, _ [][]byte) resp.Value {
	switch scheduled, err := s.n.BackgroundSave(true); {
	case err != nil:
		s.log.Warn("BGREWRITEAOF: snapshot not started", "err", err)
		return resp.Err(resp.NewError("ERR Can't execute an AOF background rewriting. Please check the server logs for more information."))
	case scheduled:
		return resp.Status("Background append only file rewriting scheduled")
	}
	return resp.Status("Background append only file rewriting started")
}

func cmdSave(s *Server, _ *client, _ [][]byte) resp.Value {
	switch err := s.n.Save(); {
	case errors.Is(err, cluster.ErrSaveInProgress):
		return resp.Err(errSaveInProgress)
	case err != nil:
		return resp.Err(err)
	}
	return resp.OK()
}

// cmdBgsave is BGSAVE [SCHEDULE].
func cmdBgsave(s *Server, _ *client, args [][]byte) resp.Value {
	schedule := false
	if len(args) > 1 {
		if len(args) != 2 || !strings.EqualFold(string(args[1]), "schedule") {
			return resp.Err(resp.ErrSyntax)
		}
		schedule = true
	}
	switch scheduled, err := s.n.BackgroundSave(schedule); {
	case errors.Is(err, cluster.ErrSaveInProgress):
		return resp.Err(errSaveInProgress)
	case err != nil:
		return resp.Err(err)
	case scheduled:
		return resp.Status("Background saving scheduled")
	}
	return resp.Status("Background saving started")
}

func cmdLastsave(s *Server, _ *client, _ [][]byte) resp.Value {
	return resp.Int(s.n.SaveStatus().LastSave.Unix())
}
