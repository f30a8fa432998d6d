package framework

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// YAMLLanguageServer is yaml-language-server, the YAML language server editors run,
// driven over its standard input and output as an editor drives it (the Language Server
// Protocol): documents are opened in it and the diagnostics it publishes are read back.
type YAMLLanguageServer struct {
	cmd      *exec.Cmd
	in       io.WriteCloser
	messages chan map[string]any
	next     int
	// Stderr holds what the server wrote on its standard error.
	Stderr strings.Builder
}

// InstallYAMLLanguageServer installs yaml-language-server with the test ground's script
// (once, into the cache) and returns the path of its executable.
func InstallYAMLLanguageServer() (string, error) {
	script := filepath.Join(RepoRoot(), "test", "ground", "yaml-language-server.sh")
	out, err := exec.Command(script).Output()
	if err != nil {
		var stderr string
		if exit, ok := err.(*exec.ExitError); ok {
			stderr = string(exit.Stderr)
		}
		return "", fmt.Errorf("%s: %v\n%s", script, err, stderr)
	}
	return strings.TrimSpace(string(out)), nil
}

// StartYAMLLanguageServer runs the server at path with Node.js and initializes it.
func StartYAMLLanguageServer(path, root string) (*YAMLLanguageServer, error) {
	s := &YAMLLanguageServer{messages: make(chan map[string]any, 64)}
	s.cmd = exec.Command("node", path, "--stdio")
	s.cmd.Stderr = &s.Stderr
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go s.read(bufio.NewReader(out))
	init := map[string]any{"processId": nil, "rootUri": "file://" + root,
		"capabilities": map[string]any{"textDocument": map[string]any{"publishDiagnostics": map[string]any{}}}}
	if _, err := s.call("initialize", init, time.Minute); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.notify("initialized", map[string]any{}); err != nil {
		s.Stop()
		return nil, err
	}
	settings := map[string]any{"yaml": map[string]any{"validate": true, "completion": true, "hover": true,
		"schemaStore": map[string]any{"enable": false}}}
	return s, s.notify("workspace/didChangeConfiguration", map[string]any{"settings": settings})
}

// Diagnostic is one problem the server reports: its 0-based line and its message.
type Diagnostic struct {
	Line    int
	Message string
}

// Diagnostics opens a document (file://path, text) and returns the first diagnostics the
// server publishes for it; nonEmpty waits past empty ones (published before the schema
// was loaded) until timeout.
func (s *YAMLLanguageServer) Diagnostics(path, text string, nonEmpty bool, timeout time.Duration) ([]Diagnostic, error) {
	uri := "file://" + path
	s.next++
	open := map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "yaml", "version": 1, "text": text}}
	if err := s.notify("textDocument/didOpen", open); err != nil {
		return nil, err
	}
	deadline := time.After(timeout)
	for {
		select {
		case msg, ok := <-s.messages:
			if !ok {
				return nil, fmt.Errorf("yaml-language-server ended: %s", s.Stderr.String())
			}
			if s.answer(msg) || msg["method"] != "textDocument/publishDiagnostics" {
				continue
			}
			params, _ := msg["params"].(map[string]any)
			if params["uri"] != uri {
				continue
			}
			diags := decodeDiagnostics(params["diagnostics"])
			if len(diags) > 0 || !nonEmpty {
				return diags, nil
			}
		case <-deadline:
			return nil, fmt.Errorf("no diagnostics for %s within %s", uri, timeout)
		}
	}
}

func decodeDiagnostics(raw any) []Diagnostic {
	list, _ := raw.([]any)
	var diags []Diagnostic
	for _, item := range list {
		d, _ := item.(map[string]any)
		r, _ := d["range"].(map[string]any)
		start, _ := r["start"].(map[string]any)
		line, _ := start["line"].(float64)
		message, _ := d["message"].(string)
		diags = append(diags, Diagnostic{Line: int(line), Message: message})
	}
	return diags
}

// Stop ends the server.
func (s *YAMLLanguageServer) Stop() {
	s.in.Close()
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
	}
	_ = s.cmd.Wait()
}

// answer replies to a request of the server (configuration, capability registration):
// an editor with no settings beyond those sent; it tells whether msg was one.
func (s *YAMLLanguageServer) answer(msg map[string]any) bool {
	id, isRequest := msg["id"]
	method, _ := msg["method"].(string)
	if !isRequest || method == "" {
		return false
	}
	var result any
	if method == "workspace/configuration" {
		params, _ := msg["params"].(map[string]any)
		items, _ := params["items"].([]any)
		configs := make([]any, len(items))
		for i := range items {
			configs[i] = map[string]any{"validate": true, "schemaStore": map[string]any{"enable": false}}
		}
		result = configs
	}
	_ = s.write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	return true
}

// call sends a request and waits for its response.
func (s *YAMLLanguageServer) call(method string, params any, timeout time.Duration) (any, error) {
	s.next++
	id := s.next
	if err := s.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	deadline := time.After(timeout)
	for {
		select {
		case msg, ok := <-s.messages:
			if !ok {
				return nil, fmt.Errorf("yaml-language-server ended: %s", s.Stderr.String())
			}
			if s.answer(msg) {
				continue
			}
			if got, _ := msg["id"].(float64); int(got) == id && msg["method"] == nil {
				if e, ok := msg["error"]; ok {
					return nil, fmt.Errorf("%s: %v", method, e)
				}
				return msg["result"], nil
			}
		case <-deadline:
			return nil, fmt.Errorf("%s: no answer within %s", method, timeout)
		}
	}
}

func (s *YAMLLanguageServer) notify(method string, params any) error {
	return s.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// write sends one message with its Content-Length header.
func (s *YAMLLanguageServer) write(msg map[string]any) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(s.in, "Content-Length: %d\r\n\r\n%s", len(data), data)
	return err
}

// read decodes the server's messages until its output ends.
func (s *YAMLLanguageServer) read(r *bufio.Reader) {
	defer close(s.messages)
	for {
		length := 0
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSpace(line)
			if line == "" {
				break
			}
			if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
				length, _ = strconv.Atoi(v)
			}
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		var msg map[string]any
		if json.Unmarshal(body, &msg) == nil {
			s.messages <- msg
		}
	}
}
