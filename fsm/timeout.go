package fsm

import (
	"math"
	"math/big"

	"github.com/slotraft/slotraft/resp"
)

// The timeout argument of every blocking command (BLPOP … BZMPOP), parsed
// in one place.

var (
	maxTimeoutMs = new(big.Float).SetInt64(math.MaxInt64) // exact at 64 bits
	thousand     = big.NewFloat(1000)
)

// blockDeadline parses a blocking timeout in seconds as Redis 7.2's
// getTimeoutFromObjectOrReply does (long double arithmetic, rounded up to
// the millisecond) and returns the absolute deadline in unix ms, or 0 for
// "block forever". now is the command's time.
func blockDeadline(now int64, b []byte) (int64, error) {
	x, err := resp.ParseLongDouble(b)
	if err != nil {
		return 0, resp.NewError("ERR timeout is not a float or out of range")
	}
	ms := new(big.Float).SetPrec(x.Prec()).Mul(x, thousand)
	if ms.Cmp(maxTimeoutMs) > 0 {
		return 0, resp.NewError("ERR timeout is out of range")
	}
	if ms.Sign() < 0 {
		if ms.Cmp(big.NewFloat(-1)) <= 0 { // ceil(ms) <= -1
			return 0, resp.NewError("ERR timeout is negative")
		}
		return 0, nil // (-1, 0) rounds up to 0: no timeout
	}
	t, acc := ms.Int64() // truncated towards zero
	if acc == big.Below {
		t++ // ceil; ms <= MaxInt64 is an integer bound so no overflow
	}
	if t == 0 {
		return 0, nil
	}
	if t > math.MaxInt64-now {
		return 0, resp.NewError("ERR timeout is out of range")
	}
	return now + t, nil
}
