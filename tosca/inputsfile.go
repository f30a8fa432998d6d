package tosca

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"
)

// MaxInputsFileBytes bounds a file of input values.
const MaxInputsFileBytes = 1 << 20

// ParseInputsFile reads a YAML file of input values: one document holding a map of input
// names to values. Every problem — too large, not UTF-8, invalid YAML, an alias bomb, a
// second document, not a map, a key given twice or that is no name — is an *InvalidError
// locating it in name (the file as the user gave it).
func ParseInputsFile(name string, data []byte) (map[string]any, error) {
	invalid := func(line int, format string, args ...any) error {
		return &InvalidError{Diagnostics: []Diagnostic{{File: name, Line: line, Message: "inputs file: " + fmt.Sprintf(format, args...)}}}
	}
	if len(data) > MaxInputsFileBytes {
		return nil, invalid(0, "%d bytes, more than the limit of %d KiB", len(data), MaxInputsFileBytes>>10)
	}
	decoder := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := decoder.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return map[string]any{}, nil
		}
		line, problem := YAMLProblem(err)
		return nil, invalid(line, "invalid YAML: %s", problem)
	}
	if expanded := countNodes(&doc, map[*yaml.Node]int{}, true); expanded-countNodes(&doc, nil, false) > maxAliasNodes {
		return nil, invalid(0, "its aliases expand it by more than %d nodes (an alias bomb?)", maxAliasNodes)
	}
	var next yaml.Node
	if err := decoder.Decode(&next); !errors.Is(err, io.EOF) {
		line, _ := YAMLProblem(err)
		if err == nil && len(next.Content) > 0 {
			line = next.Content[0].Line
		}
		return nil, invalid(line, "a second YAML document (after ---): the inputs are one map")
	}
	top := &doc
	if top.Kind == yaml.DocumentNode && len(top.Content) == 1 {
		top = top.Content[0]
	}
	if top.Kind == yaml.ScalarNode && top.Tag == "!!null" {
		return map[string]any{}, nil
	}
	if top.Kind != yaml.MappingNode {
		return nil, invalid(top.Line, "it holds %s, not a map of input names to values", kindOf(top.Tag))
	}
	if diags := keyProblems(name, &doc, true); len(diags) > 0 {
		diags[0].Message = "inputs file: " + diags[0].Message
		return nil, &InvalidError{Diagnostics: diags[:1]}
	}
	var inputs map[string]any
	if err := top.Decode(&inputs); err != nil {
		line, problem := YAMLProblem(err)
		return nil, invalid(line, "%s", problem)
	}
	for key, value := range inputs {
		inputs[key] = normalizeDecoded(value)
	}
	return inputs, nil
}
