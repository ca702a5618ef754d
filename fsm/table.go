package fsm

import (
	"github.com/slotraft/slotraft/acl"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Ctx is what a command runs against.
type Ctx struct {
	Store *store.Store
	Now   int64  // unix ms: entry time for writes (never decreasing), leader clock for reads
	Index uint64 // log index (0 for reads)
	// Rand is the command's randomness: set by tests, else made from seed
	// on first use (rand), as most commands need none.
	Rand *rand.Rand
	seed [2]uint64 // the entry's seed (writes) / any (reads)
	// Ready collects the keys that gained elements during this entry
	// (signalReady), for serving clients blocked on them.
	Ready [][]byte
	// NoBlock: a blocking command run with this Ctx never blocks (MULTI,
	// scripts); it answers as its non-blocking form (blocking.go).
	NoBlock bool
	// scripts is the group's script cache (script.go); nil where scripts
	// cannot run.
	scripts *scriptCache
	// scriptBudget is the instruction budget of a script run with this Ctx:
	// the group's setting at the entry's log position, or for a read the
	// current one (lua_budget.go).
	scriptBudget int64
	// scriptHook is the node's script watch (script_watch.go), nil if none.
	scriptHook func(ScriptRun) func()
	// Events collects the keyspace events of the entry's commands
	// (notify.go), for the classes in notifyOn only (0: none).
	Events   []Event
	notifyOn NotifyClass
	// Expired counts the expired leftovers the entry deleted (INFO's
	// expired_keys), and Freed what Redis would free in the background
	// (lazyfree.go), when notifyOn has NotifyCount.
	Expired int
	Freed   Freed
	// Touched collects the keys the entry changed and its read-only
	// commands read (tracking.go), when trackOn; pos is the position of
	// the entry's command running now (-1 for none).
	Touched []TouchedKey
	trackOn bool
	pos     int32
	// dirty counts the key changes clients' commands made (Redis's
	// server.dirty, by key: INFO's rdb_changes_since_last_save); a key
	// changed again right away by the same command (created, then
	// filled) counts once: dirtyKey and dirtyPos are the last one counted.
	dirty    int
	dirtyKey []byte
	dirtyPos int32
	// calls are the commands scripts ran, for MONITOR, when monitorOn.
	calls     [][][]byte
	monitorOn bool
	// user is whom scripts call commands as (script_acl.go): nil, with
	// userBroken false, for a user allowed everything; userBroken for
	// permissions that did not parse (every call denied). denials are
	// the calls it refused.
	user       *acl.User
	userBroken bool
	denials    []ScriptDenial
	// lookups counts a read's key lookups that found a key or not
	// (Redis's keyspace_hits and keyspace_misses, counted in
	// lookupKeyRead); only reads count (Index 0).
	lookups Lookups
	// moved, while some slot migrates out, reports whether a command a
	// script calls, with these keys, may not run here (migrate.go).
	moved func(keys [][]byte, write bool) bool
	// access is the node's access-metadata setting (access.go); touch,
	// its LFU parameters when lookups record accesses (nil: they do not,
	// e.g. for a CLIENT NO-TOUCH client).
	access *AccessSettings
	touch  *store.AccessParams
	// shared, in a Lua debugging session, is the lock of the live state
	// its store was forked from (ldb_copy.go): the commands its script
	// calls run under it.
	shared *sync.RWMutex
}

// rand is the command's random source: Rand, or a generator seeded from
// c.seed made on first use. Replicas make the same one for an entry,
// whenever they first need it.
func (c *Ctx) rand() *rand.Rand {
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(c.seed[0], c.seed[1]))
	}
	return c.Rand
}

// Command is one data command: its metadata and its implementation.
type Command struct {
	Meta *resp.Command
	// Run executes the command; args[0] is the command name and the arity
	// has been checked.
	Run func(c *Ctx, args [][]byte) resp.Value
	// Subs are a container's subcommands (OBJECT, XGROUP, XINFO) in
	// Meta.Subcommands order; a container has no Run of its own (resolve).
	Subs []*Command
	// Script says how a command that runs a script or a function routes
	// (script.go); nil for the others.
	Script *ScriptSpec
	// block says how a blocking command blocks (blocking.go); nil for the
	// others.
	block *blockSpec
}

// container makes the container command meta of subs: its metadata lists
// theirs, and it runs the one args[1] names.
func container(meta *resp.Command, subs ...*Command) *Command {
	for _, sc := range subs {
		meta.Subcommands = append(meta.Subcommands, sc.Meta)
	}
	return &Command{Meta: meta, Subs: subs}
}

// resolve is the command that runs for args: cmd itself, or the subcommand
// of a container that args[1] names, its arity checked (Redis's errors
// otherwise).
func (cmd *Command) resolve(args [][]byte) (*Command, error) {
	if len(cmd.Subs) == 0 {
		return cmd, nil
	}
	i, err := cmd.Meta.SubcommandIndex(args)
	if err != nil {
		return nil, err
	}
	return cmd.Subs[i], nil
}

// cmdMaker builds a key-taking data command of one Redis command group with
// its metadata as in Redis's src/commands/*.json.
type cmdMaker func(name string, arity int, flags resp.Flag, first, last, step int, acl []string,
	since, summary, complexity string, run func(*Ctx, [][]byte) resp.Value) *Command

// commandsOf returns the maker for the commands of a Redis command group.
func commandsOf(group string) cmdMaker {
	return func(name string, arity int, flags resp.Flag, first, last, step int, acl []string,
		since, summary, complexity string, run func(*Ctx, [][]byte) resp.Value) *Command {
		return &Command{Meta: &resp.Command{
			Name: name, Arity: arity, Flags: flags, FirstKey: first, LastKey: last, Step: step,
			ACL: acl, Group: group, Since: since, Summary: summary, Complexity: complexity,
		}, Run: run}
	}
}

var (
	strCmd = commandsOf("string")
	genCmd = commandsOf("generic")
)

// registry holds the data commands by lowercase name.
var registry = map[string]*Command{}

// register adds commands; a name registered twice panics (two definitions of
// one command is a programming error caught at start-up).
func register(cmds ...*Command) {
	for _, c := range cmds {
		name := strings.ToLower(c.Meta.Name)
		if _, dup := registry[name]; dup {
			panic("fsm: command registered twice: " + name)
		}
		registry[name] = c
	}
}

// Lookup finds a data command by name in any case; nil if unknown.
func Lookup(name []byte) *Command {
	if c, ok := registry[string(name)]; ok {
		return c
	}
	return registry[strings.ToLower(string(name))]
}

// Commands returns every data command, sorted by name.
func Commands() []*Command {
	out := make([]*Command, 0, len(registry))
	for _, c := range registry {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Meta.Name < out[j].Meta.Name })
	return out
}

// Shorthands for the flags used in the tables.
const (
	fW = resp.FlagWrite
	fR = resp.FlagReadOnly
	fD = resp.FlagDenyOOM
	fF = resp.FlagFast
)

// Tips as COMMAND INFO renders them.
var (
	tipsMultiSum  = []string{"request_policy:multi_shard", "response_policy:agg_sum"}
	tipsAllSum    = []string{"request_policy:all_shards", "response_policy:agg_sum"}
	tipsAllOK     = []string{"request_policy:all_shards", "response_policy:all_succeeded"}
	tipsNondet    = []string{"nondeterministic_output"}
	tipsMultiOK   = []string{"request_policy:multi_shard", "response_policy:all_succeeded"}
	tipsMultiOnly = []string{"request_policy:multi_shard"}
)

// Reply helpers.
var (
	zero = resp.Int(0)
	one  = resp.Int(1)
)

func errReply(err error) resp.Value { return resp.Err(err) }

func errf(format string, args ...any) resp.Value { return resp.Err(resp.Errorf(format, args...)) }

// get returns the live object at key (nil if absent or expired) and
// records the access, as Redis's lookupKey does.
func (c *Ctx) get(key []byte) *store.Object {
	o := c.Store.Lookup(key, c.Now, c.touch)
	c.looked(o != nil)
	return o
}

// peek is get without recording the access (Redis's LOOKUP_NOTOUCH: TYPE,
// EXISTS, TTL, OBJECT).
func (c *Ctx) peek(key []byte) *store.Object {
	o := c.Store.Get(key, c.Now)
	c.looked(o != nil)
	return o
}

// Lookups are the key lookups of a read: found or not.
type Lookups struct{ Hits, Misses uint32 }

// looked counts a lookup of a read (Index 0: writes are not counted, as
// Redis's lookupKeyWrite does not count).
func (c *Ctx) looked(found bool) {
	switch {
	case c.Index != 0:
	case found:
		c.lookups.Hits++
	default:
		c.lookups.Misses++
	}
}

// getString returns the live string at key, nil if absent, or WRONGTYPE.
func (c *Ctx) getString(key []byte) (*store.Object, error) {
	o := c.get(key)
	if o != nil && o.Type != store.TypeString {
		return nil, resp.ErrWrongType
	}
	return o, nil
}

// stringValue is getString's value without an Object: nil if absent.
func (c *Ctx) stringValue(key []byte) ([]byte, bool, error) {
	val, typ, found := c.Store.GetString(key, c.Now, c.touch)
	c.looked(found)
	switch {
	case !found:
		return nil, false, nil
	case typ != store.TypeString:
		return nil, false, resp.ErrWrongType
	}
	return val, true, nil
}

// put stores o at key, stamping it with the entry's index and time.
func (c *Ctx) put(key []byte, o *store.Object) {
	c.notifyWrite(key)
	o.Version = c.Index
	o.Touched = c.Now
	c.Store.Put(key, o)
	c.modified(key)
}

// putString stores a copy of val at key with expiry exp (unix ms, 0 = none).
func (c *Ctx) putString(key, val []byte, exp int64) {
	if !store.CopiesString(len(val)) { // a small value is copied into the key's record
		val = clone(val)
	}
	c.put(key, &store.Object{Type: store.TypeString, Str: val, ExpireAt: exp})
}

// del removes key and reports whether a live key was removed. An expired
// leftover is removed too (as Redis's lookupKeyWrite would) but not counted.
func (c *Ctx) del(key []byte) bool {
	live := c.get(key) != nil
	c.notifyGone(key)
	if c.Store.Delete(key) {
		if live {
			c.modified(key)
		} else {
			c.expiredGone(key)
		}
	}
	return live
}

// clone copies b so that stored values never alias log-entry buffers.
func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }

// eq reports whether an argument equals an option name, ignoring case.
func eq(b []byte, s string) bool { return resp.EqualFold(b, s) }

// cloneArgs copies a command's arguments (a script's buffers are reused).
func cloneArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = clone(a)
	}
	return out
}
