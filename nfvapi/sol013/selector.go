package sol013

import (
	"net/http"
	"net/url"
	"strings"
)

// Shape is what the selectors need to know of a resource type: its top-level attributes,
// those never left out, and the complex ones left out by default.
type Shape struct {
	// Known are the resource's top-level attribute names.
	Known map[string]bool
	// Mandatory attributes are in every answer, whatever the selector.
	Mandatory []string
	// DefaultExcluded are the paths exclude_default leaves out ("a" or "a/b").
	DefaultExcluded []string
}

// Selector is a request's attribute selector (SOL013 5.3).
type Selector struct {
	all            bool
	fields         [][]string
	exclude        [][]string
	excludeDefault bool
}

// ParseSelector reads all_fields, fields, exclude_fields and exclude_default from a query.
// None of them means exclude_default. all_fields goes with none of the others; fields not
// with exclude_fields; exclude_fields not with exclude_default (400 otherwise). A name of
// an attribute the resource does not have is refused (400).
func ParseSelector(q url.Values, shape Shape) (Selector, error) {
	_, all := q["all_fields"]
	_, excludeDefault := q["exclude_default"]
	fields, hasFields := q["fields"]
	excl, hasExcl := q["exclude_fields"]
	switch {
	case all && (hasFields || hasExcl || excludeDefault):
		return Selector{}, Errorf(http.StatusBadRequest, "all_fields goes with no other attribute selector")
	case hasFields && hasExcl:
		return Selector{}, Errorf(http.StatusBadRequest, "fields and exclude_fields cannot be combined")
	case hasExcl && excludeDefault:
		return Selector{}, Errorf(http.StatusBadRequest, "exclude_fields and exclude_default cannot be combined")
	}
	s := Selector{all: all, excludeDefault: excludeDefault || (!all && !hasFields && !hasExcl)}
	var err error
	if s.fields, err = selectorPaths("fields", fields, shape); err != nil {
		return Selector{}, err
	}
	if s.exclude, err = selectorPaths("exclude_fields", excl, shape); err != nil {
		return Selector{}, err
	}
	return s, nil
}

func selectorPaths(param string, values []string, shape Shape) ([][]string, error) {
	var paths [][]string
	for _, v := range values {
		if len(v) > MaxFilterLength {
			return nil, Errorf(http.StatusBadRequest, "%s is longer than %d characters", param, MaxFilterLength)
		}
		for _, name := range strings.Split(v, ",") {
			path := strings.Split(name, "/")
			if !shape.Known[path[0]] {
				return nil, Errorf(http.StatusBadRequest, "%s names the attribute %q, which this resource does not have", param, name)
			}
			if paths = append(paths, path); len(paths) > maxValues {
				return nil, Errorf(http.StatusBadRequest, "%s names more than %d attributes", param, maxValues)
			}
		}
	}
	return paths, nil
}

// Apply returns the resource as the selector wants it (the map may be changed).
func (s Selector) Apply(doc map[string]any, shape Shape) map[string]any {
	switch {
	case s.all:
		return doc
	case len(s.exclude) > 0:
		for _, p := range s.exclude {
			if !mandatory(shape, p) {
				removePath(doc, p)
			}
		}
		return doc
	case len(s.fields) > 0 && !s.excludeDefault:
		out := map[string]any{}
		for _, m := range shape.Mandatory {
			if v, ok := doc[m]; ok {
				out[m] = v
			}
		}
		for _, p := range s.fields {
			copyPath(out, doc, p)
		}
		return out
	}
	orig := doc
	if len(s.fields) > 0 {
		orig = shallowCopy(doc)
	}
	for _, p := range shape.DefaultExcluded {
		removePath(doc, strings.Split(p, "/"))
	}
	for _, p := range s.fields {
		copyPath(doc, orig, p)
	}
	return doc
}

func mandatory(shape Shape, path []string) bool {
	if len(path) != 1 {
		return false
	}
	for _, m := range shape.Mandatory {
		if m == path[0] {
			return true
		}
	}
	return false
}

// removePath deletes the attribute at path (through objects only).
func removePath(doc map[string]any, path []string) {
	for _, key := range path[:len(path)-1] {
		child, ok := doc[key].(map[string]any)
		if !ok {
			return
		}
		doc = child
	}
	delete(doc, path[len(path)-1])
}

// copyPath copies the attribute at path of src into dst, creating the objects above it;
// a path through an array copies the array's top attribute whole.
func copyPath(dst, src map[string]any, path []string) {
	for i, key := range path {
		v, ok := src[key]
		if !ok {
			return
		}
		next, isObject := v.(map[string]any)
		if i == len(path)-1 || !isObject {
			dst[key] = v
			return
		}
		d, ok := dst[key].(map[string]any)
		if !ok {
			d = map[string]any{}
			dst[key] = d
		}
		dst, src = d, next
	}
}

// shallowCopy copies a resource deep enough that removePath on the copy leaves the
// original whole.
func shallowCopy(doc map[string]any) map[string]any {
	out := make(map[string]any, len(doc))
	for k, v := range doc {
		if m, ok := v.(map[string]any); ok {
			v = shallowCopy(m)
		}
		out[k] = v
	}
	return out
}
