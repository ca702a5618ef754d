package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// The Lua debugger: Redis 7.2's LDB (eval.c, the ldb* functions), for
// SCRIPT DEBUG YES. A debugging session runs one EVAL against a private
// copy of its group's state (ldb_copy.go) and talks to the client over its
// connection as Redis's does: when the script stops (a step, a breakpoint,
// redis.breakpoint(), a timeout), the debugger sends its log lines as one
// array of simple strings and reads the client's debugger commands (RESP
// arrays, parsed as Redis's ldbReplParseCommand parses them:
// ldb_parse.go) until one resumes the script; when the script ends, it
// sends the last lines and "<endsession>", and the EVAL's reply follows.
//
// The parts: ldb_hook.go is the line hook (where the script stops),
// ldb_cmds.go the debugger's commands, ldb_value.go how values and
// replies are shown, ldb_api.go what the script's redis.* API logs
// (redis.debug, redis.breakpoint, the commands it calls and their replies).

// Redis's limits (eval.c).
const (
	ldbMaxBreakpoints = 64      // LDB_BREAKPOINTS_MAX
	ldbMaxLenDefault  = 256     // LDB_MAX_LEN_DEFAULT: replies and values logged are trimmed to it
	ldbMaxValueDepth  = 10      // LDB_MAX_VALUES_DEPTH (LUA_MINSTACK/2): nesting shown of a table
	ldbMaxCommandBuf  = 1 << 20 // the client's unparsed input past which the script fails
	ldbCountEvery     = 100_000 // instructions between the count hook's calls (timeouts)
	ldbReadSize       = 1024    // bytes read from the client at a time
	ldbDefaultTimeout = 5 * time.Second
)

// ldbMaxLogBytes bounds the lines waiting to be sent (slotraft's bound:
// Redis keeps them all, and redis.debug() in a loop between two stops
// could pile up the whole instruction budget's worth). Past it, lines are
// dropped until the next send, and one line says so.
const ldbMaxLogBytes = 8 << 20

// errLDBGone is the client's end of the connection gone (or the session
// ended from outside): the script goes on without stopping, as Redis's.
var errLDBGone = errors.New("the debugging client is gone")

// ldb is one debugging session's debugger: Redis's global ldbState, one
// per session here.
type ldb struct {
	conn io.ReadWriter
	end  *DebugEnd

	logs     []string
	logBytes int
	dropped  bool // lines were dropped since the last send (ldbMaxLogBytes)

	src         []string  // the script's lines
	scopes      ldbScopes // its locals' scopes (ldb_locals.go)
	bp          []int     // breakpoints, in the order set
	step        bool      // stop at the next line; also: log what redis.call does
	luabp       bool      // redis.breakpoint() was called: stop at the next line
	currentLine int
	cbuf        []byte // the client's input not parsed yet
	maxlen      int    // trim logged replies and values to this (0: no limit)
	hintSent    bool   // the "maxlen 0" hint was given once

	// The run: its main state, a thread for the code the debugger runs
	// (eval, redis), and what the line hook remembers.
	r         *scriptRun
	L         *lua.LState
	thread    *lua.LState
	inHook    bool
	lastFrame unsafe.Pointer
	lastPC    int
	count     int64

	// clock and timeLimit: a script that runs timeLimit without stopping
	// stops ("timeout reached, infinite loop?"); started is when it last
	// resumed.
	clock     func() time.Duration
	timeLimit time.Duration
	started   time.Duration
}

// newLDB starts a session's debugger for the script body, as Redis's
// ldbEnable and ldbStartSession set it up: stopping at the first line.
func newLDB(body []byte, opts DebugOpts) *ldb {
	l := &ldb{conn: opts.Conn, end: opts.End, step: true, maxlen: ldbMaxLenDefault,
		clock: opts.Clock, timeLimit: opts.TimeLimit}
	if l.timeLimit <= 0 {
		l.timeLimit = ldbDefaultTimeout
	}
	if l.clock != nil {
		l.started = l.clock()
	}
	src := bytes.TrimRight(body, "\r\n")
	if len(src) > 0 {
		l.src = strings.Split(string(src), "\n")
	}
	return l
}

// log queues a line for the client, unless ldbMaxLogBytes are queued.
func (l *ldb) log(line string) {
	if l.logBytes+len(line) > ldbMaxLogBytes {
		if !l.dropped {
			l.dropped = true
			l.logs = append(l.logs, fmt.Sprintf("<error> more than %d bytes of debugger output before the next stop: lines dropped", ldbMaxLogBytes))
		}
		return
	}
	l.logMust(line)
}

// logMust queues a line the client must get whatever is queued: where the
// script stopped, the session's end.
func (l *ldb) logMust(line string) {
	l.logs = append(l.logs, line)
	l.logBytes += len(line)
}

// logMaxLen is log for replies and values: trimmed to maxlen bytes, with a
// hint the first time (ldbLogWithMaxLen).
func (l *ldb) logMaxLen(line string) {
	trimmed := false
	if l.maxlen > 0 && len(line) > l.maxlen {
		line = line[:l.maxlen] + " ..."
		trimmed = true
	}
	l.log(line)
	if trimmed && !l.hintSent {
		l.hintSent = true
		l.log("<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.")
	}
}

// send writes the queued lines as an array of simple strings, line feeds
// and carriage returns made spaces (ldbSendLogs). A write error is not
// reported: the next read finds the client gone.
func (l *ldb) send() {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(l.logs))
	for _, line := range l.logs {
		b.WriteByte('+')
		b.WriteString(strings.NewReplacer("\r", " ", "\n", " ").Replace(line))
		b.WriteString("\r\n")
	}
	l.logs, l.logBytes, l.dropped = l.logs[:0], 0, false
	_, _ = l.conn.Write(b.Bytes())
}

// sourceLine is line n of the script (from 1), or Redis's text for a line
// out of range.
func (l *ldb) sourceLine(n int) string {
	if n < 1 || n > len(l.src) {
		return "<out of range source code line>"
	}
	return l.src[n-1]
}

func (l *ldb) isBreakpoint(line int) bool {
	for _, b := range l.bp {
		if b == line {
			return true
		}
	}
	return false
}

// logSourceLine logs line n with its marks: -> for the current line, #
// for a breakpoint (ldbLogSourceLine).
func (l *ldb) logSourceLine(n int) { l.log(l.sourceLineText(n)) }

func (l *ldb) sourceLineText(n int) string {
	prefix := "   "
	switch cur, bp := n == l.currentLine, l.isBreakpoint(n); {
	case cur && bp:
		prefix = "->#"
	case cur:
		prefix = "-> "
	case bp:
		prefix = "  #"
	}
	return fmt.Sprintf("%s%-3d %s", prefix, n, l.sourceLine(n))
}

// repl reads and runs the client's debugger commands until one resumes
// the script (ldbRepl); errLDBGone when the client is gone, after which
// the script runs to its end without stopping.
func (l *ldb) repl(L *lua.LState) error {
	for {
		argv, err := l.readCommand(L)
		if err != nil {
			l.step, l.bp = false, nil
			return err
		}
		if l.run(L, argv) {
			return nil
		}
	}
}

// readCommand returns the next debugger command, reading the client as
// needed. A protocol error or too much unparsed input fails the script,
// as in Redis.
func (l *ldb) readCommand(L *lua.LState) ([][]byte, error) {
	buf := make([]byte, ldbReadSize)
	for {
		argv, status := parseLDBCommand(l.cbuf)
		switch status {
		case ldbParsed:
			l.cbuf = l.cbuf[:0] // what came after it is dropped, as Redis drops it
			return argv, nil
		case ldbProtocolError:
			raiseErr(L, "protocol error")
		}
		n, err := l.conn.Read(buf)
		if n <= 0 {
			if err == nil {
				err = io.ErrNoProgress
			}
			return nil, fmt.Errorf("%w: %w", errLDBGone, err)
		}
		l.cbuf = append(l.cbuf, buf[:n]...)
		if len(l.cbuf) > ldbMaxCommandBuf {
			l.cbuf = nil
			raiseErr(L, "max client buffer reached")
		}
	}
}
