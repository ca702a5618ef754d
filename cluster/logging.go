package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/slotraft/slotraft/cluster/transport"
)

// hclogAdapter routes hashicorp/raft's hclog output into slog: one slog
// record per event, with hclog's level mapped to the nearest slog level
// (Trace becomes Debug-4) and hclog's name kept as a "logger" attribute.
type hclogAdapter struct {
	l     *slog.Logger
	name  string
	args  []any
	level *slog.LevelVar
}

// newHCLog returns an hclog.Logger writing to l at the given minimum level.
func newHCLog(l *slog.Logger, name string, min slog.Level) hclog.Logger {
	lv := new(slog.LevelVar)
	lv.Set(min)
	return &hclogAdapter{l: l, name: name, level: lv}
}

const slogTrace = slog.LevelDebug - 4

func toSlog(lv hclog.Level) slog.Level {
	switch lv {
	case hclog.Trace:
		return slogTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	case hclog.Off:
		return slog.LevelError + 100
	default:
		return slog.LevelInfo
	}
}

func toHCLog(lv slog.Level) hclog.Level {
	switch {
	case lv <= slogTrace:
		return hclog.Trace
	case lv <= slog.LevelDebug:
		return hclog.Debug
	case lv <= slog.LevelInfo:
		return hclog.Info
	case lv <= slog.LevelWarn:
		return hclog.Warn
	case lv <= slog.LevelError:
		return hclog.Error
	default:
		return hclog.Off
	}
}

func (a *hclogAdapter) enabled(lv slog.Level) bool {
	return lv >= a.level.Level() && a.l.Enabled(context.Background(), lv)
}

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	lv := a.levelOf(toSlog(level), msg, args)
	if !a.enabled(lv) {
		return
	}
	attrs := make([]any, 0, len(a.args)+len(args)+2)
	if a.name != "" {
		attrs = append(attrs, "logger", a.name)
	}
	attrs = append(attrs, a.args...)
	attrs = append(attrs, fixArgs(args)...)
	a.l.Log(context.Background(), lv, msg, attrs...)
}

// peerTrouble are hashicorp/raft's ERROR events about a peer it cannot
// reach or that answered with a newer term: the state of another node or
// of the network, which this node rides out (it retries with backoff or
// steps down), so they are warnings here. A whole cluster stopping at
// once (Ctrl-C on `make run`) logged dozens of them as errors. Failures
// of this node's own disk or state stay errors.
var peerTrouble = map[string]slog.Level{
	"failed to heartbeat to":                    slog.LevelWarn,
	"failed to appendEntries to":                slog.LevelWarn,
	"failed to pipeline appendEntries":          slog.LevelWarn,
	"failed to start pipeline replication to":   slog.LevelWarn,
	"failed to make requestVote RPC":            slog.LevelWarn,
	"failed to send snapshot to":                slog.LevelWarn,
	"peer has newer term, stopping replication": slog.LevelInfo,
}

// levelOf is the level an event is logged at: hclog's, lowered for a
// peer's trouble (peerTrouble) and for an error that only says a
// connection was closed, which is how this node's own shutdown ends the
// transport's readers ("failed to decode incoming command … use of closed
// network connection").
func (a *hclogAdapter) levelOf(lv slog.Level, msg string, args []any) slog.Level {
	if lv < slog.LevelWarn {
		return lv
	}
	if to, ok := peerTrouble[msg]; ok && strings.HasPrefix(a.name, "raft") {
		lv = min(lv, to)
	}
	for _, v := range args {
		if err, ok := v.(error); ok && (errors.Is(err, net.ErrClosed) || errors.Is(err, transport.ErrClosed)) {
			return slog.LevelDebug
		}
	}
	return lv
}

// fixArgs makes hclog's key/value list safe for slog: an odd trailing value
// gets a key, non-string keys are stringified, and values become what
// slog prints well (attrValue).
func fixArgs(args []any) []any {
	out := make([]any, 0, len(args)+1)
	for i := 0; i+1 < len(args); i += 2 {
		k, ok := args[i].(string)
		if !ok {
			k = slog.AnyValue(args[i]).String()
		}
		out = append(out, k, attrValue(args[i+1]))
	}
	if len(args)%2 == 1 {
		out = append(out, "EXTRA_VALUE_AT_END", attrValue(args[len(args)-1]))
	}
	return out
}

// attrValue turns an hclog value into one slog's handlers print as hclog
// would have: hclog.Fmt is formatted (JSON printed it as ["%+v",…]), a
// duration is "10ms" rather than nanoseconds, Stringers (raft's states,
// suffrage) are their text, and structs (raft.Server) are printed with
// their field names instead of JSON's numbers for enums.
func attrValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int, int32, int64, uint, uint32, uint64, float64, error:
		return v
	case hclog.Format:
		if len(x) == 0 {
			return ""
		}
		f, ok := x[0].(string)
		if !ok {
			return fmt.Sprint(x...)
		}
		return fmt.Sprintf(f, x[1:]...)
	case hclog.Quote:
		return strconv.Quote(string(x))
	case hclog.Hex:
		return "0x" + strconv.FormatInt(int64(x), 16)
	case hclog.Octal:
		return "0" + strconv.FormatInt(int64(x), 8)
	case hclog.Binary:
		return "0b" + strconv.FormatInt(int64(x), 2)
	case time.Duration:
		return x.String()
	case fmt.Stringer:
		return x.String()
	default:
		return fmt.Sprintf("%+v", v)
	}
}

func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) IsTrace() bool { return a.enabled(slogTrace) }
func (a *hclogAdapter) IsDebug() bool { return a.enabled(slog.LevelDebug) }
func (a *hclogAdapter) IsInfo() bool  { return a.enabled(slog.LevelInfo) }
func (a *hclogAdapter) IsWarn() bool  { return a.enabled(slog.LevelWarn) }
func (a *hclogAdapter) IsError() bool { return a.enabled(slog.LevelError) }

func (a *hclogAdapter) ImpliedArgs() []any { return a.args }

func (a *hclogAdapter) With(args ...any) hclog.Logger {
	c := *a
	c.args = append(append([]any(nil), a.args...), fixArgs(args)...)
	return &c
}

func (a *hclogAdapter) Name() string { return a.name }

func (a *hclogAdapter) Named(name string) hclog.Logger {
	c := *a
	if c.name != "" {
		c.name += "." + name
	} else {
		c.name = name
	}
	return &c
}

func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	c := *a
	c.name = name
	return &c
}

func (a *hclogAdapter) SetLevel(level hclog.Level) { a.level.Set(toSlog(level)) }
func (a *hclogAdapter) GetLevel() hclog.Level      { return toHCLog(a.level.Level()) }

func (a *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

func (a *hclogAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return stdWriter{a}
}

// stdWriter turns lines written by a standard *log.Logger (memberlist's:
// "[WARN] memberlist: Refuting a suspect message (from: n2)") into events
// at the line's level, without the level tag and the logger's own name,
// which the record's level and "logger" attribute carry.
type stdWriter struct{ a *hclogAdapter }

// closedByUs reports whether a line's error is this node's own closing:
// Go's closed connection, or the bus transport closed (its ErrClosed).
func closedByUs(msg string) bool {
	return strings.Contains(msg, "use of closed network connection") || strings.Contains(msg, transport.ErrClosed.Error())
}

// stdLevels are the tags memberlist puts before its lines.
var stdLevels = []struct {
	tag string
	lv  hclog.Level
}{
	{"[ERR] ", hclog.Error}, {"[ERROR] ", hclog.Error}, {"[WARN] ", hclog.Warn},
	{"[INFO] ", hclog.Info}, {"[DEBUG] ", hclog.Debug}, {"[TRACE] ", hclog.Trace},
}

func (w stdWriter) Write(p []byte) (int, error) {
	msg := strings.TrimRight(string(p), "\n")
	lv := hclog.Info
	for _, l := range stdLevels {
		if rest, ok := strings.CutPrefix(msg, l.tag); ok {
			msg, lv = rest, l.lv
			break
		}
	}
	if base := w.a.name[strings.LastIndex(w.a.name, ".")+1:]; base != "" {
		msg = strings.TrimPrefix(msg, base+": ")
	}
	if lv >= hclog.Warn && closedByUs(msg) {
		lv = hclog.Debug // this node closing its own listener or bus (levelOf)
	}
	w.a.Log(lv, msg)
	return len(p), nil
}
