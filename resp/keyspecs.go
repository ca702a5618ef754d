package resp

import (
	"slices"
	"strconv"
)

//go:generate go run ../cmd/keyspecgen -src $REDIS_COMMANDS_DIR -out keyspecs_gen.go

// Redis 7.2's key extraction with flags (db.c's getKeysFromCommandWithSpecs),
// for COMMAND GETKEYS and GETKEYSANDFLAGS, over Redis's own key
// specifications (keyspecs_gen.go, generated from Redis's command files):
// the key specs when they are complete and their flags fixed, else the
// command's getkeys function, ported below.

// redisKeys is one Redis command's entry of the generated table.
type redisKeys struct {
	specs []KeySpec
	// proc is the command's getkeys function, nil if it has none.
	proc func(args [][]byte) []KeyRef
	// noMandatoryKeys: the command may be called without keys (EVAL,
	// FCALL…): GETKEYS answers an empty array rather than an error.
	noMandatoryKeys bool
}

// KeyRef is one key of a command: its index in the arguments (0 is the
// command's name) and its key-spec flags in Redis's reply names and order
// ("RW", "access", "update"…; none when Redis gives none).
type KeyRef struct {
	Pos   int
	Flags []string
}

// The errors of COMMAND GETKEYS and GETKEYSANDFLAGS, as Redis 7.2.
var (
	ErrGetKeysNoKeys   = NewError("ERR The command has no key arguments")
	ErrGetKeysArity    = NewError("ERR Invalid number of arguments specified for command")
	ErrGetKeysInvalid  = NewError("ERR Invalid arguments specified for command")
	ErrGetKeysCommand  = NewError("ERR Invalid command specified")
	keyFlagsRO         = []string{"RO", "access"}
	keyFlagsOW         = []string{"OW", "update"}
	keyFlagsRWUpdate   = []string{"RW", "access", "update"}
	keyFlagsRWDelete   = []string{"RW", "access", "delete"}
	errKeySpecsInvalid = NewError("invalid key specs") // internal: fall back to the getkeys function
)

// RedisKeySpecs are Redis 7.2's key specifications of the command named
// name (full lowercase name), false for a command Redis does not know or
// that has no key.
func RedisKeySpecs(name string) ([]KeySpec, bool) {
	rk, ok := redisKeyTable[name]
	return rk.specs, ok
}

// hasKeySpec reports whether a spec is not marked not_key.
func hasKeySpec(specs []KeySpec) bool {
	return slices.ContainsFunc(specs, func(ks KeySpec) bool { return !slices.Contains(ks.Flags, "not_key") })
}

func hasVariableFlags(specs []KeySpec) bool {
	return slices.ContainsFunc(specs, func(ks KeySpec) bool { return slices.Contains(ks.Flags, "variable_flags") })
}

// GetKeys is COMMAND GETKEYSANDFLAGS (and GETKEYS, without the flags) for
// c, the command args names (args[0] its name, args[1] the subcommand of a
// subcommand): Redis 7.2's checks and errors (no key arguments, arity,
// invalid arguments) and its keys with their flags. A command Redis does
// not know answers from its own key specifications and key function.
func (c *Command) GetKeys(args [][]byte) ([]KeyRef, error) {
	rk, known := redisKeyTable[c.Name]
	if !known {
		rk = redisKeys{specs: c.ownKeySpecs()}
		if c.Keys != nil {
			rk.proc = c.ownKeys
		}
	}
	if rk.proc == nil && !hasKeySpec(rk.specs) {
		return nil, ErrGetKeysNoKeys
	}
	if !c.ArityOK(len(args)) {
		return nil, ErrGetKeysArity
	}
	var keys []KeyRef
	var err error = errKeySpecsInvalid
	if hasKeySpec(rk.specs) && !hasVariableFlags(rk.specs) {
		keys, err = keysFromSpecs(rk.specs, c.Arity, args)
	}
	if err != nil && rk.proc != nil {
		keys, err = rk.proc(args), nil
	}
	if err != nil || len(keys) == 0 {
		if rk.noMandatoryKeys {
			return nil, nil
		}
		return nil, ErrGetKeysInvalid
	}
	return keys, nil
}

// ownKeys are the keys of a command Redis does not know, from its Keys
// function, flagged as its first key spec.
func (c *Command) ownKeys(args [][]byte) []KeyRef {
	var flags []string
	if specs := c.ownKeySpecs(); len(specs) > 0 {
		flags = specs[0].Flags
	}
	var out []KeyRef
	for _, i := range c.Keys(args) {
		out = append(out, KeyRef{Pos: i, Flags: flags})
	}
	return out
}

// ownKeySpecs are the key specs of a command Redis does not know.
func (c *Command) ownKeySpecs() []KeySpec {
	cc := *c
	cc.Name = "" // not in the table
	return cc.KeySpecList()
}

// keysFromSpecs is Redis's getKeysUsingKeySpecs: the keys every spec not
// marked not_key finds, in spec order; errKeySpecsInvalid for an unknown
// or incomplete spec, or one that finds no valid range.
func keysFromSpecs(specs []KeySpec, arity int, args [][]byte) ([]KeyRef, error) {
	argc := len(args)
	var out []KeyRef
	for _, ks := range specs {
		if slices.Contains(ks.Flags, "not_key") {
			continue
		}
		first := 0
		switch {
		case ks.Index > 0:
			first = ks.Index
		case ks.Keyword != "":
			start, end := ks.StartFrom, argc-1
			if start <= 0 {
				start, end = argc+ks.StartFrom, 1
			}
			for i := start; i != end; {
				if i >= argc || i < 1 {
					break
				}
				if EqualFold(args[i], ks.Keyword) {
					first = i + 1
					break
				}
				if start <= end {
					i++
				} else {
					i--
				}
			}
			if first == 0 {
				continue // keyword not found
			}
		default:
			return nil, errKeySpecsInvalid
		}
		var last, step int
		switch {
		case ks.FindUnknown:
			return nil, errKeySpecsInvalid
		case ks.KeyNum:
			step = ks.KeyStep
			if ks.KeyNumIdx >= argc || first+ks.KeyNumIdx >= argc {
				return nil, errKeySpecsInvalid
			}
			n, err := strconv.ParseInt(string(args[first+ks.KeyNumIdx]), 10, 64)
			if err != nil || n < 0 || !canonicalInt(args[first+ks.KeyNumIdx]) {
				return nil, errKeySpecsInvalid
			}
			first += ks.FirstKey
			last = first + int(min(n, int64(argc))) - 1
		default:
			step = ks.KeyStep
			switch {
			case ks.LastKey >= 0:
				last = first + ks.LastKey
			case ks.Limit == 0:
				last = argc + ks.LastKey
			default:
				last = first + ((argc-first)/ks.Limit + ks.LastKey)
			}
		}
		if last >= argc || last < first || first >= argc {
			return nil, errKeySpecsInvalid
		}
		for i := first; i <= last; i += max(step, 1) {
			if i >= argc || i < first {
				if arity < 0 {
					continue
				}
				return nil, errKeySpecsInvalid
			}
			out = append(out, KeyRef{Pos: i, Flags: ks.Flags})
		}
		if slices.Contains(ks.Flags, "incomplete") {
			return nil, errKeySpecsInvalid
		}
	}
	return out, nil
}

// canonicalInt reports whether b is an integer as Redis's string2ll
// accepts it: no sign but a leading '-', no leading zero, no spaces.
func canonicalInt(b []byte) bool {
	s := string(b)
	if s == "" || len(s) > 20 {
		return false
	}
	if s == "0" {
		return true
	}
	if s[0] == '-' {
		s = s[1:]
	}
	if s == "" || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// The getkeys functions of Redis 7.2 (db.c), for the commands whose key
// specs are incomplete or whose flags vary, and as the fallback when the
// specs find nothing valid. Like Redis's, the generic ones give no flags.

// atoi is C's atoi: the leading decimal digits (with a sign), 0 for none.
func atoi(b []byte) int {
	i, neg, n := 0, false, 0
	for i < len(b) && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r')) {
		i++
	}
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int(b[i]-'0')
		if n > 1<<31 {
			break
		}
	}
	if neg {
		return -n
	}
	return n
}

// genericGetKeys: COMMAND [destkey] <num-keys> <key>... (store: the
// destkey's index, 0 for none).
func genericGetKeys(store, countAt, firstAt, step int, args [][]byte) []KeyRef {
	num := atoi(args[countAt])
	if num < 1 || num > (len(args)-firstAt)/step {
		return nil
	}
	var out []KeyRef
	for i := range num {
		out = append(out, KeyRef{Pos: firstAt + i*step})
	}
	if store > 0 {
		out = append(out, KeyRef{Pos: store})
	}
	return out
}

func sintercardGetKeys(args [][]byte) []KeyRef           { return genericGetKeys(0, 1, 2, 1, args) }
func zunionInterDiffStoreGetKeys(args [][]byte) []KeyRef { return genericGetKeys(1, 2, 3, 1, args) }
func zunionInterDiffGetKeys(args [][]byte) []KeyRef      { return genericGetKeys(0, 1, 2, 1, args) }
func evalGetKeys(args [][]byte) []KeyRef                 { return genericGetKeys(0, 2, 3, 1, args) }
func functionGetKeys(args [][]byte) []KeyRef             { return genericGetKeys(0, 2, 3, 1, args) }
func lmpopGetKeys(args [][]byte) []KeyRef                { return genericGetKeys(0, 1, 2, 1, args) }
func blmpopGetKeys(args [][]byte) []KeyRef               { return genericGetKeys(0, 2, 3, 1, args) }
func zmpopGetKeys(args [][]byte) []KeyRef                { return genericGetKeys(0, 1, 2, 1, args) }

// (Redis's command file names blmpopGetKeys for BZMPOP, the same function
// as its bzmpopGetKeys.)

// sortROGetKeys: SORT_RO's key is its first argument.
func sortROGetKeys([][]byte) []KeyRef { return []KeyRef{{Pos: 1, Flags: keyFlagsRO}} }

// sortGetKeys: SORT's key, and the last STORE's destination, skipping
// LIMIT's, GET's and BY's arguments.
func sortGetKeys(args [][]byte) []KeyRef {
	out := []KeyRef{{Pos: 1, Flags: keyFlagsRO}}
	store := 0
	skips := []struct {
		name string
		skip int
	}{{"limit", 2}, {"get", 1}, {"by", 1}}
	for i := 2; i < len(args); i++ {
		for _, sk := range skips {
			if EqualFold(args[i], sk.name) {
				i += sk.skip
				break
			} else if EqualFold(args[i], "store") && i+1 < len(args) {
				store = i + 1
				break
			}
		}
	}
	if store > 0 {
		out = append(out, KeyRef{Pos: store, Flags: keyFlagsOW})
	}
	return out
}

// migrateGetKeys: MIGRATE's key, or the keys after KEYS when the key is
// empty.
func migrateGetKeys(args [][]byte) []KeyRef {
	first, num := 3, 1
	if len(args) > 6 {
		skips := []struct {
			name string
			skip int
		}{{"copy", 0}, {"replace", 0}, {"auth", 1}, {"auth2", 2}}
		for i := 6; i < len(args); i++ {
			if EqualFold(args[i], "keys") {
				if len(args[3]) > 0 {
					num = 0 // a syntax error, MIGRATE's to report
				} else {
					first, num = i+1, len(args)-i-1
				}
				break
			}
			for _, sk := range skips {
				if EqualFold(args[i], sk.name) {
					i += sk.skip
					break
				}
			}
		}
	}
	var out []KeyRef
	for i := range num {
		out = append(out, KeyRef{Pos: first + i, Flags: keyFlagsRWDelete})
	}
	return out
}

// georadiusGetKeys: the key, and the last STORE or STOREDIST destination.
func georadiusGetKeys(args [][]byte) []KeyRef {
	stored := -1
	for i := 5; i < len(args); i++ {
		if (EqualFold(args[i], "store") || EqualFold(args[i], "storedist")) && i+1 < len(args) {
			stored = i + 1
			i++
		}
	}
	out := []KeyRef{{Pos: 1}}
	if stored > 0 {
		out = append(out, KeyRef{Pos: stored})
	}
	return out
}

// xreadGetKeys: the first half of the arguments after STREAMS.
func xreadGetKeys(args [][]byte) []KeyRef {
	streams := -1
loop:
	for i := 1; i < len(args); i++ {
		switch {
		case EqualFold(args[i], "block"), EqualFold(args[i], "count"):
			i++
		case EqualFold(args[i], "group"):
			i += 2
		case EqualFold(args[i], "noack"):
		case EqualFold(args[i], "streams"):
			streams = i
			break loop
		default:
			break loop
		}
	}
	num := 0
	if streams != -1 {
		num = len(args) - streams - 1
	}
	if streams == -1 || num == 0 || num%2 != 0 {
		return nil
	}
	num /= 2
	var out []KeyRef
	for i := streams + 1; i < len(args)-num; i++ {
		out = append(out, KeyRef{Pos: i})
	}
	return out
}

// setGetKeys: SET's key reads too with GET.
func setGetKeys(args [][]byte) []KeyRef {
	for i := 3; i < len(args); i++ {
		if EqualFold(args[i], "get") {
			return []KeyRef{{Pos: 1, Flags: keyFlagsRWUpdate}}
		}
	}
	return []KeyRef{{Pos: 1, Flags: keyFlagsOW}}
}

// bitfieldGetKeys: BITFIELD's key is read-only when only GET (and
// OVERFLOW) are used.
func bitfieldGetKeys(args [][]byte) []KeyRef {
	readonly := true
	for i := 2; i < len(args); i++ {
		rem := len(args) - i - 1
		switch {
		case EqualFold(args[i], "get") && rem >= 2:
			i += 2
		case (EqualFold(args[i], "set") || EqualFold(args[i], "incrby")) && rem >= 3:
			readonly = false
			i = len(args)
		case EqualFold(args[i], "overflow") && rem >= 1:
			i++
		default:
			readonly = false
			i = len(args)
		}
	}
	if readonly {
		return []KeyRef{{Pos: 1, Flags: keyFlagsRO}}
	}
	return []KeyRef{{Pos: 1, Flags: keyFlagsRWUpdate}}
}
