package meta

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/slotraft/slotraft/acl"
)

// ACLState is the replicated user set as the front end reads it. A value
// handed out is never modified: each change publishes a new one.
type ACLState struct {
	// Users is nil only until the FSM knows the command table
	// (SetACLCommands): the front end sets it before it serves.
	Users *acl.Users
	// Changes counts the ACL entries applied since the cluster began: a
	// front end compares states by pointer, a load at start by Changes.
	Changes uint64
	// RequirePass is the requirepass setting last proposed (CONFIG GET);
	// RequirePassSet says one was ever proposed.
	RequirePass    []byte
	RequirePassSet bool
	born           map[string]uint64
	raw            []byte // Users.Marshal(): what a snapshot holds
}

// Born is the index of the entry that made user name (0 for the default
// user and the users restored from before births were recorded): a
// connection authenticated as name of another birth lost its user.
func (s *ACLState) Born(name string) uint64 { return s.born[name] }

// aclSnapshot is the user set in a snapshot, beside the map's fields (an
// older binary ignores it; a snapshot without it is the default user).
type aclSnapshot struct {
	Users       json.RawMessage `json:"users,omitempty"`
	Born        []aclBorn       `json:"born,omitempty"`
	RequirePass []byte          `json:"requirepass,omitempty"`
	PassSet     bool            `json:"requirepass_set,omitempty"`
	Changes     uint64          `json:"changes,omitempty"`
}

// aclBorn is one user's birth; a list, as names are bytes and JSON object
// keys are text.
type aclBorn struct {
	Name  []byte `json:"name"`
	Index uint64 `json:"index"`
}

// snapshotBody is a snapshot's JSON: the map's fields and "acl".
type snapshotBody struct {
	*Map
	ACL *aclSnapshot `json:"acl,omitempty"`
}

// aclFSM is the FSM's user set (FSM.ACL).
type aclFSM struct {
	mu       sync.Mutex // orders the writers: Apply, Restore, SetACLCommands
	cmds     *acl.Commands
	tableSet chan struct{} // closed by SetACLCommands
	changed  chan struct{} // closed and replaced on each change
}

func (s *ACLState) snapshot() *aclSnapshot {
	if s.Changes == 0 && len(s.raw) == 0 {
		return nil
	}
	out := &aclSnapshot{Users: s.raw, RequirePass: s.RequirePass, PassSet: s.RequirePassSet, Changes: s.Changes}
	if s.Users != nil {
		for _, n := range s.Users.Names() { // sorted: equal sets, equal bytes
			out.Born = append(out.Born, aclBorn{Name: []byte(n), Index: s.born[n]})
		}
	}
	return out
}

// ACL is the current user set, never nil.
func (f *FSM) ACL() *ACLState { return f.aclCur.Load() }

// ACLChanged is closed at the next change of the user set (take it before
// calling ACL, as with Changed).
func (f *FSM) ACLChanged() <-chan struct{} {
	f.acl.mu.Lock()
	defer f.acl.mu.Unlock()
	return f.acl.changed
}

// SetACLCommands gives the FSM the command table the rules apply to: the
// front end's, the same on every node of a release. Until it is called,
// an ACL entry waits in Apply (the front end calls it right after the
// node opens); the set restored from a snapshot is parsed now.
func (f *FSM) SetACLCommands(cmds *acl.Commands) {
	f.acl.mu.Lock()
	defer f.acl.mu.Unlock()
	if f.acl.cmds != nil {
		return
	}
	f.acl.cmds = cmds
	cur := f.ACL()
	st := f.parsed(cur.raw, cur.born, cur.RequirePass, cur.Changes)
	st.RequirePassSet = cur.RequirePassSet
	f.publishLocked(st)
	close(f.acl.tableSet)
}

// parsed is a state of raw users (the default user when raw is empty).
// Users that no longer parse (a rule naming a command this binary lacks)
// fail closed: the default user is off, so no client gets in unchecked.
func (f *FSM) parsed(raw []byte, born map[string]uint64, pw []byte, changes uint64) *ACLState {
	st := &ACLState{RequirePass: pw, Changes: changes, born: born, raw: raw}
	if len(raw) == 0 {
		st.Users = acl.NewUsers(f.acl.cmds)
		return st
	}
	u, err := acl.Unmarshal(f.acl.cmds, raw)
	if err != nil {
		f.logger.Error("the replicated ACL users do not parse: every client is refused", "err", err)
		u = acl.NewUsers(f.acl.cmds)
		_ = u.SetUser(acl.DefaultUser, "off", "resetpass") // cannot fail
	}
	st.Users = u
	return st
}

func (f *FSM) publishLocked(st *ACLState) {
	f.aclCur.Store(st)
	close(f.acl.changed)
	f.acl.changed = make(chan struct{})
}

// applyACL applies an ACL entry to a copy of the set: on error the set
// stays and the proposer gets the error.
func (f *FSM) applyACL(index uint64, c aclCommand) any {
	f.awaitTable(index)
	f.acl.mu.Lock()
	defer f.acl.mu.Unlock()
	cur := f.ACL()
	if l, ok := c.(ACLLoad); ok && l.IfDefault && cur.Changes > 0 {
		return ErrACLNotDefault
	}
	if su, ok := c.(ACLSetUser); ok && su.IfUnset && cur.RequirePassSet {
		return ErrACLNotDefault
	}
	next := cur.Users.Clone()
	if err := c.applyACL(next); err != nil {
		f.logger.Info("ACL change refused", "index", index, "change", aclDescribe(c), "err", err)
		return err
	}
	st := &ACLState{Users: next, Changes: cur.Changes + 1, RequirePass: cur.RequirePass, RequirePassSet: cur.RequirePassSet,
		born: bornAfter(cur.born, cur.Users, next, c, index), raw: next.Marshal()}
	if su, ok := c.(ACLSetUser); ok && su.RequirePass != nil {
		st.RequirePass, st.RequirePassSet = *su.RequirePass, true
	}
	f.publishLocked(st)
	return nil
}

// restoreACL replaces the set with a snapshot's (nil: the default user).
func (f *FSM) restoreACL(s *aclSnapshot) {
	f.acl.mu.Lock()
	defer f.acl.mu.Unlock()
	if s == nil {
		s = &aclSnapshot{}
	}
	born := make(map[string]uint64, len(s.Born))
	for _, b := range s.Born {
		born[string(b.Name)] = b.Index
	}
	st := &ACLState{RequirePass: s.RequirePass, Changes: s.Changes, born: born, raw: s.Users}
	if f.acl.cmds != nil {
		st = f.parsed(s.Users, born, s.RequirePass, s.Changes)
	}
	st.RequirePassSet = s.PassSet
	f.publishLocked(st)
}

// checkACLSnapshot refuses an acl section that is not a user set.
func checkACLSnapshot(s *aclSnapshot) error {
	if s == nil || len(s.Users) == 0 {
		return nil
	}
	var recs []json.RawMessage
	if err := json.Unmarshal(s.Users, &recs); err != nil {
		return fmt.Errorf("%w: acl users: %v", ErrBadSnapshot, err)
	}
	return nil
}

// tableWarnAfter: how long an ACL entry waits for the command table
// before the wait is logged (the front end sets it at once: a wait this
// long is a process without one).
const tableWarnAfter = 10 * time.Second

// awaitTable waits until SetACLCommands gave the table: the entry's
// outcome depends on it, so it cannot be applied without.
func (f *FSM) awaitTable(index uint64) {
	select {
	case <-f.acl.tableSet:
		return
	case <-time.After(tableWarnAfter):
		f.logger.Warn("an ACL entry waits for the command table: the meta group is stalled until the front end starts", "index", index)
	}
	<-f.acl.tableSet
}

// AwaitACLCommands is the command table SetACLCommands gave, once it has:
// a data group's entry whose scripts run as a user cannot be applied
// without it either.
func (f *FSM) AwaitACLCommands() *acl.Commands {
	f.awaitTable(0)
	f.acl.mu.Lock()
	defer f.acl.mu.Unlock()
	return f.acl.cmds
}
