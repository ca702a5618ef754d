package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"

	"github.com/slotraft/slotraft/cluster/server"
)

// newLogger builds the process logger: level debug|info|warn|error, format
// text|json, written to w (stderr in production, or the config file's
// logfile). Its level is the returned LevelVar, which CONFIG SET loglevel
// changes.
func newLogger(w io.Writer, level, format string) (*slog.Logger, *slog.LevelVar, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(strings.ToLower(level))); err != nil {
		return nil, nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	v := new(slog.LevelVar)
	v.Set(lv)
	opts := &slog.HandlerOptions{Level: v}
	switch strings.ToLower(format) {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), v, nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), v, nil
	default:
		return nil, nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
}

// logOutput is where the process logs: the config file's logfile when it
// names one (appended to, as Redis opens it), else stderr. close closes
// the file.
func logOutput(file *server.ConfigFile, stderr io.Writer) (w io.Writer, closeFn func(), err error) {
	path := ""
	if file != nil {
		path, _ = file.Value("logfile")
	}
	if path == "" {
		return stderr, func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		reason := err.Error()
		var errno syscall.Errno
		if errors.As(err, &errno) { // strerror's text, as Redis prints it
			t := errno.Error()
			reason = strings.ToUpper(t[:1]) + t[1:]
		}
		//lint:ignore ST1005 Redis's text, which the process prints as its reason to exit
		return nil, nil, fmt.Errorf("Can't open the log file: %s", reason)
	}
	return f, func() { _ = f.Close() }, nil
}

// procLog is the process's logger and its level.
type procLog struct {
	logger     *slog.Logger
	level      *slog.LevelVar
	levelGiven bool       // --log-level was given (command line, environment or file directive)
	flagLevel  slog.Level // the level it gave
}

// flagWins sets the level --log-level gave again after the config file's
// loglevel, when it was given: a flag beats the file.
func (p procLog) flagWins(srv *server.Server) {
	if p.levelGiven {
		p.level.Set(p.flagLevel)
		srv.SetLogLevelVar(p.level)
	}
}

// flagGiven says whether flag name was set (on the command line, from the
// environment or by a config file directive) rather than defaulted.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
