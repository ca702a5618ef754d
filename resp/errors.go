package resp

import (
	"errors"
	"fmt"
	"strings"
)

// Error is a reply error with Redis's exact text, prefix included
// ("ERR …", "WRONGTYPE …", "MOVED …"). Compare with errors.Is against the
// sentinels below; wrap with %w to add context without changing the reply.
type Error struct{ text string }

// NewError makes an Error whose reply text is exactly text.
func NewError(text string) *Error { return &Error{text: text} }

// Errorf makes an Error from a format; the result should start with its prefix.
func Errorf(format string, args ...any) *Error { return &Error{text: fmt.Sprintf(format, args...)} }

func (e *Error) Error() string { return e.text }

// Prefix is the first word of the error, such as "ERR" or "MOVED".
func (e *Error) Prefix() string {
	p, _, _ := strings.Cut(e.text, " ")
	return p
}

// ErrorText is the reply text for any error: the text of the first *Error in
// its chain, or "ERR " + err.Error() for errors that are not Redis errors.
func ErrorText(err error) string {
	var re *Error
	if errors.As(err, &re) {
		return re.text
	}
	return "ERR " + err.Error()
}

// Redis 7.2's error texts used by many commands.
var (
	ErrWrongType      = NewError("WRONGTYPE Operation against a key holding the wrong kind of value")
	ErrNotInteger     = NewError("ERR value is not an integer or out of range")
	ErrNotFloat       = NewError("ERR value is not a valid float")
	ErrSyntax         = NewError("ERR syntax error")
	ErrOverflow       = NewError("ERR increment or decrement would overflow")
	ErrIncrNaNOrInf   = NewError("ERR increment would produce NaN or Infinity")
	ErrNoSuchKey      = NewError("ERR no such key")
	ErrStringTooLong  = NewError("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
	ErrOffsetRange    = NewError("ERR offset is out of range")
	ErrInvalidExpire  = NewError("ERR invalid expire time in 'set' command")
	ErrInvalidDBIndex = NewError("ERR DB index is out of range")
	ErrSelectCluster  = NewError("ERR SELECT is not allowed in cluster mode")
	ErrCrossSlot      = NewError("CROSSSLOT Keys in request don't hash to the same slot")
	ErrNoAuth         = NewError("NOAUTH Authentication required.")
	ErrClusterDown    = NewError("CLUSTERDOWN The cluster is down")
	ErrTryAgain       = NewError("TRYAGAIN Multiple keys request during rehashing of slot")
	// ErrOutcomeUnknown answers a write that reached the log but whose commit was
	// not seen before leadership was lost. It is deliberately not a redirect:
	// a client must not replay a write that may already be applied.
	ErrOutcomeUnknown = NewError("ERR write outcome unknown: leadership was lost before the commit was confirmed; the write may or may not have been applied")
)

// Transactions' errors (multi.c), which the server and the proxy both answer.
var (
	ErrExecWithoutMulti    = NewError("ERR EXEC without MULTI")
	ErrDiscardWithoutMulti = NewError("ERR DISCARD without MULTI")
	ErrMultiNested         = NewError("ERR MULTI calls can not be nested")
	ErrWatchInMulti        = NewError("ERR WATCH inside MULTI is not allowed")
	ErrExecAbort           = NewError("EXECABORT Transaction discarded because of previous errors.")
)

// ErrSubscribedContext is Redis's refusal of command name (lowercase) on a
// RESP2 connection subscribed to a channel, pattern or shard channel.
func ErrSubscribedContext(name string) *Error {
	return Errorf("ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", name)
}

// ErrWrongArgs is Redis's arity error for command name (as the client typed it, lowercased).
func ErrWrongArgs(name string) *Error {
	return Errorf("ERR wrong number of arguments for '%s' command", strings.ToLower(name))
}

// ErrUnknownCommand is Redis's error for an unknown command, quoting at most
// the first arguments like Redis does.
func ErrUnknownCommand(name []byte, args [][]byte) *Error {
	var b strings.Builder
	for _, a := range args {
		if b.Len() >= 128 {
			break
		}
		fmt.Fprintf(&b, "'%s' ", truncate(a, 128-b.Len()))
	}
	return Errorf("ERR unknown command '%s', with args beginning with: %s", truncate(name, 128), b.String())
}

// ErrSubcommandSyntax is Redis's addReplySubcommandSyntaxError: a
// subcommand given arguments it does not take.
func ErrSubcommandSyntax(container, sub []byte) *Error {
	return Errorf("ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP.", truncate(sub, 128), strings.ToUpper(string(container)))
}

// ErrUnknownSubcommand is Redis's error for an unknown subcommand of a container command.
func ErrUnknownSubcommand(container, sub []byte) *Error {
	return Errorf("ERR unknown subcommand '%s'. Try %s HELP.", truncate(sub, 128), strings.ToUpper(string(container)))
}

// ErrInternal answers a command whose implementation panicked (a bug),
// naming the command and the panic; the server recovers and goes on.
func ErrInternal(command string, panicked any) *Error {
	return Errorf("ERR internal error in '%s': %v", command, panicked)
}

// ErrMoved redirects a client to the node serving slot.
func ErrMoved(slot uint16, addr string) *Error { return Errorf("MOVED %d %s", slot, addr) }

// ErrAsk redirects one request to the node importing slot.
func ErrAsk(slot uint16, addr string) *Error { return Errorf("ASK %d %s", slot, addr) }

func truncate(b []byte, n int) string {
	if n < 0 {
		n = 0
	}
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}
