package tosca

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const dataInputsTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  inputs:
    secret:
      type: string
      default: hunter2
    labels:
      type: map
      entry_schema: string
    names:
      type: list
      entry_schema: string
  node_templates:
    cm:
      type: calaf.nodes.ConfigMap
      properties:
        data: { get_input: labels }
`

// TestInputsAreData checks that input values shaped like function calls stay data: the
// compiled Clout holds them as maps, with no function call and no trace of the marker.
func TestInputsAreData(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "service.yaml"), []byte(dataInputsTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg, err := Open(dir, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]any{
		"labels": map[string]any{"get_input": "secret"},
		"names":  []any{"plain", "text"},
	}
	compiled, err := NewCompiler(1).Compile(context.Background(), pkg, inputs)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(compiled.Clout.Properties["tosca"])
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if strings.Contains(text, "$functionCall") || strings.Contains(text, "calaf.data") {
		t.Errorf("inputs compiled as functions or with the marker: %s", text)
	}
	if !strings.Contains(text, `{"$key":{"$primitive":"get_input"},"$primitive":"secret"}`) {
		t.Errorf("labels is not the map {get_input: secret}: %s", text)
	}
}

func TestAsDataMarksSingleEntryMaps(t *testing.T) {
	value := toARD(map[string]any{"a": map[string]any{"concat": []any{"x", map[string]any{"b": 1}}}, "c": 2})
	marked := asData(value)
	data, _ := json.Marshal(jsonable(marked))
	if strings.Count(string(data), "calaf.data") != 3 {
		t.Errorf("want both maps of one entry marked (one of them twice: in its own place and in the copy under the mark): %s", data)
	}
}

// jsonable turns ard maps into string maps, for JSON.
func jsonable(value any) any {
	switch v := value.(type) {
	case map[any]any:
		m := map[string]any{}
		for key, item := range v {
			m[key.(string)] = jsonable(item)
		}
		return m
	case []any:
		for i, item := range v {
			v[i] = jsonable(item)
		}
	}
	return value
}
