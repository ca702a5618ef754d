package cluster

import (
	"context"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
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
	lv := toSlog(level)
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

// fixArgs makes hclog's key/value list safe for slog: an odd trailing value
// gets a key, and non-string keys are stringified.
func fixArgs(args []any) []any {
	out := make([]any, 0, len(args)+1)
	for i := 0; i+1 < len(args); i += 2 {
		k, ok := args[i].(string)
		if !ok {
			k = slog.AnyValue(args[i]).String()
		}
		out = append(out, k, args[i+1])
	}
	if len(args)%2 == 1 {
		out = append(out, "EXTRA_VALUE_AT_END", args[len(args)-1])
	}
	return out
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

// stdWriter turns lines written by a standard *log.Logger into Info events.
type stdWriter struct{ a *hclogAdapter }

func (w stdWriter) Write(p []byte) (int, error) {
	msg := strings.TrimRight(string(p), "\n")
	lv := hclog.Info
	switch {
	case strings.HasPrefix(msg, "[ERR]"), strings.HasPrefix(msg, "[ERROR]"):
		lv = hclog.Error
	case strings.HasPrefix(msg, "[WARN]"):
		lv = hclog.Warn
	case strings.HasPrefix(msg, "[DEBUG]"):
		lv = hclog.Debug
	}
	w.a.Log(lv, msg)
	return len(p), nil
}
