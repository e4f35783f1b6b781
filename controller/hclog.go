package controller

import (
	"context"
	"io"
	"log"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// slogHCLog adapts hashicorp's hclog.Logger, which raft requires, onto the
// broker's slog.Logger. raft logs every state transition and heartbeat at
// info and debug; only warnings and errors are worth a broker operator's
// attention, so the adapter drops anything below its level (warn by default).
type slogHCLog struct {
	logger  *slog.Logger
	level   hclog.Level
	name    string
	implied []any
}

func newHCLog(logger *slog.Logger, level hclog.Level) hclog.Logger {
	return &slogHCLog{logger: logger, level: level}
}

// expectedRaftWarnings are raft warnings that are routine for sluice and
// would otherwise greet the operator on every start: a sole voter always
// reaches its first heartbeat timeout (that is how it elects itself). They
// are logged at info instead.
var expectedRaftWarnings = map[string]bool{
	"heartbeat timeout reached, starting election": true,
}

func (l *slogHCLog) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Warn && expectedRaftWarnings[msg] {
		level = hclog.Info
	}
	if level == hclog.Off || level < l.level {
		return
	}
	var sl slog.Level
	switch {
	case level <= hclog.Debug:
		sl = slog.LevelDebug
	case level == hclog.Info:
		sl = slog.LevelInfo
	case level == hclog.Warn:
		sl = slog.LevelWarn
	default:
		sl = slog.LevelError
	}
	l.logger.Log(context.Background(), sl, msg, args...)
}

func (l *slogHCLog) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *slogHCLog) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *slogHCLog) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *slogHCLog) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *slogHCLog) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l *slogHCLog) IsTrace() bool { return l.level <= hclog.Trace }
func (l *slogHCLog) IsDebug() bool { return l.level <= hclog.Debug }
func (l *slogHCLog) IsInfo() bool  { return l.level <= hclog.Info }
func (l *slogHCLog) IsWarn() bool  { return l.level <= hclog.Warn }
func (l *slogHCLog) IsError() bool { return l.level <= hclog.Error }

func (l *slogHCLog) ImpliedArgs() []any { return l.implied }

func (l *slogHCLog) With(args ...any) hclog.Logger {
	c := *l
	c.logger = l.logger.With(args...)
	c.implied = append(append([]any(nil), l.implied...), args...)
	return &c
}

func (l *slogHCLog) Name() string { return l.name }

func (l *slogHCLog) Named(name string) hclog.Logger {
	if l.name != "" {
		name = l.name + "." + name
	}
	return l.ResetNamed(name)
}

func (l *slogHCLog) ResetNamed(name string) hclog.Logger {
	c := *l
	c.name = name
	c.logger = l.logger.With("raft_logger", name)
	return &c
}

func (l *slogHCLog) SetLevel(level hclog.Level) { l.level = level }
func (l *slogHCLog) GetLevel() hclog.Level      { return l.level }

func (l *slogHCLog) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

func (l *slogHCLog) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return slogWriter{l}
}

// slogWriter forwards lines written by a standard-library logger at warn.
type slogWriter struct{ l *slogHCLog }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Warn(string(p))
	return len(p), nil
}
