package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The vendor's offline path through calaf: init, test (and a JUnit report), a changed
// renderer failing its test with the difference, doc in Markdown and HTML, schema,
// explain, and diff's exit codes (0 additive, 1 breaking).
func TestProfileCommands(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "acme")
	if code, out, errOut := runCLI("profile", "init", "acme", "--dir", dir); code != ExitOK {
		t.Fatalf("init: exit %d: %s%s", code, out, errOut)
	}
	old := filepath.Join(root, "acme-0.1")
	copyTree(t, dir, old)
	junit := filepath.Join(root, "junit.xml")
	code, out, errOut := runCLI("profile", "test", dir, "--junit", junit)
	if code != ExitOK || !strings.Contains(out, "2 passed, 0 failed") {
		t.Fatalf("test: exit %d: %s%s", code, out, errOut)
	}
	report, err := os.ReadFile(junit)
	if err != nil || !strings.Contains(string(report), `<testsuite name="tests/app.yaml" tests="2" failures="0"`) {
		t.Fatalf("JUnit report: %v\n%s", err, report)
	}

	replaceIn(t, filepath.Join(dir, "js", "app.js"), "data: { greeting: ", "data: { message: ")
	code, out, _ = runCLI("profile", "test", dir, "--junit", junit)
	if code != ExitInvalid || !strings.Contains(out, "FAIL  tests/app.yaml:3  an app with its greeting") ||
		!strings.Contains(out, "ConfigMap/test-web-greeting has no data.greeting") || !strings.Contains(out, "1 passed, 1 failed") {
		t.Fatalf("a changed renderer: exit %d:\n%s", code, out)
	}
	if report, _ := os.ReadFile(junit); !strings.Contains(string(report), `failures="1"`) {
		t.Errorf("the JUnit report does not count the failure:\n%s", report)
	}
	if code, out, _ := runCLI("profile", "diff", old, dir); code != ExitDifferences || !strings.Contains(out, "BREAKING  test case app.yaml: an app with its greeting: the renderer's output changed") {
		t.Errorf("diff of a changed renderer: exit %d:\n%s", code, out)
	}
	replaceIn(t, filepath.Join(dir, "js", "app.js"), "data: { message: ", "data: { greeting: ")

	replaceIn(t, filepath.Join(dir, "profile.yaml"), "        constraints:\n        - min_length: 1\n", "        constraints:\n        - min_length: 1\n      color:\n        type: string\n        required: false\n")
	if code, out, errOut := runCLI("profile", "diff", old, dir); code != ExitOK || !strings.Contains(out, "ADDED     node type acme.nodes.App: property color added (optional)") {
		t.Errorf("diff of an added property: exit %d:\n%s%s", code, out, errOut)
	}

	doc := filepath.Join(root, "REFERENCE.md")
	if code, out, errOut := runCLI("profile", "doc", dir, "-o", doc); code != ExitOK {
		t.Fatalf("doc: exit %d: %s%s", code, out, errOut)
	}
	if text, _ := os.ReadFile(doc); !strings.Contains(string(text), "| `color` | `string` | no |") || !strings.Contains(string(text), "Renders (on the profile's test cases): ConfigMap, Deployment, Service") {
		t.Errorf("the reference:\n%s", text)
	}
	if code, out, _ := runCLI("profile", "doc", dir, "--format", "html", "--no-tests"); code != ExitOK || !strings.Contains(out, `<h3 id="acmenodesapp">acme.nodes.App</h3>`) {
		t.Errorf("doc --format html: exit %d:\n%.2000s", code, out)
	}
	if code, out, _ := runCLI("profile", "schema", dir); code != ExitOK || !strings.Contains(out, `"node:acme.nodes.App"`) {
		t.Errorf("schema: exit %d:\n%.500s", code, out)
	}
	if code, out, _ := runCLI("explain", "acme.nodes.App.greeting", "--profile", dir); code != ExitOK || !strings.Contains(out, "FIELD:  greeting <string>") || !strings.Contains(out, "default: hello") {
		t.Errorf("explain: exit %d:\n%s", code, out)
	}
	if code, _, errOut := runCLI("explain", "acme.nodes.App.colour", "--profile", dir); code != ExitUsage || !strings.Contains(errOut, `acme.nodes.App has no property "colour"`) {
		t.Errorf("explain of a misspelt property: exit %d: %s", code, errOut)
	}
	if code, out, _ := runCLI("explain", "calaf.nodes.Service.service_type"); code != ExitOK || !strings.Contains(out, "valid_values: [ClusterIP, NodePort, LoadBalancer]") {
		t.Errorf("explain of the Calaf profile: exit %d:\n%s", code, out)
	}
}

func replaceIn(t *testing.T, file, from, to string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(data), from) {
		t.Fatalf("%s has no %q (%v)", file, from, err)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), from, to, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
