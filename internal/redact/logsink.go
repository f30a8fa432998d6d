package redact

import (
	"errors"
	"fmt"

	"github.com/go-logr/logr"
)

// Logger returns a logger that writes through log every message, value and error with
// the secrets of registry hidden: whatever a log line says — a reconcile error, a
// stalled Service's message — it says it without them.
func Logger(log logr.Logger, registry *Registry) logr.Logger {
	sink := log.GetSink()
	if sink == nil {
		return log
	}
	if withDepth, ok := sink.(logr.CallDepthLogSink); ok {
		sink = withDepth.WithCallDepth(1) // this sink is one frame more
	}
	return logr.New(&logSink{sink: sink, registry: registry})
}

type logSink struct {
	sink     logr.LogSink
	registry *Registry
}

// Init does nothing: the sink wrapped was set up with the logger it came from.
func (s *logSink) Init(logr.RuntimeInfo) {}

func (s *logSink) Enabled(level int) bool { return s.sink.Enabled(level) }

func (s *logSink) Info(level int, msg string, keysAndValues ...any) {
	s.sink.Info(level, s.registry.String(msg), s.values(keysAndValues)...)
}

func (s *logSink) Error(err error, msg string, keysAndValues ...any) {
	if err != nil {
		if text := s.registry.String(err.Error()); text != err.Error() {
			err = errors.New(text)
		}
	}
	s.sink.Error(err, s.registry.String(msg), s.values(keysAndValues)...)
}

func (s *logSink) WithValues(keysAndValues ...any) logr.LogSink {
	return &logSink{sink: s.sink.WithValues(s.values(keysAndValues)...), registry: s.registry}
}

func (s *logSink) WithName(name string) logr.LogSink {
	return &logSink{sink: s.sink.WithName(name), registry: s.registry}
}

// values redacts the values of key-value pairs: strings, errors, what prints itself and
// lists of strings; the JSON-like others leaf by leaf.
func (s *logSink) values(keysAndValues []any) []any {
	secrets := s.registry.secrets()
	if secrets.Empty() {
		return keysAndValues
	}
	out := make([]any, len(keysAndValues))
	for i, v := range keysAndValues {
		switch value := v.(type) {
		case string:
			out[i] = secrets.String(value)
		case error:
			out[i] = secrets.String(value.Error())
		case fmt.Stringer:
			out[i] = secrets.String(value.String())
		case []string:
			redacted := make([]string, len(value))
			for j, item := range value {
				redacted[j] = secrets.String(item)
			}
			out[i] = redacted
		case map[string]any, []any:
			out[i] = secrets.Value(value)
		default:
			out[i] = v
		}
	}
	return out
}
