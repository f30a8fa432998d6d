package profilekit_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"calaf.io/calaf/profilekit"
)

// acmeProfile copies the example vendor profile into a new directory, with test cases.
func acmeProfile(t *testing.T, tests string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "acme")
	copyDir(t, "../examples/vendor-profile/Profiles/acme/1.0", dir)
	if tests != "" {
		write(t, filepath.Join(dir, "tests", "cache.yaml"), tests)
	}
	return dir
}

func copyDir(t *testing.T, src, dst string) {
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

func write(t *testing.T, file, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func edit(t *testing.T, file, from, to string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), from) {
		t.Fatalf("%s has no %q", file, from)
	}
	write(t, file, strings.Replace(string(data), from, to, 1))
}

const acmeTests = `tests:
- name: a cache with its budget
  nodes:
    cache:
      type: acme.nodes.Cache
      properties:
        image: busybox:1.36
        replicas: 2
        ports: [ { name: cache, port: 6379 } ]
  golden: golden/cache.yaml
  assert:
  - object: StatefulSet/test-cache
    path: spec.replicas
    equals: 2
  - object: PodDisruptionBudget/test-cache
    path: spec.minAvailable
    equals: 1
  - object: StatefulSet/test-cache
    path: spec.template.spec.containers[0].volumeMounts[0].mountPath
    equals: /etc/acme
  - count: 4
- name: a negative budget is refused
  nodes:
    cache:
      type: acme.nodes.Cache
      properties: { image: busybox:1.36, min_available: -1 }
  error: min_available
`

// TestProfileTestCases: the vendor's cases pass against the profile they were written
// for (the golden file written first with Update); a renderer changed afterwards fails
// the golden comparison with a readable difference and the assertion on the path it
// changed, and the cases it did not change still pass.
func TestProfileTestCases(t *testing.T) {
	dir := acmeProfile(t, acmeTests)
	ctx := context.Background()
	runner := &profilekit.Runner{Render: profilekit.LocalRender(), Update: true}
	if _, err := runner.Run(ctx, dir, filepath.Join(dir, "tests")); err != nil {
		t.Fatal(err)
	}
	runner.Update = false
	run, err := runner.Run(ctx, dir, filepath.Join(dir, "tests"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Failed() != 0 || len(run.Results) != 2 {
		t.Fatalf("%d of %d cases failed: %+v", run.Failed(), len(run.Results), run.Results[0].Failures)
	}
	if kinds := strings.Join(run.RenderedKinds()["acme.nodes.Cache"], ","); kinds != "ConfigMap,PodDisruptionBudget,Service,StatefulSet" {
		t.Errorf("the cache renders %s", kinds)
	}

	edit(t, filepath.Join(dir, "js", "cache.js"), "minAvailable: p.min_available", "minAvailable: p.min_available + 1")
	run, err = runner.Run(ctx, dir, filepath.Join(dir, "tests"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Failed() != 1 || !run.Results[1].Passed() {
		t.Fatalf("want the first case failed, the second passed: %+v", run.Results)
	}
	failures := strings.Join(run.Results[0].Failures, "\n")
	for _, want := range []string{
		"the objects differ from golden/cache.yaml (- expected, + rendered)",
		"-  minAvailable: 1\n+  minAvailable: 2\n",
		"PodDisruptionBudget/test-cache spec.minAvailable: expected 1, rendered 2",
	} {
		if !strings.Contains(failures, want) {
			t.Errorf("the failure does not say %q:\n%s", want, failures)
		}
	}
	if strings.Contains(failures, "replicas") {
		t.Errorf("the failure reports what did not change:\n%s", failures)
	}
}

// TestProfileTestCasesRefused: a test file with mistakes is refused at its lines before
// anything renders.
func TestProfileTestCasesRefused(t *testing.T) {
	dir := acmeProfile(t, `tests:
- name: nothing checked
  nodes: { cache: { type: acme.nodes.Cache } }
- name: both
  template: t.yaml
  nodes: { cache: { type: acme.nodes.Cache } }
  golden: g.yaml
  asert: []
`)
	_, err := (&profilekit.Runner{Render: profilekit.LocalRender()}).Run(context.Background(), dir, filepath.Join(dir, "tests"))
	if err == nil {
		t.Fatal("refused nothing")
	}
	for _, want := range []string{
		`tests/cache.yaml:2:3: test case "nothing checked" checks nothing`,
		`tests/cache.yaml:4:3: test case "both": give either template or nodes`,
		`tests/cache.yaml:8:3: unknown key "asert"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}

// TestScaffoldPasses: a new profile passes its own test cases and documents its type.
func TestScaffoldPasses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "acme")
	if _, err := profilekit.Scaffold(dir, "acme"); err != nil {
		t.Fatal(err)
	}
	run, err := (&profilekit.Runner{Render: profilekit.LocalRender()}).Run(context.Background(), dir, filepath.Join(dir, "tests"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range run.Results {
		if !r.Passed() {
			t.Errorf("%s: %v", r.Case.Name, r.Failures)
		}
	}
	catalog, err := profilekit.LoadDir(dir, profilekit.ProfileEntry, profilekit.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	doc := string(profilekit.Markdown(catalog, profilekit.ReferenceOptions{Renders: run.RenderedKinds()}))
	if !strings.Contains(doc, "### acme.nodes.App") || !strings.Contains(doc, "- Renders (on the profile's test cases): ConfigMap, Deployment, Service") {
		t.Errorf("the reference does not document the type:\n%s", doc)
	}
	if _, err := profilekit.Scaffold(dir, "acme"); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("scaffolding over a profile: %v", err)
	}
	if _, err := profilekit.Scaffold(filepath.Join(t.TempDir(), "x"), "Acme Corp"); err == nil {
		t.Error("a name with spaces was taken")
	}
}
