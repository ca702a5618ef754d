package proxy

import (
	"github.com/slotraft/slotraft/resp"
)

// How the proxy handles each command. Keys, arity and flags come from the
// one command table (server.Commands()); this table holds only what a
// proxy decides beyond them, for the commands it does not simply forward:
// a command with keys goes to its slot's leader, a command without keys to
// the proxy's own node (the "home" node), unless a rule here says
// otherwise. docs/proxy.md's tables list the same rules (rules_test.go
// holds them to it).

// kind is how a command is served.
type kind uint8

const (
	kindForward   kind = iota // by its keys to the slot's leader; keyless to the home node
	kindSplit                 // keys of several slots: one command per slot, replies merged
	kindTx                    // MULTI, EXEC, DISCARD, WATCH, UNWATCH (tx.go)
	kindSubscribe             // the subscribe family (pubsub.go)
	kindSession               // connection state, sent to every backend connection (session_state.go)
	kindLocal                 // answered by the proxy itself (session_state.go)
	kindFanout                // sent to every node that leads a group, replies merged (fanout.go)
	kindRefuse                // an honest error: not served through the proxy
)

// merge says how a split or fanned-out command's replies become one.
type merge uint8

const (
	mergeNone   merge = iota
	mergeConcat       // arrays joined (MGET in key order, KEYS)
	mergeSum          // integers added (DEL, EXISTS, DBSIZE)
	mergeAllOK        // +OK when every part says OK (MSET, FLUSHALL)
	mergeMin          // the smallest integer, or elementwise (WAIT, WAITAOF)
	mergeAnd          // 1 only where every part says 1 (SCRIPT EXISTS)
	mergeAnyOK        // +OK when a part says OK, else the first error (SCRIPT KILL)
	mergeFirst        // the first part's reply (SCRIPT LOAD: the same SHA1 everywhere)
	mergeRandom       // the first non-null reply, nodes in random order (RANDOMKEY)
	mergeScan         // SCAN's cursor walks the slots, node by node (fanout.go)
)

// rule is the proxy's handling of one command (a container's subcommand
// by its full name, "script|load").
type rule struct {
	kind  kind
	merge merge
	// why is the refusal's reason (kindRefuse), or the rule's note in
	// docs/proxy.md.
	why string
	// subscribed: a RESP2 client in subscribed state may send it (Redis
	// allows the subscribe family, PING, QUIT and RESET).
	subscribed bool
	// txNow: inside MULTI it acts at once instead of being queued (as the
	// server's "now" commands: EXEC, DISCARD, MULTI, WATCH, QUIT, RESET).
	txNow bool
	// noTx: refused inside MULTI (its effect on the connection would be
	// lost in the transaction's replies).
	noTx bool
	// keylessToLeader: without keys it goes to a leader node (slot 0's)
	// rather than the home node, which may lead no group (a keyless
	// script runs in any group alike).
	keylessToLeader bool
}

// rules holds every command whose handling is not kindForward.
var rules = map[string]rule{
	"mget":   {kind: kindSplit, merge: mergeConcat, why: "one MGET per slot; the values in the keys' order"},
	"mset":   {kind: kindSplit, merge: mergeAllOK, why: "one MSET per slot; OK when every slot's is OK"},
	"del":    {kind: kindSplit, merge: mergeSum, why: "one DEL per slot; the counts added"},
	"unlink": {kind: kindSplit, merge: mergeSum, why: "one UNLINK per slot; the counts added"},
	"exists": {kind: kindSplit, merge: mergeSum, why: "one EXISTS per slot; the counts added"},
	"touch":  {kind: kindSplit, merge: mergeSum, why: "one TOUCH per slot; the counts added"},

	"multi":   {kind: kindTx, txNow: true, why: "opened on the node of the transaction's slot"},
	"exec":    {kind: kindTx, txNow: true, why: "on the transaction's node; replayed on a new leader when nothing ran"},
	"discard": {kind: kindTx, txNow: true},
	"watch":   {kind: kindTx, txNow: true, why: "on the slot's leader; the transaction goes there"},
	"unwatch": {kind: kindTx},

	"subscribe":    {kind: kindSubscribe, subscribed: true, noTx: true, why: "on the proxy's node, which every node's PUBLISH reaches"},
	"psubscribe":   {kind: kindSubscribe, subscribed: true, noTx: true, why: "on the proxy's node, which every node's PUBLISH reaches"},
	"unsubscribe":  {kind: kindSubscribe, subscribed: true, noTx: true},
	"punsubscribe": {kind: kindSubscribe, subscribed: true, noTx: true},
	"ssubscribe":   {kind: kindSubscribe, subscribed: true, noTx: true, why: "on the leader of the channel's slot"},
	"sunsubscribe": {kind: kindSubscribe, subscribed: true, noTx: true, why: "on the nodes that hold the shard channels"},

	"auth":            {kind: kindSession, noTx: true, why: "checked by the proxy's node, then sent on every backend connection"},
	"hello":           {kind: kindSession, noTx: true, why: "checked by the proxy's node, then sent on every backend connection"},
	"client|setname":  {kind: kindSession, noTx: true, why: "sent on every backend connection"},
	"client|setinfo":  {kind: kindSession, noTx: true, why: "sent on every backend connection"},
	"client|no-touch": {kind: kindSession, noTx: true, why: "sent on every backend connection"},

	"client|reply": {kind: kindLocal, noTx: true, why: "the proxy drops the replies itself"},
	"quit":         {kind: kindLocal, subscribed: true, txNow: true, why: "+OK, then the proxy closes the connection"},
	"reset":        {kind: kindLocal, subscribed: true, txNow: true, why: "the proxy closes its backend connections and forgets the connection's state"},
	"ping":         {kind: kindForward, subscribed: true, why: "to the proxy's node (a subscribed RESP2 client: to a node holding its subscriptions)"},

	"eval":       {keylessToLeader: true, why: keylessScript},
	"evalsha":    {keylessToLeader: true, why: keylessScript},
	"eval_ro":    {keylessToLeader: true, why: keylessScript},
	"evalsha_ro": {keylessToLeader: true, why: keylessScript},
	"fcall":      {keylessToLeader: true, why: keylessScript},
	"fcall_ro":   {keylessToLeader: true, why: keylessScript},

	"dbsize":        {kind: kindFanout, merge: mergeSum, why: "the counts of every leader node added"},
	"keys":          {kind: kindFanout, merge: mergeConcat, why: "every leader node's keys"},
	"scan":          {kind: kindFanout, merge: mergeScan, why: "the cursor walks the slots, each range on its leader"},
	"randomkey":     {kind: kindFanout, merge: mergeRandom, why: "leader nodes in random order, the first that has a key"},
	"flushall":      {kind: kindFanout, merge: mergeAllOK, why: "on every leader node"},
	"flushdb":       {kind: kindFanout, merge: mergeAllOK, why: "on every leader node"},
	"script|load":   {kind: kindFanout, merge: mergeFirst, why: "on every leader node, so EVALSHA runs on any slot"},
	"script|exists": {kind: kindFanout, merge: mergeAnd, why: "1 where every leader node has the script"},
	"script|flush":  {kind: kindFanout, merge: mergeAllOK, why: "on every leader node"},
	"script|kill":   {kind: kindFanout, merge: mergeAnyOK, why: "on every leader node; OK if one killed a script"},
	"function|kill": {kind: kindFanout, merge: mergeAnyOK, why: "on every leader node; OK if one killed a function"},
	"wait":          {kind: kindFanout, merge: mergeMin, why: "on every backend connection of the client; the smallest count"},
	"waitaof":       {kind: kindFanout, merge: mergeMin, why: "on every backend connection of the client; the smallest counts"},

	"monitor":         {kind: kindRefuse, why: "it would show one node's commands only"},
	"client|tracking": {kind: kindRefuse, why: "invalidations would come from several nodes' connections"},
	"readonly":        {kind: kindRefuse, why: "the proxy reads from the leaders"},
	"asking":          {kind: kindRefuse, why: "the proxy follows -ASK itself"},
	"shutdown":        {kind: kindRefuse, why: "connect to the node to stop it"},
}

const keylessScript = "by its keys; without keys, on the leader of slot 0's group (any group runs it alike)"

// ruleOf is the rule for the command args name, with the metadata of the
// command itself (a container's subcommand) and its full name; ok is false
// for an unknown command, an unknown subcommand or a wrong number of
// arguments, which the home node answers with Redis's error.
func ruleOf(table *resp.Table, args [][]byte) (r rule, meta *resp.Command, name string, ok bool) {
	meta = table.Lookup(args[0])
	if meta == nil || !meta.ArityOK(len(args)) {
		return rule{}, meta, "", false
	}
	if len(meta.Subcommands) > 0 && len(args) > 1 {
		i, err := meta.SubcommandIndex(args)
		if err != nil {
			return rule{}, meta, "", false
		}
		meta = meta.Subcommands[i]
	}
	name = meta.Name // lowercase, "container|sub" (resp.Command)
	return rules[name], meta, name, true
}
