package orchestration

import (
	"calaf.io/calaf/artifacts/protocol"
)

// redactRun hides secrets in what a run brought back from its pod before anything is cut
// short, split or encoded from it: every log line, stderr, the error, and the attributes
// and outputs it set, leaf by leaf.
func redactRun(redact Redactor, result *protocol.Result, err error) (*protocol.Result, error) {
	if result != nil {
		out := *result
		out.Logs = make([]string, len(result.Logs))
		for i, line := range result.Logs {
			out.Logs[i] = redact.String(line)
		}
		out.Stderr, out.Error = redact.String(result.Stderr), redact.String(result.Error)
		out.Attributes, out.Outputs = redactValues(redact, result.Attributes), redactValues(redact, result.Outputs)
		result = &out
	}
	if err != nil {
		if message := redact.String(err.Error()); message != err.Error() {
			err = &redactedError{message: message, err: err}
		}
	}
	return result, err
}

func redactValues(redact Redactor, values map[string]any) map[string]any {
	if values == nil {
		return nil
	}
	out := make(map[string]any, len(values))
	for name, value := range values {
		out[name] = redact.Value(value)
	}
	return out
}

// redactedError is an error whose message has secrets hidden; errors.Is and errors.As
// still see the error it stands for.
type redactedError struct {
	message string
	err     error
}

func (e *redactedError) Error() string { return e.message }
func (e *redactedError) Unwrap() error { return e.err }
