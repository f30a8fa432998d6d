package render

import (
	"slices"

	"github.com/tliron/go-ard"
	cloutpkg "github.com/tliron/puccini/clout"
)

// MetadataPublishSecret, set to "true" in an output's metadata, publishes an output whose
// value is derived from a Secret in the Service's status (redacted there, unless the
// cluster admin reveals such outputs); without it such an output is withheld.
const MetadataPublishSecret = "calaf.io/publish-secret"

// OutputDefinition is what a template's output declares besides its value.
type OutputDefinition struct {
	// Inputs are the inputs its value reads (get_input, anywhere in its expression).
	Inputs []string `json:"inputs,omitempty"`
	// Metadata is the output's metadata.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// outputDefinitions reads what a Clout's outputs declare, before their values are
// evaluated; outputs that declare nothing are left out.
func outputDefinitions(clout *cloutpkg.Clout) map[string]OutputDefinition {
	outputs, _ := ard.With(clout.Properties).Get("tosca", "outputs").Value.(ard.StringMap)
	definitions := map[string]OutputDefinition{}
	for name, value := range outputs {
		var def OutputDefinition
		collectInputs(value, &def.Inputs, 0)
		slices.Sort(def.Inputs)
		def.Inputs = slices.Compact(def.Inputs)
		if metadata, ok := ard.With(value).Get("$meta", "metadata").StringMap(); ok {
			def.Metadata = map[string]string{}
			for key, v := range metadata {
				if text, ok := v.(string); ok {
					def.Metadata[key] = text
				}
			}
		}
		if len(def.Inputs) > 0 || len(def.Metadata) > 0 {
			definitions[name] = def
		}
	}
	if len(definitions) == 0 {
		return nil
	}
	return definitions
}

// collectInputs gathers the inputs a Clout value names through get_input.
func collectInputs(value any, into *[]string, depth int) {
	if depth > 1000 {
		return
	}
	switch v := value.(type) {
	case ard.StringMap:
		if name, _ := ard.With(v).Get("$functionCall", "name").String(); name == "tosca.function.get_input" {
			arguments, _ := ard.With(v).Get("$functionCall", "arguments").List()
			if len(arguments) > 0 {
				if input, ok := inputName(arguments[0]); ok {
					*into = append(*into, input)
				}
			}
		}
		for _, item := range v {
			collectInputs(item, into, depth+1)
		}
	case ard.Map:
		for _, item := range v {
			collectInputs(item, into, depth+1)
		}
	case ard.List:
		for _, item := range v {
			collectInputs(item, into, depth+1)
		}
	}
}

// inputName is the input a get_input argument names: a name, or a list starting with one
// (a nested get_input).
func inputName(argument any) (string, bool) {
	primitive := ard.With(argument).Get("$primitive").Value
	if list, ok := primitive.(ard.List); ok && len(list) > 0 {
		primitive = list[0]
	}
	name, ok := primitive.(string)
	return name, ok
}
