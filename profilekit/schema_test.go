package profilekit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"calaf.io/calaf/profilekit"
	"calaf.io/calaf/tosca"
)

// compileSchema generates the schema of a package's types and compiles it with a JSON
// Schema validator Calaf did not write (santhosh-tekuri/jsonschema), which checks the
// schema against the draft-07 meta-schema first.
func compileSchema(t *testing.T, dir, entry string) *jsonschema.Schema {
	t.Helper()
	catalog, err := profilekit.LoadDir(dir, entry, profilekit.LoadOptions{})
	if err != nil {
		t.Fatalf("catalog of %s: %v", dir, err)
	}
	data, err := json.Marshal(profilekit.JSONSchema(catalog, ""))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://schema.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("mem://schema.json")
	if err != nil {
		t.Fatalf("the schema of %s does not compile: %v", dir, err)
	}
	return schema
}

// yamlInstance reads YAML as the JSON value a language server validates.
func yamlInstance(t *testing.T, text []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(text, &v); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return instance
}

// exampleTemplates lists the example packages written against the Calaf profile (and a
// vendor's) with the files of each that hold node templates.
func exampleTemplates(t *testing.T) map[string][]string {
	t.Helper()
	packages := map[string][]string{}
	for _, dir := range []string{"../examples/hello-world/service.yaml", "../examples/network-service", "../examples/vendor-profile", "../examples/testdata/profile-types"} {
		pkg, err := tosca.Open(dir, tosca.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, f := range pkg.Files {
			data, err := pkg.ReadFile(f.Path)
			if err == nil && bytes.Contains(data, []byte("node_templates:")) {
				files = append(files, filepath.Join(pkg.Root, f.Path))
			}
		}
		packages[pkg.Root+"\x00"+pkg.Entry] = files
		pkg.Close()
	}
	return packages
}

// TestSchemaAcceptsTheExamples: every node template of the examples written against the
// Calaf profile passes the schema of its package's types.
func TestSchemaAcceptsTheExamples(t *testing.T) {
	checked := 0
	for key, files := range exampleTemplates(t) {
		root, entry, _ := strings.Cut(key, "\x00")
		schema := compileSchema(t, root, entry)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(yamlInstance(t, data)); err != nil {
				t.Errorf("%s: %v", file, err)
			}
			checked++
		}
	}
	if checked < 4 {
		t.Fatalf("checked %d templates", checked)
	}
}

// TestSchemaReportsMistakes: a misspelt property, a value of the wrong type, a value out
// of its valid values, a misspelt type and a missing required property are each reported
// at their path; a function call where a value goes is not.
func TestSchemaReportsMistakes(t *testing.T) {
	schema := compileSchema(t, "../examples/vendor-profile", "Definitions/service.yaml")
	original, err := os.ReadFile("../examples/vendor-profile/Definitions/service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, from, to string
		want           []string // in the error's text
	}{
		{"misspelt property", "        max_memory: 48Mi", "        max_memroy: 48Mi", []string{"/topology_template/node_templates/sessions/properties", "max_memroy"}},
		{"wrong type", "        min_available: 1", "        min_available: one", []string{"/topology_template/node_templates/sessions/properties/min_available", "integer"}},
		{"nested wrong type", "          ttl_seconds: 600", "          ttl_seconds: [ 600 ]", []string{"/topology_template/node_templates/sessions/properties/eviction/ttl_seconds"}},
		{"constraint", "        readiness_probe: { http_path: /, period_seconds: 2 }\n        volume_claims:", "        image_pull_policy: Sometimes\n        volume_claims:", []string{"/topology_template/node_templates/sessions/properties/image_pull_policy"}},
		{"misspelt type", "      type: acme.nodes.Cache", "      type: acme.nodes.Cash", []string{"/topology_template/node_templates/sessions/type"}},
		{"required property", "        image: { get_input: image }\n        replicas", "        replicas", []string{"/topology_template/node_templates/sessions/properties", "image"}},
		{"misspelt requirement", "      - connects_to: sessions", "      - connect_to: sessions", []string{"/topology_template/node_templates/web", "connect_to"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !bytes.Contains(original, []byte(c.from)) {
				t.Fatalf("the example has no %q", c.from)
			}
			changed := bytes.Replace(original, []byte(c.from), []byte(c.to), 1)
			err := schema.Validate(yamlInstance(t, changed))
			var verr *jsonschema.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("not reported: %v", err)
			}
			text := verr.Error()
			for _, want := range c.want {
				if !strings.Contains(text, want) {
					t.Errorf("the error does not say %q:\n%s", want, text)
				}
			}
		})
	}
}
