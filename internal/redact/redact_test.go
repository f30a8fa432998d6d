package redact

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	"calaf.io/calaf/artifacts/protocol"
	"calaf.io/calaf/internal/text"
)

const (
	specials      = `p&ss<w>"rd\`
	unicodeSecret = "pässwörd-日本語-ключ"
	yamlish       = "{user: bob, pass: s3cr3t-x}"
	short         = "q3z"
	pemBody1      = "MIIEowIBAAKCAQEAvN1s0mEwz3Xk9c2YhUq8bq7m1WkT0xRr0a4Z6Jx3FtY2uQ8p"
	pemBody2      = "w0rZk7jQe5Lb1aVn3S9cUoPq2XyHd4GfMi6Ts8Ke0Rz1NwLvBu7CjAhYm5Dg2x3E"
	pemBody3      = "Qk9HtF6aZl4Xs2Wd8Vr1Yp0Nc3Mb5Jg7Ue9Ti2Ro4Ew6Qy8Az0Sx1Dc3Fv5Gb"
)

var (
	pemWithArmor = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,5A1B9C3D2E4F6071\n\n" +
		pemBody1 + "\n" + pemBody2 + "\n" + pemBody3 + "\n-----END RSA PRIVATE KEY-----\n"
	pemBare = pemBody1 + "\n" + pemBody2 + "\n" + pemBody3 + "\n"
)

func secretsOf(values ...string) *Secrets {
	s := New()
	for _, v := range values {
		s.Add(v)
	}
	return s
}

// Every shape of Secret value is hidden however a message carries it: raw, quoted by Go
// (%q, as a validation error quotes a value) or by JSON (HTML escapes too), as one leaf of
// a structured value, as one line of a multi-line one, cut by a truncation or a tail; a
// quoted value derived from a secret is hidden whole. What is no secret is left alone.
func TestString(t *testing.T) {
	s := secretsOf(specials, unicodeSecret, yamlish, short, pemWithArmor, pemBare, "pw", "true")
	jsonQuoted, _ := json.Marshal(specials)
	cases := []struct{ name, in, want string }{
		{"raw", "password is " + specials + " ok", "password is ***** ok"},
		{"a validation error quoting it (Go's %q)", fmt.Sprintf("metadata.labels: Invalid value: %q: must be", specials), `metadata.labels: Invalid value: "*****": must be`},
		{"quoted by JSON with HTML escapes", "value " + string(jsonQuoted), `value "*****"`},
		{"inside a JSON document", `{"a":"p\u0026ss\u003cw\u003e\"rd\\","b":1}`, `{"a":"*****","b":1}`},
		{"a quoted value derived from it, hidden whole", fmt.Sprintf("Invalid value: %q: a valid label", "not!a-label-"+specials), `Invalid value: "*****": a valid label`},
		{"unicode, raw", "got " + unicodeSecret, "got *****"},
		{"unicode, quoted in ASCII", "got " + strconv.QuoteToASCII(unicodeSecret), `got "*****"`},
		{"a leaf of a YAML-shaped value", "pass is s3cr3t-x.", "pass is *****."},
		{"a short leaf as a word", "user bob logged in", "user ***** logged in"},
		{"a short leaf inside a word: left", "bobcat", "bobcat"},
		{"a short secret as a word", "token=" + short + ";", "token=*****;"},
		{"a short secret inside a word: left", "aq3zb", "aq3zb"},
		{"a two-byte secret as the whole text", "pw", Mask},
		{"a two-byte secret inside text: left", "pwd is not pw-less", "pwd is not pw-less"},
		{"YAML's words are no secret", "ready: true", "ready: true"},
		{"a PEM line on its own (a log split per line)", pemBody2, Mask},
		{"a PEM line in a message", "line: " + pemBody3 + " end", "line: ***** end"},
		{"the whole PEM block", "key " + pemWithArmor, "key *****"},
		{"its lines apart, armor left", strings.ReplaceAll(pemWithArmor, "\n", " | "), "-----BEGIN RSA PRIVATE KEY----- | ***** | ***** |  | ***** | ***** | ***** | -----END RSA PRIVATE KEY----- | "},
		{"the bare PEM block", pemBare, Mask},
		{"truncated within a PEM line", text.Truncate("error: "+pemBody1, 40), "error: *****..."},
		{"a tail starting within a PEM line", protocol.Tail(pemBody1+pemBody2, 30), "…*****"},
		{"a log line cut by the runner", "echo " + pemBody3[:20] + "…", "echo *****…"},
		{"nothing secret", "configure succeeded in pod app-0 (12ms)", "configure succeeded in pod app-0 (12ms)"},
	}
	for _, c := range cases {
		if got := s.String(c.in); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// Values are redacted leaf by leaf before they are encoded: JSON's escapes cannot hide a
// secret from it, a number that is a secret's leaf is hidden, keys are kept, and the value
// given is not changed.
func TestValue(t *testing.T) {
	s := secretsOf(specials, `{"pin": 482913, "user": "alice"}`)
	in := map[string]any{
		"echo":   specials,
		"nested": []any{"x-" + specials, map[string]any{"pin": float64(482913), "port": float64(8080)}},
		"user":   "alice",
		"ok":     true,
	}
	got := s.Value(in)
	data, _ := json.Marshal(got)
	want := `{"echo":"*****","nested":["x-*****",{"pin":"*****","port":8080}],"ok":true,"user":"*****"}`
	if string(data) != want {
		t.Errorf("redacted\n got %s\nwant %s", data, want)
	}
	if in["echo"] != specials {
		t.Error("the value given was changed")
	}
	if !s.Touches(in) || s.Touches(map[string]any{"port": 8080.0, "name": "web"}) {
		t.Error("Touches does not tell a value holding a secret from one without")
	}
	var nilSecrets *Secrets
	if nilSecrets.String(specials) != specials || nilSecrets.Value("x") != "x" || !nilSecrets.Empty() {
		t.Error("a nil Secrets hides something")
	}
}

// The registry hides every owner's secrets until the owner is forgotten; the log sink
// hides them in messages, values and errors.
func TestRegistryAndLogSink(t *testing.T) {
	r := NewRegistry()
	r.Set("a", secretsOf("alpha-secret"))
	r.Set("b", secretsOf("bravo-secret"))
	if got := r.String("alpha-secret bravo-secret"); got != "***** *****" {
		t.Errorf("union: %q", got)
	}
	var lines []string
	log := Logger(funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{LogCaller: funcr.All}), r)
	log.WithValues("input", "bravo-secret").Info("stalled: alpha-secret", "message", `Invalid value: "alpha-secret"`, "lines", []string{"bravo-secret"})
	log.Error(fmt.Errorf("reconcile: %q", "alpha-secret"), "failed")
	for _, line := range lines {
		if strings.Contains(line, "alpha") || strings.Contains(line, "bravo") {
			t.Errorf("log line shows a secret: %s", line)
		}
	}
	if len(lines) != 2 {
		t.Errorf("%d lines logged, want 2", len(lines))
	}
	for _, line := range lines {
		if !strings.Contains(line, `"file"="redact_test.go"`) {
			t.Errorf("the log line does not name its caller: %s", line)
		}
	}
	r.Set("a", New())
	r.Forget("b")
	if got := r.String("alpha-secret bravo-secret"); got != "alpha-secret bravo-secret" {
		t.Errorf("forgotten owners' secrets still hidden: %q", got)
	}
}
