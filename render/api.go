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
		var document any
		err := decoder.Decode(&document)
		if errors.Is(err, io.EOF) {
			return documents, nil
		}
		if err != nil {
			return nil, fmt.Errorf("invalid YAML: %w", err)
		}
		if len(documents) == maxDocuments {
			return nil, fmt.Errorf("more than %d YAML documents", maxDocuments)
		}
		documents = append(documents, normalizeYAML(document))
	}
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
