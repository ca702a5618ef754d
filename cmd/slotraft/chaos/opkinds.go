package chaos

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// opKind is how one kind of operation goes over the wire: the command it
// renders to, whether it changes state (an error after sending is then
// Unknown, not Fail), the reply it expects and how that reply fills the
// Op. A workload adds kinds to opKinds instead of growing switches.
type opKind struct {
	write bool
	// args renders op; keyPos is the index of its first key, for routing.
	args func(op *Op) (args []any, keyPos int8)
	// newCmd makes the reply type; nil is a generic redis.Cmd.
	newCmd func(ctx context.Context, args []any) redis.Cmder
	// decode fills op from a reply without error (or redis.Nil).
	decode func(op *Op, c redis.Cmder) error
	// nothing reports error replies that tell, without changing state,
	// that there is nothing to see (a missing stream or group, for final
	// reads) or nothing to do (BUSYGROUP): the op is OK with Nil set.
	nothing func(err error) bool
}

// opKinds is every kind of operation the workloads send.
var opKinds = map[string]opKind{
	"GET":      {args: keyArgs("get"), decode: decodeText},
	"SET":      {write: true, args: func(op *Op) ([]any, int8) { return []any{"set", op.Key, op.Value}, 1 }, decode: decodeText},
	"CAS":      {write: true, args: casArgs, decode: decodeInt},
	"INCRBY":   {write: true, args: func(op *Op) ([]any, int8) { return []any{"incrby", op.Key, op.N}, 1 }, decode: decodeInt},
	"SADD":     {write: true, args: func(op *Op) ([]any, int8) { return []any{"sadd", op.Key, op.Value}, 1 }, decode: decodeInt},
	"SMEMBERS": {args: keyArgs("smembers"), decode: decodeMembers},
	"LPUSH":    {write: true, args: func(op *Op) ([]any, int8) { return []any{"lpush", op.Key, op.Value}, 1 }, decode: decodeInt},
	"RPOP":     {write: true, args: keyArgs("rpop"), decode: decodeText},
	"BRPOP":    {write: true, args: brpopArgs, decode: decodeBRPOP},
	"LMOVE":    {write: true, args: lmoveArgs, decode: decodeText},
	"BLMOVE":   {write: true, args: lmoveArgs, decode: decodeText},
	"LRANGE":   {args: func(op *Op) ([]any, int8) { return []any{"lrange", op.Key, 0, -1}, 1 }, decode: decodeMembers},
}

func keyArgs(name string) func(op *Op) ([]any, int8) {
	return func(op *Op) ([]any, int8) { return []any{name, op.Key}, 1 }
}

func casArgs(op *Op) ([]any, int8) {
	return []any{"eval", casScript, 1, op.Key, op.Old, op.Value}, 3
}

// blockSecs renders a blocking timeout in milliseconds as Redis's seconds.
func blockSecs(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
}

func brpopArgs(op *Op) ([]any, int8) { return []any{"brpop", op.Key, blockSecs(op.Block)}, 1 }

// lmoveArgs: the right end of Key to the left end of To, as RPOPLPUSH.
func lmoveArgs(op *Op) ([]any, int8) {
	if op.Kind == "BLMOVE" {
		return []any{"blmove", op.Key, op.To, "right", "left", blockSecs(op.Block)}, 1
	}
	return []any{"lmove", op.Key, op.To, "right", "left"}, 1
}

// kindOf is op's kind; an unknown kind is a programming error.
func kindOf(op *Op) opKind {
	k, ok := opKinds[op.Kind]
	if !ok {
		panic("chaos: unknown operation kind " + op.Kind)
	}
	return k
}

// newCommand renders op as a command ready to send.
func newCommand(ctx context.Context, op *Op) redis.Cmder {
	k := kindOf(op)
	args, keyPos := k.args(op)
	var c redis.Cmder
	if k.newCmd != nil {
		c = k.newCmd(ctx, args)
	} else {
		c = redis.NewCmd(ctx, args...)
	}
	c.SetFirstKeyPos(keyPos)
	return c
}

// decodeReply fills op from the reply of a command that returned err. It
// returns the error that remains (nil when the reply was decoded).
func decodeReply(op *Op, c redis.Cmder, err error) error {
	k := kindOf(op)
	switch {
	case err == nil, errors.Is(err, redis.Nil):
		return k.decode(op, c)
	case k.nothing != nil && k.nothing(err):
		op.Nil, op.Result = true, err.Error()
		return nil
	}
	return err
}

func decodeText(op *Op, c redis.Cmder) error {
	s, err := c.(*redis.Cmd).Text()
	if errors.Is(err, redis.Nil) {
		op.Nil = true
		return nil
	}
	op.Result = s
	return err
}

func decodeInt(op *Op, c redis.Cmder) error {
	n, err := c.(*redis.Cmd).Int64()
	op.Result = strconv.FormatInt(n, 10)
	return err
}

func decodeMembers(op *Op, c redis.Cmder) error {
	m, err := c.(*redis.Cmd).StringSlice()
	op.Members = m
	return err
}

// decodeBRPOP: the reply is [list, element], or nil when the timeout
// passed with nothing to pop.
func decodeBRPOP(op *Op, c redis.Cmder) error {
	kv, err := c.(*redis.Cmd).StringSlice()
	switch {
	case errors.Is(err, redis.Nil):
		op.Nil = true
		return nil
	case err != nil:
		return err
	case len(kv) != 2:
		return errors.New("chaos: BRPOP replied " + strings.Join(kv, " "))
	}
	op.Result = kv[1]
	return nil
}

// blockFor is the blocking timeout of BRPOP, BLMOVE and XREADGROUP BLOCK:
// well within the op timeout, so that a blocking command that timed out
// with nothing returns nil (OK, empty) before the client gives up on it.
func blockFor(opTimeout time.Duration) time.Duration {
	return min(time.Second, opTimeout/2)
}
