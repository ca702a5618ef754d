package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/slotraft/slotraft/resp"
)

// client-output-buffer-limit: one limit per client class, in bytes and
// seconds. Only the pubsub class is enforced (normal connections are
// written by their own goroutine, which blocks instead of buffering); the others are
// kept so CONFIG GET/SET round-trip as in Redis.

// obufClass is one class's hard limit, soft limit and soft seconds; 0 is no limit.
type obufClass struct{ hard, soft, softSeconds int64 }

// obufLimits are the limits of the three classes Redis configures.
type obufLimits struct{ normal, replica, pubsub obufClass }

// defaultObufLimits are Redis's defaults.
var defaultObufLimits = obufLimits{
	normal:  obufClass{0, 0, 0},
	replica: obufClass{256 << 20, 64 << 20, 60},
	pubsub:  obufClass{32 << 20, 8 << 20, 60},
}

// String renders the limits as CONFIG GET does.
func (l obufLimits) String() string {
	var b strings.Builder
	for i, cl := range []struct {
		name string
		c    obufClass
	}{{"normal", l.normal}, {"slave", l.replica}, {"pubsub", l.pubsub}} {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s %d %d %d", cl.name, uint64(cl.c.hard), uint64(cl.c.soft), cl.c.softSeconds) // unsigned, as Redis
	}
	return b.String()
}

// Redis's errors for a bad client-output-buffer-limit value.
var (
	errObufArgs  = resp.NewError("Wrong number of arguments in buffer limit configuration.")
	errObufClass = resp.NewError("Invalid client class specified in buffer limit configuration.")
	errObufValue = resp.NewError("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
)

// parseObufLimits applies a CONFIG SET value, "<class> <hard> <soft>
// <soft-seconds>" repeated, to cur; the classes not named keep their limits.
func parseObufLimits(cur obufLimits, value string) (obufLimits, error) {
	f := strings.Fields(value)
	if len(f)%4 != 0 {
		return cur, errObufArgs
	}
	for i := 0; i < len(f); i += 4 {
		var dst *obufClass
		switch strings.ToLower(f[i]) {
		case "normal":
			dst = &cur.normal
		case "slave", "replica":
			dst = &cur.replica
		case "pubsub":
			dst = &cur.pubsub
		default:
			return cur, errObufClass
		}
		hard, ok1 := memToUint(f[i+1])
		soft, ok2 := memToUint(f[i+2])
		secs := leadingInt(f[i+3])
		if !ok1 || !ok2 || secs < 0 {
			return cur, errObufValue
		}
		*dst = obufClass{int64(hard), int64(soft), secs}
	}
	return cur, nil
}

// leadingInt is C's strtoll: an optional sign and the digits that follow,
// 0 when there are none.
func leadingInt(s string) int64 {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	n, err := strconv.ParseInt(s[:j], 10, 64)
	if err != nil {
		return 0
	}
	return n
}
