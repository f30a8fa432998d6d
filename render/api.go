package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"

	"calaf.io/calaf/tosca"
)

// maxDocuments bounds the YAML documents one parseYAML call returns.
const maxDocuments = 1000

// calafAPI is the "calaf" global of renderers: the package's own files and the naming
// rules of the objects, nothing of the host.
type calafAPI struct {
	pkg *tosca.Package
}

// ReadFile returns a file of the package as text.
func (a *calafAPI) ReadFile(path string) (string, error) {
	data, err := a.pkg.ReadFile(path)
	if err != nil {
		return "", err
	}
	return string(data), nil
}

// ParseYAML decodes every document of a YAML text (a Kubernetes manifest file).
func (a *calafAPI) ParseYAML(text string) ([]any, error) {
	decoder := yaml.NewDecoder(bytes.NewReader([]byte(text)))
	var documents []any
	for {
		var node yaml.Node
		err := decoder.Decode(&node)
		if errors.Is(err, io.EOF) {
			return documents, nil
		}
		if err != nil {
			return nil, errors.New(yamlProblem(err))
		}
		if len(documents) == maxDocuments {
			return nil, fmt.Errorf("more than %d YAML documents", maxDocuments)
		}
		if key := complexKey(&node); key != nil {
			return nil, fmt.Errorf("invalid YAML: line %d: a key that is a map or a list: the keys of Kubernetes objects are text", key.Line)
		}
		var document any
		if err := node.Decode(&document); err != nil {
			return nil, errors.New(yamlProblem(err))
		}
		documents = append(documents, normalizeYAML(document))
	}
}

// complexKey returns the first key of a YAML tree that is a map or a list, nil when none;
// aliases are not followed.
func complexKey(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if key := n.Content[i]; key.Kind == yaml.MappingNode || key.Kind == yaml.SequenceNode {
				return key
			}
		}
	}
	for _, child := range n.Content {
		if key := complexKey(child); key != nil {
			return key
		}
	}
	return nil
}

// yamlProblem words an error of the YAML library (tosca.YAMLProblem) with its line.
func yamlProblem(err error) string {
	line, message := tosca.YAMLProblem(err)
	if line > 0 {
		return fmt.Sprintf("invalid YAML: line %d: %s", line, message)
	}
	return "invalid YAML: " + message
}

// ObjectName is the Kubernetes name of a node's objects.
func (a *calafAPI) ObjectName(service, node string) string {
	return ObjectName(service, node)
}

// LabelValue is a node name as a label value.
func (a *calafAPI) LabelValue(node string) string {
	return LabelValue(node)
}

// normalizeYAML makes decoded YAML JSON-compatible: string keys, int64 numbers.
func normalizeYAML(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for key, item := range v {
			v[key] = normalizeYAML(item)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for key, item := range v {
			m[fmt.Sprint(key)] = normalizeYAML(item)
		}
		return m
	case []any:
		for i, item := range v {
			v[i] = normalizeYAML(item)
		}
		return v
	case int:
		return int64(v)
	}
	return v
}
