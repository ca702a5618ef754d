package fsm

import (
	"strconv"

	"github.com/slotraft/slotraft/resp"
)

// PING, ECHO and TIME. The node answers them itself (it runs PING and ECHO
// and TIME for clients with these entries' metadata); scripts call them
// through the table like any other command, so inside Apply TIME is the
// entry's time, the same on every replica.

func init() {
	conn := commandsOf("connection")
	connACL := []string{"fast", "connection"}
	ping := conn("ping", -1, fF, 0, 0, 0, connACL, "1.0.0", "Returns the server's liveliness response.", "O(1)", pingCmd)
	ping.Meta.Tips = tipsAllOK
	t := commandsOf("server")("time", 1, resp.FlagLoading|resp.FlagStale|fF, 0, 0, 0, []string{"fast"}, "2.6.0",
		"Returns the server time.", "O(1)", timeCmd)
	t.Meta.Tips = tipsNondet
	register(ping, conn("echo", 2, fF, 0, 0, 0, connACL, "1.0.0", "Returns the given string.", "O(1)", echoCmd), t)
}

func pingCmd(_ *Ctx, args [][]byte) resp.Value {
	if len(args) == 2 {
		return resp.Bulk(args[1])
	}
	if len(args) > 2 {
		return errReply(resp.ErrWrongArgs("ping"))
	}
	return resp.Status("PONG")
}

func echoCmd(_ *Ctx, args [][]byte) resp.Value { return resp.Bulk(args[1]) }

// timeCmd is TIME at the command's time: unix seconds and microseconds.
func timeCmd(c *Ctx, _ [][]byte) resp.Value { return TimeReply(c.Now * 1000) }

// TimeReply is TIME's reply for a time in unix microseconds.
func TimeReply(micros int64) resp.Value {
	return resp.Array(resp.BulkString(strconv.FormatInt(micros/1_000_000, 10)),
		resp.BulkString(strconv.FormatInt(micros%1_000_000, 10)))
}
