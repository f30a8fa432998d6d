package tosca

import (
	"strconv"
	"strings"

	"github.com/tliron/go-ard"
	cloutpkg "github.com/tliron/puccini/clout"
)

// dataKey marks the maps of input values as data. Puccini reads a map of one entry whose
// key names a function ({get_input: x}, {concat: [...]}) as a call of that function, in
// inputs too — so an input could make the template read another input or evaluate any
// function. Each map of one entry that an input holds gets a second entry under dataKey
// (with the same value, so that its entry schema holds) before Puccini parses it, and
// stripData takes these entries out of the compiled Clout, before anything evaluates it.
const dataKey = "\x00calaf.data"

// asData returns a copy of an input value in which no map can be read as a function call.
func asData(value ard.Value) ard.Value {
	switch v := value.(type) {
	case ard.Map:
		m := make(ard.Map, len(v)+1)
		for key, item := range v {
			m[key] = asData(item)
		}
		if len(v) == 1 {
			for _, item := range m {
				m[dataKey] = item
			}
		}
		return m
	case ard.List:
		l := make(ard.List, len(v))
		for i, item := range v {
			l[i] = asData(item)
		}
		return l
	}
	return value
}

// isDataKeyProblem tells whether Puccini's problem at path is about an entry asData added.
func isDataKeyProblem(path string) bool {
	return strings.Contains(path, dataKey) || strings.Contains(path, strconv.Quote(dataKey))
}

// stripData removes the dataKey entries that asData added from the inputs of a compiled
// Clout (properties.tosca.inputs, in Puccini's coercible form: "$map" lists of entries
// with a "$key").
func stripData(clout *cloutpkg.Clout) {
	inputs, ok := ard.With(clout.Properties).Get("tosca", "inputs").StringMap()
	if !ok {
		return
	}
	for name, value := range inputs {
		inputs[name] = stripCoercible(value)
	}
}

// stripCoercible removes the dataKey entries from a value in Puccini's coercible form.
func stripCoercible(value ard.Value) ard.Value {
	switch v := value.(type) {
	case ard.StringMap:
		for key, item := range v {
			v[key] = stripCoercible(item)
		}
		if entries, ok := v["$map"].(ard.List); ok {
			v["$map"] = withoutDataKey(entries)
		}
	case ard.Map:
		for key, item := range v {
			v[key] = stripCoercible(item)
		}
		if entries, ok := v["$map"].(ard.List); ok {
			v["$map"] = withoutDataKey(entries)
		}
	case ard.List:
		for i, item := range v {
			v[i] = stripCoercible(item)
		}
	}
	return value
}

// withoutDataKey returns the entries of a "$map" but the one keyed dataKey.
func withoutDataKey(entries ard.List) ard.List {
	kept := entries[:0]
	for _, entry := range entries {
		if key, ok := ard.With(entry).Get("$key", "$primitive").String(); ok && key == dataKey {
			continue
		}
		kept = append(kept, entry)
	}
	return kept
}
