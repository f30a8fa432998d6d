package profilekit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

// ProfileEntry is the file of a profile that templates import: its root's profile.yaml.
const ProfileEntry = "profile.yaml"

// TestsDir is where a profile keeps its test cases: every *.yaml file under it that has a
// top-level "tests" list.
const TestsDir = "tests"

// TestCase is one renderer test of a profile: a small service template (a file, or node
// templates given inline), its inputs, and what it must render — whole golden objects,
// assertions on paths, or an error.
type TestCase struct {
	Name string
	// File is the test file (relative to the tests directory), Line the case's line.
	File string
	Line int
	// Template is a service template file, relative to the test file; Nodes are node
	// templates given inline instead (the profile imported for them).
	Template string
	Nodes    map[string]any
	Inputs   map[string]any
	// Service and Namespace name the Service the case renders for (test, default).
	Service, Namespace string
	// Golden is a file of the expected objects (YAML documents), relative to the test file.
	Golden string
	Assert []Assertion
	// Error, when set, is text the compile or render must fail with.
	Error string
}

// Assertion is a check on the rendered objects: the value at a path of one object (Kind/name),
// its absence, or how many objects there are.
type Assertion struct {
	Object    string
	Path      string
	Equals    any
	HasEquals bool
	Absent    bool
	Count     *int
	Line      int
}

// CaseResult is what a test case did.
type CaseResult struct {
	Case     *TestCase
	Failures []string
	Duration time.Duration
	// Objects are what the case rendered; Kinds the kinds of objects each node type rendered.
	Objects []*unstructured.Unstructured
	Kinds   map[string][]string
}

// Passed tells whether the case passed.
func (r *CaseResult) Passed() bool { return len(r.Failures) == 0 }

// RenderFunc compiles a package with inputs and renders it for a Service.
type RenderFunc func(ctx context.Context, pkg *tosca.Package, inputs map[string]any, service, namespace string) (*render.Result, error)

// Runner runs the test cases of a profile.
type Runner struct {
	Render RenderFunc
	// Update rewrites the golden files with what the cases render, instead of comparing.
	Update bool
}

// TestRun is the outcome of every case of a profile.
type TestRun struct {
	Results []*CaseResult
}

// Failed counts the failed cases.
func (t *TestRun) Failed() int {
	failed := 0
	for _, r := range t.Results {
		if !r.Passed() {
			failed++
		}
	}
	return failed
}

// RenderedKinds lists, by node type, the kinds of the objects its nodes rendered on the
// cases, sorted.
func (t *TestRun) RenderedKinds() map[string][]string {
	sets := map[string]map[string]bool{}
	for _, r := range t.Results {
		for typ, kinds := range r.Kinds {
			if sets[typ] == nil {
				sets[typ] = map[string]bool{}
			}
			for _, k := range kinds {
				sets[typ][k] = true
			}
		}
	}
	out := map[string][]string{}
	for typ, set := range sets {
		for k := range set {
			out[typ] = append(out[typ], k)
		}
		sort.Strings(out[typ])
	}
	return out
}

// Run runs the cases of testsDir (a profile's own tests directory, or another version's)
// against the profile in profileDir. The profile is copied into a workspace with the cases'
// templates beside it: nothing is written into profileDir, but golden files with Update.
func (r *Runner) Run(ctx context.Context, profileDir, testsDir string) (*TestRun, error) {
	cases, err := ReadTestCases(testsDir)
	if err != nil {
		return nil, err
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("%s holds no test case (files *.yaml with a tests list)", testsDir)
	}
	ws, err := newWorkspace(profileDir, testsDir)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(ws.root)
	run := &TestRun{}
	for i, c := range cases {
		run.Results = append(run.Results, r.runCase(ctx, ws, testsDir, c, i))
	}
	return run, nil
}

// runCase renders one case in the workspace and checks what it rendered.
func (r *Runner) runCase(ctx context.Context, ws *workspace, testsDir string, c *TestCase, index int) *CaseResult {
	start := time.Now()
	result := &CaseResult{Case: c}
	defer func() { result.Duration = time.Since(start) }()
	entry, err := ws.entry(c, index)
	if err != nil {
		result.Failures = append(result.Failures, err.Error())
		return result
	}
	rendered, err := r.renderCase(ctx, ws.root, entry, c)
	if c.Error != "" {
		switch {
		case err == nil:
			result.Failures = append(result.Failures, fmt.Sprintf("expected an error with %q, the case rendered", c.Error))
		case !strings.Contains(err.Error(), c.Error):
			result.Failures = append(result.Failures, fmt.Sprintf("expected an error with %q, got: %v", c.Error, err))
		}
		return result
	}
	if err != nil {
		result.Failures = append(result.Failures, "render failed: "+err.Error())
		return result
	}
	result.Objects, result.Kinds = rendered.Objects, kindsByType(rendered)
	if c.Golden != "" {
		result.Failures = append(result.Failures, r.golden(testsDir, c, rendered.Objects)...)
	}
	for _, a := range c.Assert {
		if failure := a.check(rendered.Objects); failure != "" {
			result.Failures = append(result.Failures, failure)
		}
	}
	return result
}

func (r *Runner) renderCase(ctx context.Context, root, entry string, c *TestCase) (*render.Result, error) {
	pkg, err := tosca.OpenEntry(root, entry, tosca.DefaultLimits())
	if err != nil {
		return nil, err
	}
	defer pkg.Close()
	return r.Render(ctx, pkg, c.Inputs, c.Service, c.Namespace)
}

// kindsByType lists the kinds each node type rendered.
func kindsByType(result *render.Result) map[string][]string {
	kinds := map[string][]string{}
	for _, n := range result.Nodes {
		for _, o := range n.Objects {
			kinds[n.Type] = append(kinds[n.Type], o.GetKind())
		}
	}
	return kinds
}

// golden compares the rendered objects with the case's golden file, or rewrites it.
func (r *Runner) golden(testsDir string, c *TestCase, objects []*unstructured.Unstructured) []string {
	file := filepath.Join(testsDir, filepath.FromSlash(path.Join(path.Dir(c.File), c.Golden)))
	got, err := ObjectsYAML(objects)
	if err != nil {
		return []string{err.Error()}
	}
	if r.Update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return []string{err.Error()}
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			return []string{err.Error()}
		}
		return nil
	}
	want, err := os.ReadFile(file)
	if err != nil {
		return []string{fmt.Sprintf("golden file %s: %v (write it with --update)", c.Golden, errorText(err))}
	}
	if bytes.Equal(want, got) {
		return nil
	}
	return []string{"the objects differ from " + c.Golden + " (- expected, + rendered):\n" + TextDiff(string(want), string(got), c.Golden, "rendered")}
}

// ObjectsYAML writes objects as YAML documents, in order.
func ObjectsYAML(objects []*unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	for i, o := range objects {
		data, err := sigsyaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(data)
	}
	return b.Bytes(), nil
}

// TextDiff is a unified diff of two texts, three lines of context.
func TextDiff(a, b, aName, bName string) string {
	diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b), FromFile: aName, ToFile: bName, Context: 3,
	})
	return diff
}

// check runs an assertion on the rendered objects; "" when it holds.
func (a Assertion) check(objects []*unstructured.Unstructured) string {
	where := fmt.Sprintf("assertion at line %d", a.Line)
	if a.Count != nil && a.Object == "" {
		if len(objects) != *a.Count {
			return fmt.Sprintf("%s: expected %d objects, rendered %d (%s)", where, *a.Count, len(objects), objectNames(objects))
		}
		return ""
	}
	obj := findObject(objects, a.Object)
	if a.Absent && a.Path == "" {
		if obj != nil {
			return fmt.Sprintf("%s: %s is rendered, expected it absent", where, a.Object)
		}
		return ""
	}
	if obj == nil {
		return fmt.Sprintf("%s: no object %s among %s", where, a.Object, objectNames(objects))
	}
	if a.Path == "" {
		return ""
	}
	got, found, err := Lookup(obj.Object, a.Path)
	switch {
	case err != nil:
		return fmt.Sprintf("%s: %s %s: %v", where, a.Object, a.Path, err)
	case a.Absent && found:
		return fmt.Sprintf("%s: %s %s is %s, expected it absent", where, a.Object, a.Path, flowYAML(got))
	case a.Absent:
		return ""
	case !found:
		return fmt.Sprintf("%s: %s has no %s", where, a.Object, a.Path)
	case a.HasEquals && !sameValue(got, a.Equals):
		return fmt.Sprintf("%s: %s %s: expected %s, rendered %s", where, a.Object, a.Path, flowYAML(a.Equals), flowYAML(got))
	}
	return ""
}

func findObject(objects []*unstructured.Unstructured, ref string) *unstructured.Unstructured {
	kind, name, _ := strings.Cut(ref, "/")
	for _, o := range objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func objectNames(objects []*unstructured.Unstructured) string {
	names := make([]string, len(objects))
	for i, o := range objects {
		names[i] = o.GetKind() + "/" + o.GetName()
	}
	if len(names) == 0 {
		return "no objects"
	}
	return strings.Join(names, ", ")
}

// sameValue compares values as JSON does (every number a float).
func sameValue(a, b any) bool {
	return reflect.DeepEqual(asJSON(a), asJSON(b))
}

func asJSON(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

// Lookup reads the value at a path of an object: dotted fields, list indexes and quoted
// keys ("spec.template.spec.containers[0].image", `metadata.labels["app.kubernetes.io/name"]`).
func Lookup(obj map[string]any, p string) (any, bool, error) {
	steps, err := parsePath(p)
	if err != nil {
		return nil, false, err
	}
	var cur any = obj
	for _, step := range steps {
		switch s := step.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false, nil
			}
			if cur, ok = m[s]; !ok {
				return nil, false, nil
			}
		case int:
			l, ok := cur.([]any)
			if !ok || s >= len(l) {
				return nil, false, nil
			}
			cur = l[s]
		}
	}
	return cur, true, nil
}

// parsePath splits a path into field names (strings) and list indexes (ints).
func parsePath(p string) ([]any, error) {
	var steps []any
	for p != "" {
		switch {
		case strings.HasPrefix(p, `["`):
			end := strings.Index(p, `"]`)
			if end < 0 {
				return nil, fmt.Errorf("path: unclosed [\" in %q", p)
			}
			steps, p = append(steps, p[2:end]), p[end+2:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			n, err := strconv.Atoi(p[1:max(end, 1)])
			if end < 0 || err != nil || n < 0 {
				return nil, fmt.Errorf("path: bad index in %q", p)
			}
			steps, p = append(steps, n), p[end+1:]
		case p[0] == '.':
			p = p[1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			steps, p = append(steps, p[:end]), p[end:]
		}
	}
	return steps, nil
}

// workspace is a copy of a profile with the test cases beside it, where each case's
// template is a file of the package.
type workspace struct {
	root string
}

// casesDir is where the workspace keeps the templates of inline cases.
const casesDir = ".cases"

// newWorkspace copies the profile (its own tests left out) and the tests directory into a
// new temporary directory.
func newWorkspace(profileDir, testsDir string) (*workspace, error) {
	if _, err := os.Stat(filepath.Join(profileDir, ProfileEntry)); err != nil {
		return nil, fmt.Errorf("%s has no %s: a profile's entry is its %s", profileDir, ProfileEntry, ProfileEntry)
	}
	root, err := os.MkdirTemp("", "calaf-profile-test-")
	if err != nil {
		return nil, err
	}
	ownTests := filepath.Join(profileDir, TestsDir)
	if err := copyTree(profileDir, root, func(p string) bool { return p == ownTests }); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	if err := copyTree(testsDir, filepath.Join(root, TestsDir), nil); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	return &workspace{root: root}, nil
}

// entry returns the package path of a case's service template, writing the template of
// an inline case.
func (ws *workspace) entry(c *TestCase, index int) (string, error) {
	if c.Template != "" {
		rel, err := tosca.CleanPath(path.Join(TestsDir, path.Dir(c.File), c.Template))
		if err != nil {
			return "", fmt.Errorf("template %q: %v", c.Template, err)
		}
		return rel, nil
	}
	entry := path.Join(TestsDir, casesDir, fmt.Sprintf("case-%d.yaml", index))
	doc := map[string]any{
		"tosca_definitions_version": "tosca_simple_yaml_1_3",
		"imports":                   []any{"../../" + ProfileEntry},
		"topology_template":         map[string]any{"node_templates": c.Nodes},
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	full := filepath.Join(ws.root, filepath.FromSlash(entry))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return "", err
	}
	return entry, os.WriteFile(full, data, 0o644)
}

// copyTree copies the regular files under src to dst (links and .git left out), skipping
// the directories skip names.
func copyTree(src, dst string, skip func(string) bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || skip != nil && skip(p)) {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
