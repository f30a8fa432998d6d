package nfvapi

import (
	"reflect"
	"strings"

	"calaf.io/calaf/nfvapi/sol013"
)

// shapeOf describes a resource type to the SOL013 selectors and filters: its top-level
// attributes are the JSON names of the view's fields.
func shapeOf(view any, mandatory, defaultExcluded []string) sol013.Shape {
	known := map[string]bool{}
	t := reflect.TypeOf(view)
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			known[name] = true
		}
	}
	return sol013.Shape{Known: known, Mandatory: mandatory, DefaultExcluded: defaultExcluded}
}
