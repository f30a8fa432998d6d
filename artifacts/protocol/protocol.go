// Package protocol is what the operator and calaf-runner exchange over a pods/exec stream:
// one Request as JSON on the runner's stdin, one framed Result on its stdout. It depends on
// the standard library only, so that the runner stays small.
package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Version of the protocol; a runner refuses requests of another version.
const Version = 1

// Kinds of artifacts the runner executes.
const (
	KindJavaScript = "javascript"
	KindShell      = "shell"
)

// Error kinds of a Result.
const (
	// ErrorException: the JavaScript threw, or a shell script exited non-zero.
	ErrorException = "exception"
	// ErrorTimeout: the operation ran past its deadline and was stopped.
	ErrorTimeout = "timeout"
	// ErrorInvalid: the request could not be run (bad source, unknown kind, version).
	ErrorInvalid = "invalid"
)

// Limits bound what a run may produce. Zero values mean the defaults.
type Limits struct {
	// OutputBytes bounds each of stdout and stderr captured from one command.
	OutputBytes int `json:"outputBytes,omitempty"`
	// LogBytes bounds the log lines kept (the oldest are dropped).
	LogBytes int `json:"logBytes,omitempty"`
	// ValueBytes bounds the JSON of the attributes and outputs together.
	ValueBytes int `json:"valueBytes,omitempty"`
}

// Defaults of Limits.
const (
	DefaultOutputBytes = 1 << 20
	DefaultLogBytes    = 32 << 10
	DefaultValueBytes  = 256 << 10
	// MaxRequestBytes bounds a request read from stdin.
	MaxRequestBytes = 64 << 20
)

// WithDefaults returns l with zero values replaced by the defaults.
func (l Limits) WithDefaults() Limits {
	if l.OutputBytes <= 0 {
		l.OutputBytes = DefaultOutputBytes
	}
	if l.LogBytes <= 0 {
		l.LogBytes = DefaultLogBytes
	}
	if l.ValueBytes <= 0 {
		l.ValueBytes = DefaultValueBytes
	}
	return l
}

// Request asks the runner to run one operation once.
type Request struct {
	Version int `json:"version"`
	// Kind is KindJavaScript or KindShell.
	Kind string `json:"kind"`
	// Operation is "Interface.operation".
	Operation string `json:"operation"`
	// Artifact is the implementing artifact: its name and package path.
	Artifact ArtifactInfo `json:"artifact"`
	// Source is the artifact's content.
	Source string `json:"source"`
	// Files are the operation's companion files (its dependencies), by package path.
	Files map[string]string `json:"files,omitempty"`
	// Inputs are the evaluated operation inputs.
	Inputs map[string]any `json:"inputs,omitempty"`
	// Node is the node template the operation belongs to.
	Node NodeInfo `json:"node"`
	// Pod is where the runner runs.
	Pod PodInfo `json:"pod"`
	// Service is the Calaf Service.
	Service ServiceInfo `json:"service"`
	// TimeoutMillis is the operation's deadline; the runner stops it there.
	TimeoutMillis int64  `json:"timeoutMillis"`
	Limits        Limits `json:"limits,omitempty"`
}

// ArtifactInfo names the artifact that implements an operation.
type ArtifactInfo struct {
	Name string `json:"name,omitempty"`
	File string `json:"file"`
	Type string `json:"type,omitempty"`
}

// NodeInfo describes the node template.
type NodeInfo struct {
	Name       string         `json:"name"`
	Type       string         `json:"type,omitempty"`
	Properties map[string]any `json:"properties,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// PodInfo describes the pod and container the runner runs in.
type PodInfo struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Container string `json:"container"`
	UID       string `json:"uid,omitempty"`
	IP        string `json:"ip,omitempty"`
	Node      string `json:"node,omitempty"`
}

// ServiceInfo names the Calaf Service.
type ServiceInfo struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Revision  string `json:"revision,omitempty"`
}

// Result is what one run produced.
type Result struct {
	Version int `json:"version"`
	// Attributes set by the artifact (calaf.setAttribute).
	Attributes map[string]any `json:"attributes,omitempty"`
	// Outputs set by the artifact (calaf.setOutput): TOSCA operation outputs.
	Outputs map[string]any `json:"outputs,omitempty"`
	// Logs are the lines the artifact logged (the newest, within the limit).
	Logs []string `json:"logs,omitempty"`
	// LogsDropped counts the oldest lines dropped to stay within the limit.
	LogsDropped int `json:"logsDropped,omitempty"`
	// Error is empty on success.
	Error     string `json:"error,omitempty"`
	ErrorKind string `json:"errorKind,omitempty"`
	// Stderr is the tail of the standard error of the failing command (for shell
	// artifacts, the script's; for JavaScript, the last command that exited non-zero).
	Stderr string `json:"stderr,omitempty"`
	// ExitCode of a shell script, or of the last failing command.
	ExitCode int `json:"exitCode,omitempty"`
	// DurationMillis is the time the runner spent, from reading the request to the result.
	DurationMillis int64 `json:"durationMillis"`
	// Commands counts the commands the artifact ran.
	Commands int `json:"commands,omitempty"`
}

// Failed tells whether the run failed.
func (r *Result) Failed() bool { return r.Error != "" }

// frameMarker starts the result frame on the runner's stdout: the marker, the length of
// the JSON in bytes, a newline, the JSON, a newline.
const frameMarker = "\n#calaf-result/1 "

// WriteResult writes a framed result.
func WriteResult(w io.Writer, result *Result) error {
	result.Version = Version
	data, err := json.Marshal(result)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.WriteString(frameMarker)
	buf.WriteString(strconv.Itoa(len(data)))
	buf.WriteByte('\n')
	buf.Write(data)
	buf.WriteByte('\n')
	_, err = w.Write(buf.Bytes())
	return err
}

// ErrNoResult says the output holds no complete result frame (the runner died, was
// killed, or is not a runner).
var ErrNoResult = errors.New("no result from the runner")

// ReadResult finds the last result frame in a runner's stdout. Anything around it (which a
// runner never writes, but a broken container might) is ignored.
func ReadResult(stdout []byte) (*Result, error) {
	at := bytes.LastIndex(stdout, []byte(frameMarker))
	if at < 0 {
		return nil, ErrNoResult
	}
	rest := stdout[at+len(frameMarker):]
	line, body, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return nil, ErrNoResult
	}
	n, err := strconv.Atoi(string(line))
	if err != nil || n < 0 || n > len(body) {
		return nil, fmt.Errorf("%w: truncated frame", ErrNoResult)
	}
	result := &Result{}
	if err := json.Unmarshal(body[:n], result); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoResult, err)
	}
	if result.Version != Version {
		return nil, fmt.Errorf("runner speaks protocol %d, want %d", result.Version, Version)
	}
	return result, nil
}

// requestMarker starts a request frame on the runner's stdin: the marker, the length of
// the JSON in bytes, a newline, the JSON. The runner reads exactly that much, so it never
// depends on the stream's end being signalled.
const requestMarker = "#calaf-request/1 "

// WriteRequest writes a framed request.
func WriteRequest(w io.Writer, req *Request) error {
	req.Version = Version
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if len(data) > MaxRequestBytes {
		return fmt.Errorf("request of %d bytes is larger than %d bytes", len(data), MaxRequestBytes)
	}
	var buf bytes.Buffer
	buf.WriteString(requestMarker)
	buf.WriteString(strconv.Itoa(len(data)))
	buf.WriteByte('\n')
	buf.Write(data)
	_, err = w.Write(buf.Bytes())
	return err
}

// ReadRequest reads one framed request from r.
func ReadRequest(r io.Reader) (*Request, error) {
	br := bufio.NewReader(r)
	header, err := br.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	text, ok := strings.CutPrefix(strings.TrimSuffix(header, "\n"), requestMarker)
	if !ok {
		return nil, errors.New("not a Calaf request (calaf-runner is run by the Calaf operator)")
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 || n > MaxRequestBytes {
		return nil, fmt.Errorf("invalid request length %q", text)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(br, data); err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	req := &Request{}
	if err := json.Unmarshal(data, req); err != nil {
		return nil, fmt.Errorf("invalid request: %w", err)
	}
	if req.Version != Version {
		return nil, fmt.Errorf("request of protocol %d, this runner speaks %d", req.Version, Version)
	}
	return req, nil
}

// Tail returns at most n bytes of the end of s, cut at a line start when one is near.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < n/2 {
		s = s[i+1:]
	}
	return "…" + s
}
