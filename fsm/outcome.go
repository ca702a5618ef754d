package fsm

import "github.com/slotraft/slotraft/resp"

// Outcome is what one command came to, in Apply or in a read: a reply for
// the client, or something the front end must act on instead. It is a
// typed value so that nothing downstream has to decode a reply again to
// learn what happened.
type Outcome struct {
	Kind  OutcomeKind
	Reply resp.Value // OutcomeReply: the command's reply
	// OutcomeAsk: the command's keys left Slot for group Group; the client
	// is sent to that group's leader (-ASK slot host:port).
	Slot  uint16
	Group uint32
	// OutcomeBlocked: the command blocked as Waiter; its outcome comes
	// later, in a BlockEvent's Deferred. Reply is then the non-blocking
	// form's null reply (what it answers inside MULTI).
	Waiter WaiterID
	// Lookups, for a read, are its key lookups that found a key or not
	// (INFO's keyspace_hits and keyspace_misses).
	Lookups Lookups
	// Calls are the commands a script run by the command called, in
	// order, when they were asked for (NotifyMonitor, ReadOpts.Monitor).
	Calls [][][]byte
	// Denials are the calls of the command's scripts that the caller's
	// user may not run (script_acl.go), for ACL LOG.
	Denials []ScriptDenial
}

// OutcomeKind says what kind of Outcome it is.
type OutcomeKind uint8

// The outcome kinds.
const (
	// OutcomeReply: the command ran (or failed as a command); Reply is
	// what the client gets.
	OutcomeReply OutcomeKind = iota
	// OutcomeAsk: every key of the command has left a migrating slot for
	// another group; the command did not run.
	OutcomeAsk
	// OutcomeTryAgain: the command's keys are partly moved, partly not, or
	// a write touches a key being copied right now; the command did not
	// run and the client retries later (-TRYAGAIN), as Redis answers
	// during a migration.
	OutcomeTryAgain
	// OutcomeBlocked: a blocking command found nothing and waits; its
	// reply is deferred.
	OutcomeBlocked
)

// Replied is the outcome of a command that ran: v is its reply.
func Replied(v resp.Value) Outcome { return Outcome{Reply: v} }

// Asked is the outcome of a command whose keys left slot for group gid.
func Asked(slot uint16, gid uint32) Outcome {
	return Outcome{Kind: OutcomeAsk, Slot: slot, Group: gid}
}

// TryAgain is the outcome of a command that must be retried later.
func TryAgain() Outcome { return Outcome{Kind: OutcomeTryAgain} }

// blockedAs is the outcome of a command that blocked as waiter id
// instead of answering null.
func blockedAs(id WaiterID, null resp.Value) Outcome {
	return Outcome{Kind: OutcomeBlocked, Waiter: id, Reply: null}
}

// Replies wraps replies as outcomes.
func Replies(vs ...resp.Value) []Outcome {
	out := make([]Outcome, len(vs))
	for i, v := range vs {
		out[i] = Replied(v)
	}
	return out
}
