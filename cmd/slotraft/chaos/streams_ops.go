package chaos

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The streams workload's operation kinds (see streams.go). Each XADD
// carries one field, streamField, whose value is unique.
const (
	streamField = "v"
	streamGroup = "g"
	// readCount bounds the entries one XREADGROUP delivers.
	readCount = 5
	// pendingMax bounds the final XPENDING's extended form.
	pendingMax = 1_000_000
)

func init() {
	for name, k := range map[string]opKind{
		"XADD": {write: true, args: func(op *Op) ([]any, int8) { return []any{"xadd", op.Key, "*", streamField, op.Value}, 1 }, decode: decodeText},
		"XGROUP CREATE": {write: true, args: func(op *Op) ([]any, int8) {
			return []any{"xgroup", "create", op.Key, streamGroup, "0", "mkstream"}, 2
		}, decode: decodeText, nothing: replyStarts("BUSYGROUP")},
		"XREADGROUP": {write: true, args: xreadgroupArgs, decode: decodeXRead,
			newCmd: func(ctx context.Context, args []any) redis.Cmder { return redis.NewXStreamSliceCmd(ctx, args...) }},
		"XACK": {write: true, args: func(op *Op) ([]any, int8) {
			args := []any{"xack", op.Key, streamGroup}
			for _, id := range op.IDs {
				args = append(args, id)
			}
			return args, 1
		}, decode: decodeInt},
		"XRANGE": {args: func(op *Op) ([]any, int8) { return []any{"xrange", op.Key, "-", "+"}, 1 }, decode: decodeXRange,
			newCmd: func(ctx context.Context, args []any) redis.Cmder { return redis.NewXMessageSliceCmd(ctx, args...) }},
		"XPENDING": {args: func(op *Op) ([]any, int8) {
			return []any{"xpending", op.Key, streamGroup, "-", "+", pendingMax}, 1
		}, decode: decodeXPending, nothing: replyStarts("NOGROUP"),
			newCmd: func(ctx context.Context, args []any) redis.Cmder { return redis.NewXPendingExtCmd(ctx, args...) }},
		"XINFO GROUPS": {args: func(op *Op) ([]any, int8) { return []any{"xinfo", "groups", op.Key}, 2 }, decode: decodeXInfoGroups,
			nothing: replyStarts("ERR no such key"),
			newCmd: func(ctx context.Context, args []any) redis.Cmder {
				return redis.NewXInfoGroupsCmd(ctx, args[2].(string))
			}},
	} {
		opKinds[name] = k
	}
}

// replyStarts matches error replies that begin with prefix.
func replyStarts(prefix string) func(error) bool {
	return func(err error) bool {
		var rerr redis.Error
		return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), prefix)
	}
}

// xreadgroupArgs: new entries (">") for op.Consumer, blocking when Block.
func xreadgroupArgs(op *Op) ([]any, int8) {
	args := []any{"xreadgroup", "group", streamGroup, op.Consumer, "count", readCount}
	if op.Block > 0 {
		args = append(args, "block", op.Block)
	}
	args = append(args, "streams", op.Key, ">")
	return args, int8(len(args) - 2)
}

// decodeXRead: nil (the block passed, or nothing new) leaves Nil set.
func decodeXRead(op *Op, c redis.Cmder) error {
	streams, err := c.(*redis.XStreamSliceCmd).Result()
	if errors.Is(err, redis.Nil) {
		op.Nil = true
		return nil
	}
	for _, s := range streams {
		op.Entries = append(op.Entries, entries(s.Messages)...)
	}
	return err
}

func decodeXRange(op *Op, c redis.Cmder) error {
	msgs, err := c.(*redis.XMessageSliceCmd).Result()
	op.Entries = entries(msgs)
	return err
}

func entries(msgs []redis.XMessage) []Entry {
	out := make([]Entry, len(msgs))
	for i, m := range msgs {
		v, _ := m.Values[streamField].(string)
		out[i] = Entry{ID: m.ID, Value: v}
	}
	return out
}

func decodeXPending(op *Op, c redis.Cmder) error {
	pend, err := c.(*redis.XPendingExtCmd).Result()
	for _, p := range pend {
		op.Entries = append(op.Entries, Entry{ID: p.ID, Consumer: p.Consumer})
	}
	return err
}

// decodeXInfoGroups keeps the workload's group; Nil when it is not there.
func decodeXInfoGroups(op *Op, c redis.Cmder) error {
	groups, err := c.(*redis.XInfoGroupsCmd).Result()
	op.Nil = true
	for _, g := range groups {
		if g.Name == streamGroup {
			op.Nil = false
			op.Group = &Group{Name: g.Name, Pending: g.Pending, LastDeliveredID: g.LastDeliveredID, EntriesRead: g.EntriesRead, Lag: g.Lag}
		}
	}
	return err
}

// streamID is a parsed entry ID: milliseconds and sequence.
type streamID struct{ ms, seq uint64 }

func parseID(s string) (streamID, bool) {
	a, b, ok := strings.Cut(s, "-")
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return streamID{ms, seq}, ok && err1 == nil && err2 == nil
}

// less orders IDs as the stream does.
func (a streamID) less(b streamID) bool { return a.ms < b.ms || (a.ms == b.ms && a.seq < b.seq) }
