package profilekit

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"calaf.io/calaf/tosca"
)

// ReadTestCases reads the test cases of every *.yaml file under dir whose top level has
// a "tests" list, in file order, then case order. A case that cannot be read is an
// error naming its file and line.
func ReadTestCases(dir string) ([]*TestCase, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == casesDir {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("test cases: %v", errorText(err))
	}
	sort.Strings(files)
	var cases []*TestCase
	var diags []tosca.Diagnostic
	for _, file := range files {
		rel, _ := filepath.Rel(dir, file)
		found, problems := readTestFile(file, filepath.ToSlash(rel))
		cases, diags = append(cases, found...), append(diags, problems...)
	}
	if len(diags) > 0 {
		return nil, &tosca.InvalidError{Diagnostics: diags}
	}
	return cases, nil
}

// readTestFile reads the cases of one file; a YAML file without a tests list (a golden
// file, a template) has none.
func readTestFile(file, rel string) ([]*TestCase, []tosca.Diagnostic) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, []tosca.Diagnostic{{File: rel, Message: errorText(err)}}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil // not a test file: templates and golden files are read by others
	}
	tests := value(mapping(&doc), "tests")
	if tests == nil {
		return nil, nil
	}
	report := func(n *yaml.Node, format string, args ...any) tosca.Diagnostic {
		return tosca.Diagnostic{File: "tests/" + rel, Line: n.Line, Column: n.Column, Message: fmt.Sprintf(format, args...)}
	}
	if tests.Kind != yaml.SequenceNode {
		return nil, []tosca.Diagnostic{report(tests, "tests must be a list of test cases")}
	}
	var cases []*TestCase
	var diags []tosca.Diagnostic
	for _, item := range tests.Content {
		c, problems := readTestCase(item, rel, report)
		if c != nil {
			cases = append(cases, c)
		}
		diags = append(diags, problems...)
	}
	return cases, diags
}

type reporter func(n *yaml.Node, format string, args ...any) tosca.Diagnostic

// testCaseKeys are the keys a test case may have.
func testCaseKeys() map[string]bool {
	return map[string]bool{"name": true, "template": true, "nodes": true, "inputs": true, "service": true, "namespace": true,
		"golden": true, "assert": true, "error": true}
}

func readTestCase(n *yaml.Node, rel string, report reporter) (*TestCase, []tosca.Diagnostic) {
	if n.Kind != yaml.MappingNode {
		return nil, []tosca.Diagnostic{report(n, "a test case is a mapping")}
	}
	var diags []tosca.Diagnostic
	for _, kv := range pairs(n) {
		if !testCaseKeys()[kv[0].Value] {
			diags = append(diags, report(kv[0], "unknown key %q of a test case (name, template, nodes, inputs, service, namespace, golden, assert, error)", kv[0].Value))
		}
	}
	c := &TestCase{File: rel, Line: n.Line, Name: scalar(value(n, "name")), Template: scalar(value(n, "template")),
		Service: scalar(value(n, "service")), Namespace: scalar(value(n, "namespace")), Golden: scalar(value(n, "golden")), Error: scalar(value(n, "error"))}
	if c.Name == "" {
		c.Name = fmt.Sprintf("line %d", n.Line)
	}
	if c.Service == "" {
		c.Service = "test"
	}
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	if nodes := value(n, "nodes"); nodes != nil {
		if err := nodes.Decode(&c.Nodes); err != nil || nodes.Kind != yaml.MappingNode {
			diags = append(diags, report(nodes, "nodes must map node template names to node templates"))
		}
	}
	if inputs := value(n, "inputs"); inputs != nil {
		if err := inputs.Decode(&c.Inputs); err != nil || inputs.Kind != yaml.MappingNode {
			diags = append(diags, report(inputs, "inputs must map input names to values"))
		}
	}
	if (c.Template == "") == (c.Nodes == nil) {
		diags = append(diags, report(n, "test case %q: give either template or nodes", c.Name))
	}
	if c.Golden == "" && value(n, "assert") == nil && c.Error == "" {
		diags = append(diags, report(n, "test case %q checks nothing: give golden, assert or error", c.Name))
	}
	asserts, problems := readAssertions(value(n, "assert"), report)
	c.Assert = asserts
	return c, append(diags, problems...)
}

func readAssertions(n *yaml.Node, report reporter) ([]Assertion, []tosca.Diagnostic) {
	if n == nil {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, []tosca.Diagnostic{report(n, "assert must be a list")}
	}
	var asserts []Assertion
	var diags []tosca.Diagnostic
	for _, item := range n.Content {
		a := Assertion{Line: item.Line, Object: scalar(value(item, "object")), Path: scalar(value(item, "path")), Absent: scalar(value(item, "absent")) == "true"}
		if eq := value(item, "equals"); eq != nil {
			a.HasEquals = true
			_ = eq.Decode(&a.Equals)
		}
		if count := value(item, "count"); count != nil {
			var k int
			if err := count.Decode(&k); err != nil {
				diags = append(diags, report(count, "count must be a number"))
			}
			a.Count = &k
		}
		for _, kv := range pairs(item) {
			switch kv[0].Value {
			case "object", "path", "equals", "absent", "count":
			default:
				diags = append(diags, report(kv[0], "unknown key %q of an assertion (object, path, equals, absent, count)", kv[0].Value))
			}
		}
		if a.Object == "" && a.Count == nil {
			diags = append(diags, report(item, "an assertion names an object (Kind/name) or a count"))
		} else if a.Object != "" && !strings.Contains(a.Object, "/") {
			diags = append(diags, report(item, "object %q: write Kind/name", a.Object))
		}
		asserts = append(asserts, a)
	}
	return asserts, diags
}
