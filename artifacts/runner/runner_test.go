package runner

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"calaf.io/calaf/artifacts/protocol"
)

func jsRequest(source string) *protocol.Request {
	return &protocol.Request{
		Version: protocol.Version, Kind: protocol.KindJavaScript, Operation: "Standard.configure",
		Artifact:      protocol.ArtifactInfo{Name: "configure", File: "Artifacts/smf/configure.js"},
		Source:        source,
		Inputs:        map[string]any{"dnn": "internet", "count": 3.0, "list": []any{"a", "b"}},
		Node:          protocol.NodeInfo{Name: "smf", Type: "mini5gc.nodes.SMF", Properties: map[string]any{"replicas": 2.0}, Attributes: map[string]any{"cluster_ip": "10.0.0.1"}},
		Pod:           protocol.PodInfo{Name: "core-smf-abc", Namespace: "ns", Container: "main"},
		Service:       protocol.ServiceInfo{Name: "core", Namespace: "ns"},
		TimeoutMillis: 10000,
	}
}

func runReq(t *testing.T, req *protocol.Request) *protocol.Result {
	t.Helper()
	return Run(context.Background(), req, Options{WorkRoot: t.TempDir()})
}

func TestJavaScriptAPI(t *testing.T) {
	dir := t.TempDir()
	req := jsRequest(`
const lib = require('./lib');
const conf = 'dnn=' + calaf.inputs.dnn + '\n';
calaf.writeFile('` + dir + `/out.conf', conf);
calaf.appendFile('` + dir + `/out.conf', 'count=' + calaf.inputs.count + '\n');
const r = calaf.exec(['sh', '-c', 'grep -c = ` + dir + `/out.conf; echo oops >&2']);
if (r.exitCode !== 0) throw new Error('grep failed');
calaf.log('pod', calaf.pod.name, {peers: r.stdout.trim()});
console.log('node', calaf.node.name, calaf.node.properties.replicas, calaf.node.attributes.cluster_ip);
calaf.setAttribute('peers', parseInt(r.stdout.trim(), 10));
calaf.setAttribute('greeting', lib.greet(calaf.inputs.list.join('+')));
calaf.setOutput('stderr', r.stderr.trim());
calaf.setAttribute('data', JSON.parse(calaf.file('Artifacts/smf/data.json')).x);
calaf.setAttribute('exists', [calaf.exists('` + dir + `/out.conf'), calaf.exists('` + dir + `/nope')]);
calaf.setAttribute('op', calaf.operation.interface + '/' + calaf.operation.operation);
calaf.setAttribute('shell', calaf.exec('echo $((1+2))').stdout.trim());
`)
	req.Files = map[string]string{
		"Artifacts/smf/lib.js":    `exports.greet = function (s) { return 'hello ' + s; };`,
		"Artifacts/smf/data.json": `{"x": 42}`,
	}
	res := runReq(t, req)
	if res.Failed() {
		t.Fatalf("failed: %s (%s)", res.Error, res.Stderr)
	}
	want := map[string]any{"peers": int64(2), "greeting": "hello a+b", "data": float64(42), "op": "Standard/configure", "shell": "3"}
	for name, value := range want {
		if got := res.Attributes[name]; got != value && !(isNumber(got) && isNumber(value) && toFloat(got) == toFloat(value)) {
			t.Errorf("attribute %s = %#v, want %#v", name, got, value)
		}
	}
	if got := res.Attributes["exists"]; len(got.([]any)) != 2 || got.([]any)[0] != true || got.([]any)[1] != false {
		t.Errorf("exists = %v", got)
	}
	if res.Outputs["stderr"] != "oops" {
		t.Errorf("outputs = %v", res.Outputs)
	}
	if strings.Join(res.Logs, "\n") != `pod core-smf-abc {"peers":"2"}`+"\nnode smf 2 10.0.0.1" {
		t.Errorf("logs = %q", res.Logs)
	}
	data, _ := os.ReadFile(dir + "/out.conf")
	if string(data) != "dnn=internet\ncount=3\n" {
		t.Errorf("file = %q", data)
	}
	if res.Commands != 2 {
		t.Errorf("commands = %d", res.Commands)
	}
}

func isNumber(v any) bool {
	switch v.(type) {
	case int64, float64, int:
		return true
	}
	return false
}

func TestJavaScriptFailures(t *testing.T) {
	for _, tc := range []struct {
		name, source   string
		timeout        int64
		kind, contains string
		stderr         string
		maxDuration    time.Duration
	}{
		{name: "exception", source: "let x = 1;\nthrow new Error('bad config: ' + x);", kind: protocol.ErrorException, contains: "Error: bad config: 1 (at Artifacts/smf/configure.js:2:"},
		{name: "thrown string", source: "throw 'plain';", kind: protocol.ErrorException, contains: "plain"},
		{name: "type error", source: "null.x;", kind: protocol.ErrorException, contains: "TypeError"},
		{name: "syntax error", source: "let = ;", kind: protocol.ErrorException, contains: "syntax error"},
		{name: "checked command", source: "calaf.exec(['sh', '-c', 'echo boom >&2; exit 3'], {check: true});", kind: protocol.ErrorException, contains: "exited with code 3: boom", stderr: "boom"},
		{name: "unchecked command then throw", source: "const r = calaf.exec(['sh', '-c', 'echo broken pipe >&2; exit 4']);\nif (r.exitCode) throw new Error('exit ' + r.exitCode);", kind: protocol.ErrorException, contains: "exit 4", stderr: "broken pipe"},
		{name: "missing command", source: "const r = calaf.exec(['no-such-command-xyz']);\nif (r.exitCode !== 127) throw new Error('got ' + r.exitCode);\nthrow new Error(r.stderr);", kind: protocol.ErrorException, contains: "not found"},
		{name: "endless loop", source: "while (true) {}", timeout: 300, kind: protocol.ErrorTimeout, contains: "timed out after 300ms", maxDuration: 3 * time.Second},
		{name: "endless recursion", source: "function f() { return f() + 1; } f();", kind: protocol.ErrorException, contains: "RangeError"},
		{name: "hanging command", source: "calaf.exec(['sh', '-c', 'sleep 30 & sleep 30']);\nwhile (true) {}", timeout: 300, kind: protocol.ErrorTimeout, contains: "timed out", maxDuration: 4 * time.Second},
		{name: "command killed at the deadline", source: "calaf.exec(['sh', '-c', 'sleep 30 & sleep 30']);", timeout: 300, kind: protocol.ErrorTimeout, contains: "timed out", maxDuration: 4 * time.Second},
		{name: "sleep past the deadline", source: "calaf.sleep(60000); while (true) {}", timeout: 200, kind: protocol.ErrorTimeout, contains: "timed out", maxDuration: 3 * time.Second},
		{name: "missing dependency", source: "require('./nope');", kind: protocol.ErrorException, contains: "not among the operation's dependencies"},
		{name: "unserializable attribute", source: "const o = {}; o.self = o; calaf.setAttribute('x', o);", kind: protocol.ErrorException, contains: "attribute \"x\""},
		{name: "unknown exec option", source: "calaf.exec(['true'], {bogus: 1});", kind: protocol.ErrorException, contains: "unknown option"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := jsRequest(tc.source)
			if tc.timeout > 0 {
				req.TimeoutMillis = tc.timeout
			}
			start := time.Now()
			res := runReq(t, req)
			if res.ErrorKind != tc.kind || !strings.Contains(res.Error, tc.contains) {
				t.Fatalf("got %s %q, want %s containing %q", res.ErrorKind, res.Error, tc.kind, tc.contains)
			}
			if tc.stderr != "" && !strings.Contains(res.Stderr, tc.stderr) {
				t.Errorf("stderr tail %q, want %q", res.Stderr, tc.stderr)
			}
			if tc.maxDuration > 0 && time.Since(start) > tc.maxDuration {
				t.Errorf("took %v, more than %v", time.Since(start), tc.maxDuration)
			}
		})
	}
}

func TestBounds(t *testing.T) {
	req := jsRequest(`
const r = calaf.exec(['sh', '-c', 'yes 0123456789 | head -c 3000000; yes e | head -c 3000000 >&2']);
calaf.setAttribute('stdout', r.stdout.length);
calaf.setAttribute('stderr', r.stderr.length);
calaf.setAttribute('truncated', r.truncated);
for (let i = 0; i < 10000; i++) calaf.log('line ' + i);
`)
	req.Limits = protocol.Limits{OutputBytes: 1000, LogBytes: 2000}
	res := runReq(t, req)
	if res.Failed() {
		t.Fatal(res.Error)
	}
	if res.Attributes["stdout"] != int64(1000) && res.Attributes["stdout"] != float64(1000) {
		t.Errorf("stdout kept %v bytes", res.Attributes["stdout"])
	}
	if toFloat(res.Attributes["stderr"]) != 1000 || res.Attributes["truncated"] != true {
		t.Errorf("stderr kept %v bytes, truncated %v", res.Attributes["stderr"], res.Attributes["truncated"])
	}
	size := 0
	for _, line := range res.Logs {
		size += len(line) + 1
	}
	if size > 2000 || res.Logs[len(res.Logs)-1] != "line 9999" || res.LogsDropped == 0 {
		t.Errorf("logs: %d bytes, last %q, dropped %d", size, res.Logs[len(res.Logs)-1], res.LogsDropped)
	}

	req = jsRequest(`calaf.setAttribute('big', 'x'.repeat(5000));`)
	req.Limits = protocol.Limits{ValueBytes: 4096}
	if res := runReq(t, req); !strings.Contains(res.Error, "exceed 4096 bytes") {
		t.Errorf("value bound: %q", res.Error)
	}
}

func shellRequest(script string) *protocol.Request {
	req := jsRequest(script)
	req.Kind = protocol.KindShell
	req.Artifact = protocol.ArtifactInfo{Name: "configure", File: "Artifacts/smf/configure.sh"}
	return req
}

func TestShell(t *testing.T) {
	res := runReq(t, shellRequest(`
set -e
echo "configuring $CALAF_NODE in $CALAF_POD for $dnn ($count)"
echo "a warning" >&2
echo "registration=registered for $dnn" >> "$CALAF_ATTRIBUTES"
echo 'peers=3' >> "$CALAF_ATTRIBUTES"
echo 'list='"$list" >> "$CALAF_OUTPUTS"
`))
	if res.Failed() {
		t.Fatal(res.Error)
	}
	if res.Attributes["registration"] != "registered for internet" || toFloat(res.Attributes["peers"]) != 3 {
		t.Errorf("attributes = %v", res.Attributes)
	}
	if l, _ := res.Outputs["list"].([]any); len(l) != 2 {
		t.Errorf("outputs = %v", res.Outputs)
	}
	if logs := strings.Join(res.Logs, "\n"); len(res.Logs) != 2 || !strings.Contains(logs, "configuring smf in core-smf-abc for internet (3)") || !strings.Contains(logs, "stderr: a warning") {
		t.Errorf("logs = %q", res.Logs)
	}

	res = runReq(t, shellRequest("echo starting\necho 'cannot reach nrf' >&2\nexit 3\n"))
	if res.ErrorKind != protocol.ErrorException || res.Error != "Artifacts/smf/configure.sh exited with code 3" || !strings.Contains(res.Stderr, "cannot reach nrf") || res.ExitCode != 3 {
		t.Errorf("failure: %+v", res)
	}

	req := shellRequest("sleep 30 & sleep 30\n")
	req.TimeoutMillis = 300
	start := time.Now()
	res = runReq(t, req)
	if res.ErrorKind != protocol.ErrorTimeout || time.Since(start) > 4*time.Second {
		t.Errorf("timeout: %+v after %v", res, time.Since(start))
	}
}

func TestInvalidRequests(t *testing.T) {
	req := jsRequest("")
	req.Kind = "python"
	if res := runReq(t, req); res.ErrorKind != protocol.ErrorInvalid {
		t.Errorf("kind: %+v", res)
	}
	req = jsRequest("")
	req.Files = map[string]string{"../../etc/evil": "x"}
	root := t.TempDir()
	res := Run(context.Background(), req, Options{WorkRoot: root})
	if res.Failed() {
		t.Fatalf("a path leaving the package must stay inside the work directory: %s", res.Error)
	}
	if _, err := os.Stat(root + "/../etc/evil"); err == nil {
		t.Error("a companion file was written outside the work directory")
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 0 {
		t.Errorf("work directory left behind: %v", entries)
	}
}
