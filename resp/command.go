package resp

import "strings"

// Flag is a command flag as reported by COMMAND INFO.
type Flag uint32

// Command flags, named as Redis names them.
const (
	FlagWrite Flag = 1 << iota
	FlagReadOnly
	FlagDenyOOM
	FlagAdmin
	FlagPubSub
	FlagNoScript
	FlagBlocking
	FlagLoading
	FlagStale
	FlagSkipMonitor
	FlagSkipSlowlog
	FlagFast
	FlagNoAuth
	FlagMayReplicate
	FlagNoMulti
	FlagMovableKeys
	FlagAllowBusy
	// FlagAsking: the command is served for an importing slot as if the
	// client had sent ASKING first (RESTORE-ASKING).
	FlagAsking
)

var flagNames = []struct {
	f    Flag
	name string
}{
	{FlagWrite, "write"}, {FlagReadOnly, "readonly"}, {FlagDenyOOM, "denyoom"},
	{FlagAdmin, "admin"}, {FlagPubSub, "pubsub"}, {FlagNoScript, "noscript"},
	{FlagBlocking, "blocking"}, {FlagLoading, "loading"}, {FlagStale, "stale"},
	{FlagSkipMonitor, "skip_monitor"}, {FlagSkipSlowlog, "skip_slowlog"}, {FlagAsking, "asking"},
	{FlagFast, "fast"}, {FlagNoAuth, "no_auth"}, {FlagMayReplicate, "may_replicate"},
	{FlagNoMulti, "no_multi"}, {FlagMovableKeys, "movablekeys"}, {FlagAllowBusy, "allow_busy"},
}

// Names lists the flags' names in Redis's order.
func (f Flag) Names() []string {
	var out []string
	for _, fn := range flagNames {
		if f&fn.f != 0 {
			out = append(out, fn.name)
		}
	}
	return out
}

// Command is one command's metadata: the single source that routing, COMMAND,
// arity errors and docs read. Key positions follow COMMAND INFO: FirstKey is
// 1-based (0 = no keys), LastKey may be negative (-1 = last argument), Step is
// the distance between keys. Keys, when set, overrides positions for commands
// whose keys move (flag movablekeys).
type Command struct {
	Name        string // lowercase; "container|sub" for subcommands
	Arity       int    // as COMMAND: >0 exact, <0 at least -Arity (name included)
	Flags       Flag
	FirstKey    int
	LastKey     int
	Step        int
	ACL         []string // ACL categories without '@'
	Group       string   // "string", "generic", "cluster", "connection", "server"…
	Since       string
	Summary     string
	Complexity  string
	Tips        []string
	Subcommands []*Command
	// Keys returns the indexes in args (args[0] is the command name) of the
	// keys, for commands whose key positions depend on the arguments.
	Keys func(args [][]byte) []int
	// KeySpecs, when set, are reported by COMMAND INFO instead of the one
	// key specification derived from FirstKey, LastKey, Step and the flags.
	KeySpecs []KeySpec
}

// ArityOK reports whether n arguments (command name included) fit the arity.
func (c *Command) ArityOK(n int) bool {
	if c.Arity >= 0 {
		return n == c.Arity
	}
	return n >= -c.Arity
}

// KeyIndexes returns the positions of the keys in args (args[0] = name);
// a container's are those of the subcommand args[1] names. Callers check
// arity first.
func (c *Command) KeyIndexes(args [][]byte) []int {
	if c.Keys != nil {
		return c.Keys(args)
	}
	if len(c.Subcommands) > 0 {
		if i := c.subIndex(args); i >= 0 {
			return c.Subcommands[i].KeyIndexes(args)
		}
		return nil
	}
	first, last, ok := c.keyRange(len(args))
	if !ok {
		return nil
	}
	step := max(c.Step, 1)
	var out []int
	for i := first; i <= last; i += step {
		out = append(out, i)
	}
	return out
}

// keyRange is the first and last argument FirstKey and LastKey give for n
// arguments (Step apart); ok is false when there are none.
func (c *Command) keyRange(n int) (first, last int, ok bool) {
	if c.FirstKey <= 0 || c.FirstKey >= n {
		return 0, 0, false
	}
	last = c.LastKey
	if last < 0 {
		last = n + last
	}
	return c.FirstKey, min(last, n-1), true
}

// KeysOf returns the keys of args. For keys in consecutive arguments (GET,
// MGET, DEL…) it is a slice of args itself, with no allocation: callers
// only read it.
func (c *Command) KeysOf(args [][]byte) [][]byte {
	if c.Keys == nil && len(c.Subcommands) == 0 && c.Step <= 1 {
		first, last, ok := c.keyRange(len(args))
		if !ok || last < first {
			return nil
		}
		return args[first : last+1 : last+1]
	}
	idx := c.KeyIndexes(args)
	keys := make([][]byte, len(idx))
	for i, j := range idx {
		keys[i] = args[j]
	}
	return keys
}

// SubcommandIndex is the index in c.Subcommands of the subcommand args
// names (args[1], any case), its arity checked: with Redis's "unknown
// subcommand" or "wrong number of arguments" error otherwise. Every
// container's dispatch goes through it.
func (c *Command) SubcommandIndex(args [][]byte) (int, error) {
	i := c.subIndex(args)
	switch {
	case i < 0 && len(args) < 2:
		return -1, ErrWrongArgs(c.Name)
	case i < 0:
		return -1, ErrUnknownSubcommand(args[0], args[1])
	case !c.Subcommands[i].ArityOK(len(args)):
		return -1, ErrWrongArgs(c.Subcommands[i].Name)
	}
	return i, nil
}

// subIndex finds the subcommand args[1] names; -1 if none.
func (c *Command) subIndex(args [][]byte) int {
	if len(args) < 2 {
		return -1
	}
	for i, sc := range c.Subcommands {
		if _, name, _ := strings.Cut(sc.Name, "|"); EqualFold(args[1], name) {
			return i
		}
	}
	return -1
}

// Is reports whether the command has every flag in f.
func (c *Command) Is(f Flag) bool { return c.Flags&f == f }

// Table maps command names (case-insensitive) to commands. Registering a
// name twice panics: two definitions of one command is a programming error.
type Table struct {
	byName map[string]*Command
	order  []*Command
}

// NewTable makes an empty table.
func NewTable() *Table { return &Table{byName: map[string]*Command{}} }

// Register adds commands; a duplicate name panics.
func (t *Table) Register(cmds ...*Command) {
	for _, c := range cmds {
		name := strings.ToLower(c.Name)
		if _, dup := t.byName[name]; dup {
			panic("resp: command registered twice: " + name)
		}
		t.byName[name] = c
		t.order = append(t.order, c)
	}
}

// Lookup finds a command by name in any case; nil if unknown.
func (t *Table) Lookup(name []byte) *Command {
	if c, ok := t.byName[string(name)]; ok {
		return c
	}
	return t.byName[strings.ToLower(string(name))]
}

// All returns the commands in registration order.
func (t *Table) All() []*Command { return t.order }

// Len is the number of top-level commands.
func (t *Table) Len() int { return len(t.order) }
