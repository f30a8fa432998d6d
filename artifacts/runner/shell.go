package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"calaf.io/calaf/artifacts/protocol"
)

// shellName matches the input names that become environment variables of shell artifacts.
var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// runShell runs the artifact with /bin/sh. Inputs are environment variables (strings as
// they are, other values as JSON; all of them in $CALAF_INPUTS); the script sets
// attributes and outputs by writing name=value lines (value JSON, or else a string) to
// the files $CALAF_ATTRIBUTES and $CALAF_OUTPUTS. Its output lines are its logs.
func (r *execution) runShell(ctx context.Context) {
	req := r.req
	script, err := workPath(r.work, req.Artifact.File)
	if req.Artifact.File == "" {
		script, err = filepath.Join(r.work, "artifact.sh"), os.WriteFile(filepath.Join(r.work, "artifact.sh"), []byte(req.Source), 0o700)
	}
	if err != nil {
		r.errKind, r.err = protocol.ErrorInvalid, err.Error()
		return
	}
	attributes := filepath.Join(r.work, ".attributes")
	outputs := filepath.Join(r.work, ".outputs")
	for _, f := range []string{attributes, outputs} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			r.errKind, r.err = protocol.ErrorInvalid, err.Error()
			return
		}
	}
	inputs, _ := json.Marshal(orEmpty(req.Inputs))
	properties, _ := json.Marshal(orEmpty(req.Node.Properties))
	env := map[string]string{
		"CALAF_INPUTS":     string(inputs),
		"CALAF_PROPERTIES": string(properties),
		"CALAF_NODE":       req.Node.Name,
		"CALAF_POD":        req.Pod.Name,
		"CALAF_NAMESPACE":  req.Pod.Namespace,
		"CALAF_SERVICE":    req.Service.Name,
		"CALAF_OPERATION":  req.Operation,
		"CALAF_WORK_DIR":   r.work,
		"CALAF_ATTRIBUTES": attributes,
		"CALAF_OUTPUTS":    outputs,
	}
	for name, value := range req.Inputs {
		if !shellName.MatchString(name) || strings.HasPrefix(name, "CALAF_") {
			continue
		}
		if s, ok := value.(string); ok {
			env[name] = s
		} else {
			data, _ := json.Marshal(value)
			env[name] = string(data)
		}
	}
	stdout := &lineWriter{logs: r.logs}
	stderr := &lineWriter{logs: r.logs, prefix: "stderr: "}
	res := r.runCommand(ctx, command{Argv: []string{"/bin/sh", script}, Env: env}, stdout, stderr)
	stdout.flush()
	stderr.flush()
	if err := r.readValues("attribute", attributes); err != nil {
		r.errKind, r.err = protocol.ErrorException, err.Error()
	}
	if err := r.readValues("output", outputs); err != nil && r.err == "" {
		r.errKind, r.err = protocol.ErrorException, err.Error()
	}
	switch {
	case res.TimedOut && errors.Is(ctx.Err(), context.DeadlineExceeded):
		r.errKind, r.err = protocol.ErrorTimeout, r.timeoutMessage()
	case res.TimedOut:
		r.errKind, r.err = protocol.ErrorException, "stopped: the runner was terminated"
	case res.ExitCode != 0:
		r.errKind, r.err = protocol.ErrorException, fmt.Sprintf("%s exited with code %d", req.Artifact.File, res.ExitCode)
	}
}

// readValues reads name=value lines a shell artifact wrote.
func (r *execution) readValues(kind, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 64<<10), r.limits.ValueBytes)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, text, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("$CALAF_%sS: line %q is not name=value", strings.ToUpper(kind), line)
		}
		var value any
		if json.Unmarshal([]byte(text), &value) != nil {
			value = text
		}
		if err := r.values.set(kind, strings.TrimSpace(name), value); err != nil {
			return err
		}
	}
	return scanner.Err()
}
