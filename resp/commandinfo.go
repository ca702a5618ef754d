package resp

// KeySpec is one key specification of a command as COMMAND INFO reports it
// (Redis 7 "key_specs"): where the search for keys begins and how keys are
// found from there.
type KeySpec struct {
	Notes string
	// Flags such as "RO", "RW", "OW", "RM", "access", "update", "insert",
	// "delete", "not_key", "incomplete", "variable_flags".
	Flags []string
	// begin_search: "index" when Index > 0, "keyword" when Keyword is set
	// (StartFrom is where the search starts, negative from the end), else
	// "unknown".
	Index     int
	Keyword   string
	StartFrom int
	// find_keys: "keynum" when KeyNum is set (KeyNumIdx, FirstKey, KeyStep
	// relative to the begin_search position), "unknown" when FindUnknown is
	// set, else "range" (LastKey relative to the begin_search position, -1
	// = last argument; KeyStep; Limit).
	KeyNum      bool
	FindUnknown bool
	KeyNumIdx   int
	FirstKey    int
	LastKey     int
	KeyStep     int
	Limit       int
}

// aclCategories is Redis 7.2's ACL category table, in its order (acl.c).
var aclCategories = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
	"blocking", "dangerous", "connection", "transaction", "scripting",
}

// Info renders the command as one entry of COMMAND / COMMAND INFO in Redis
// 7.2's format: an array of name, arity, flags (set of status strings),
// first key, last key, step, ACL categories (set of "@cat" statuses), tips
// (set of bulk strings), key specifications (set of maps) and subcommands
// (array of Info entries, or an empty set).
func (c *Command) Info() Value {
	first, last, step := 0, 0, 0
	if c.FirstKey > 0 {
		first, last, step = c.FirstKey, c.LastKey, max(c.Step, 1)
	}
	return Array(
		BulkString(c.Name),
		Int(int64(c.Arity)),
		statusSet(c.flagNames()),
		Int(int64(first)),
		Int(int64(last)),
		Int(int64(step)),
		statusSet(c.Categories()),
		bulkSet(c.Tips),
		c.keySpecsValue(),
		c.subcommandsValue((*Command).Info, false),
	)
}

// Docs renders the command's COMMAND DOCS entry in Redis 7.2's format: a
// map of summary, since, group, complexity (when known) and subcommands (a
// map of full names to their docs) when the command has any.
func (c *Command) Docs() Value {
	kvs := []Value{
		BulkString("summary"), BulkString(c.Summary),
		BulkString("since"), BulkString(c.Since),
		BulkString("group"), BulkString(c.Group),
	}
	if c.Complexity != "" {
		kvs = append(kvs, BulkString("complexity"), BulkString(c.Complexity))
	}
	if len(c.Subcommands) > 0 {
		kvs = append(kvs, BulkString("subcommands"), c.subcommandsValue((*Command).Docs, true))
	}
	return Map(kvs...)
}

// Categories returns the command's ACL categories with Redis's implicit
// ones added (write → write, readonly → read, admin → admin and dangerous,
// pubsub, fast, blocking; slow when not fast), in Redis's order, each with
// its '@'.
func (c *Command) Categories() []string {
	has := map[string]bool{}
	for _, a := range c.ACL {
		has[a] = true
	}
	implied := []struct {
		f    Flag
		cats []string
	}{
		{FlagWrite, []string{"write"}},
		{FlagAdmin, []string{"admin", "dangerous"}},
		{FlagPubSub, []string{"pubsub"}},
		{FlagFast, []string{"fast"}},
		{FlagBlocking, []string{"blocking"}},
	}
	for _, im := range implied {
		if c.Flags&im.f != 0 {
			for _, cat := range im.cats {
				has[cat] = true
			}
		}
	}
	if c.Flags&FlagReadOnly != 0 && !has["scripting"] {
		has["read"] = true
	}
	if !has["fast"] {
		has["slow"] = true
	}
	var out []string
	for _, cat := range aclCategories {
		if has[cat] {
			out = append(out, "@"+cat)
			delete(has, cat)
		}
	}
	for _, a := range c.ACL { // categories Redis does not know, in given order
		if has[a] {
			out = append(out, "@"+a)
			delete(has, a)
		}
	}
	return out
}

// flagNames adds movablekeys for commands whose keys move.
func (c *Command) flagNames() []string {
	f := c.Flags
	if c.Keys != nil {
		f |= FlagMovableKeys
	}
	return f.Names()
}

// KeySpecList returns the command's key specifications: Redis 7.2's for a
// command Redis knows (keyspecs_gen.go), else KeySpecs when set, else one
// derived from FirstKey/LastKey/Step (none for keyless or movable-key
// commands without positions), flagged "RW access update" for writes and
// "RO access" otherwise.
func (c *Command) KeySpecList() []KeySpec {
	if rk, ok := redisKeyTable[c.Name]; ok && rk.specs != nil {
		return rk.specs
	}
	if c.KeySpecs != nil || c.FirstKey <= 0 {
		return c.KeySpecs
	}
	ks := KeySpec{Index: c.FirstKey, KeyStep: max(c.Step, 1), LastKey: c.LastKey}
	if c.LastKey >= 0 {
		ks.LastKey = max(c.LastKey-c.FirstKey, 0)
	}
	if c.Flags&FlagWrite != 0 {
		ks.Flags = []string{"RW", "access", "update"}
	} else {
		ks.Flags = []string{"RO", "access"}
	}
	return []KeySpec{ks}
}

func (c *Command) keySpecsValue() Value {
	specs := c.KeySpecList()
	out := make([]Value, len(specs))
	for i, ks := range specs {
		out[i] = ks.value()
	}
	return Set(out...)
}

func (ks KeySpec) value() Value {
	var kvs []Value
	if ks.Notes != "" {
		kvs = append(kvs, BulkString("notes"), BulkString(ks.Notes))
	}
	kvs = append(kvs,
		BulkString("flags"), statusSet(ks.Flags),
		BulkString("begin_search"), ks.beginSearch(),
		BulkString("find_keys"), ks.findKeys(),
	)
	return Map(kvs...)
}

func (ks KeySpec) beginSearch() Value {
	switch {
	case ks.Index > 0:
		return typedSpec("index", BulkString("index"), Int(int64(ks.Index)))
	case ks.Keyword != "":
		return typedSpec("keyword",
			BulkString("keyword"), BulkString(ks.Keyword),
			BulkString("startfrom"), Int(int64(ks.StartFrom)))
	default:
		return typedSpec("unknown")
	}
}

func (ks KeySpec) findKeys() Value {
	switch {
	case ks.FindUnknown:
		return typedSpec("unknown")
	case ks.KeyNum:
		return typedSpec("keynum",
			BulkString("keynumidx"), Int(int64(ks.KeyNumIdx)),
			BulkString("firstkey"), Int(int64(ks.FirstKey)),
			BulkString("keystep"), Int(int64(ks.KeyStep)))
	default:
		return typedSpec("range",
			BulkString("lastkey"), Int(int64(ks.LastKey)),
			BulkString("keystep"), Int(int64(ks.KeyStep)),
			BulkString("limit"), Int(int64(ks.Limit)))
	}
}

// typedSpec is Redis's {"type": typ, "spec": {kvs}} map.
func typedSpec(typ string, kvs ...Value) Value {
	return Map(BulkString("type"), BulkString(typ), BulkString("spec"), Map(kvs...))
}

// subcommandsValue renders subcommands as an array (COMMAND INFO) or a map
// keyed by full name (COMMAND DOCS); no subcommands is an empty set.
func (c *Command) subcommandsValue(render func(*Command) Value, asMap bool) Value {
	if len(c.Subcommands) == 0 {
		return Set()
	}
	var out []Value
	for _, sub := range c.Subcommands {
		if asMap {
			out = append(out, BulkString(sub.Name))
		}
		out = append(out, render(sub))
	}
	if asMap {
		return Map(out...)
	}
	return Array(out...)
}

func statusSet(names []string) Value {
	out := make([]Value, len(names))
	for i, n := range names {
		out[i] = Status(n)
	}
	return Set(out...)
}

func bulkSet(items []string) Value {
	out := make([]Value, len(items))
	for i, s := range items {
		out[i] = BulkString(s)
	}
	return Set(out...)
}
