package server

import (
	"log/slog"
)

// loglevel: Redis's five levels onto slog's. slotraft logs at slog's
// Debug, Info, Warn and Error; verbose sits between debug and notice
// (nothing of slotraft's is logged there today), nothing is above Error.

// LevelNothing is loglevel nothing: above every level slotraft logs at.
const LevelNothing = slog.LevelError + 4

var redisLogLevels = []struct {
	name  string
	level slog.Level
}{
	{"debug", slog.LevelDebug},
	{"verbose", slog.LevelDebug + 2},
	{"notice", slog.LevelInfo},
	{"warning", slog.LevelWarn},
	{"nothing", LevelNothing},
}

// LogLevelName is the Redis level CONFIG GET loglevel shows for l: the
// highest Redis level at or below it (slog's Error shows as warning,
// Redis's least verbose level that still logs).
func LogLevelName(l slog.Level) string {
	name := redisLogLevels[0].name
	for _, r := range redisLogLevels {
		if r.level <= l {
			name = r.name
		}
	}
	return name
}

func logLevelOf(name string) slog.Level {
	for _, r := range redisLogLevels {
		if r.name == name {
			return r.level
		}
	}
	return slog.LevelInfo
}

// SetLogLevelVar gives the server the level of the process's log
// handlers: CONFIG SET loglevel (and a config file's loglevel) sets it,
// and CONFIG GET shows it. Without one, loglevel is stored only.
func (s *Server) SetLogLevelVar(lv *slog.LevelVar) {
	s.logLevel.Store(lv)
	s.cfg.record("loglevel", LogLevelName(lv.Level()))
}

func applyLogLevel(s *Server, v configValue) error {
	if lv := s.logLevel.Load(); lv != nil {
		lv.Set(logLevelOf(v.text))
	}
	return nil
}
