package fsm

import (
	"math"

	"github.com/slotraft/slotraft/resp"
)

// expireUnit is how an expiry argument is given.
type expireUnit uint8

const (
	unitNone expireUnit = iota
	unitEX              // relative seconds
	unitPX              // relative milliseconds
	unitEXAT            // absolute unix seconds
	unitPXAT            // absolute unix milliseconds
)

var unitNames = []struct {
	name string
	unit expireUnit
}{{"ex", unitEX}, {"px", unitPX}, {"exat", unitEXAT}, {"pxat", unitPXAT}}

// setOpts are SET's and GETEX's options (Redis's
// parseExtendedStringArgumentsOrReply).
type setOpts struct {
	nx, xx, get, keepTTL, persist bool
	unit                          expireUnit
	expire                        []byte
}

func unitOf(b []byte) expireUnit {
	for _, u := range unitNames {
		if eq(b, u.name) {
			return u.unit
		}
	}
	return unitNone
}

// parseSetOpts parses the options after SET key value (getex=false) or
// GETEX key (getex=true). Conflicting or unknown options are a syntax error.
func parseSetOpts(args [][]byte, getex bool) (setOpts, error) {
	var o setOpts
	for j := 0; j < len(args); j++ {
		a := args[j]
		if !o.accept(a, getex) {
			u := unitOf(a)
			if u == unitNone || !o.unitAllowed(u) || j+1 >= len(args) {
				return o, resp.ErrSyntax
			}
			o.unit, o.expire = u, args[j+1]
			j++
		}
	}
	return o, nil
}

// accept applies a flag option (not an expiry with an argument); false if a
// is not an acceptable flag here.
func (o *setOpts) accept(a []byte, getex bool) bool {
	switch {
	case !getex && eq(a, "nx") && !o.xx:
		o.nx = true
	case !getex && eq(a, "xx") && !o.nx:
		o.xx = true
	case !getex && eq(a, "get"):
		o.get = true
	case !getex && eq(a, "keepttl") && !o.persist && o.unit == unitNone:
		o.keepTTL = true
	case getex && eq(a, "persist") && o.unit == unitNone && !o.keepTTL:
		o.persist = true
	default:
		return false
	}
	return true
}

// unitAllowed: one expiry kind at most (repeating the same one is allowed,
// the last wins), and not with KEEPTTL or PERSIST.
func (o *setOpts) unitAllowed(u expireUnit) bool {
	return !o.keepTTL && !o.persist && (o.unit == unitNone || o.unit == u)
}

// errInvalidExpire is Redis's addReplyErrorExpireTime for command name.
func errInvalidExpire(name string) error {
	return resp.Errorf("ERR invalid expire time in '%s' command", name)
}

// expireAt turns an expiry argument into unix ms (Redis's
// getExpireMillisecondsOrReply): it must be a positive integer, and the
// result must not overflow.
func expireAt(now int64, raw []byte, u expireUnit, name string) (int64, error) {
	ms, err := resp.ParseInt(raw)
	if err != nil {
		return 0, resp.ErrNotInteger
	}
	seconds := u == unitEX || u == unitEXAT
	if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
		return 0, errInvalidExpire(name)
	}
	if seconds {
		ms *= 1000
	}
	if u == unitEX || u == unitPX {
		if ms > math.MaxInt64-now {
			return 0, errInvalidExpire(name)
		}
		ms += now
	}
	if ms <= 0 {
		return 0, errInvalidExpire(name)
	}
	return ms, nil
}
