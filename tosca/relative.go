package tosca

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/tliron/go-ard"
	cloutpkg "github.com/tliron/puccini/clout"
)

// relativizeClout rewrites the file URLs Puccini writes into a Clout — artifact source
// paths, the locations of function calls — from absolute URLs inside the package root to
// package-relative paths. The Clout then depends on the package's content only, not on
// where it was extracted: a Clout cached or stored by digest stays valid for every copy of
// the package, and no temporary directory shows in outputs or diagnostics.
func relativizeClout(clout *cloutpkg.Clout, root string) {
	slashRoot := filepath.ToSlash(root)
	prefixes := []string{"file://" + slashRoot + "/"}
	if escaped := (&url.URL{Scheme: "file", Path: slashRoot + "/"}).String(); escaped != prefixes[0] {
		prefixes = append(prefixes, escaped)
	}
	rewrite := func(value ard.Value) ard.Value {
		return relativize(value, prefixes)
	}
	rewriteClout(clout, rewrite)
}

// rewriteImports rewrites the file URLs of the files of a package's imports by reference
// in a Clout to the import's URL and the file's path in the profile
// ("oci://host/acme/profile:1.0!nodes.yaml"): the Clout does not depend on where the
// profile was cached.
func rewriteImports(clout *cloutpkg.Clout, prefixes map[string]string) {
	if len(prefixes) == 0 {
		return
	}
	rewriteClout(clout, func(value ard.Value) ard.Value {
		return replacePrefixes(value, prefixes)
	})
}

// rewriteClout applies rewrite to every value of a Clout that may hold a file URL.
func rewriteClout(clout *cloutpkg.Clout, rewrite func(ard.Value) ard.Value) {
	clout.Properties = rewrite(clout.Properties).(ard.StringMap)
	for _, vertex := range clout.Vertexes {
		vertex.Properties = rewrite(vertex.Properties).(ard.StringMap)
		vertex.Metadata = rewrite(vertex.Metadata).(ard.StringMap)
		for _, edge := range vertex.EdgesOut {
			edge.Properties = rewrite(edge.Properties).(ard.StringMap)
			edge.Metadata = rewrite(edge.Metadata).(ard.StringMap)
		}
	}
}

// replacePrefixes rewrites, in place where it can, every string of value that starts with
// a key of prefixes: the key becomes its value.
func replacePrefixes(value ard.Value, prefixes map[string]string) ard.Value {
	switch v := value.(type) {
	case string:
		for prefix, replacement := range prefixes {
			if rest, ok := strings.CutPrefix(v, prefix); ok {
				if unescaped, err := url.PathUnescape(rest); err == nil {
					rest = unescaped
				}
				return replacement + rest
			}
		}
	case ard.StringMap:
		for key, item := range v {
			v[key] = replacePrefixes(item, prefixes)
		}
	case ard.Map:
		for key, item := range v {
			v[key] = replacePrefixes(item, prefixes)
		}
	case ard.List:
		for i, item := range v {
			v[i] = replacePrefixes(item, prefixes)
		}
	}
	return value
}

// relativize rewrites, in place where it can, every string of value that starts with one
// of prefixes to the rest of it.
func relativize(value ard.Value, prefixes []string) ard.Value {
	switch v := value.(type) {
	case string:
		for _, prefix := range prefixes {
			if rest, ok := strings.CutPrefix(v, prefix); ok {
				if unescaped, err := url.PathUnescape(rest); err == nil && prefix != prefixes[0] {
					return unescaped
				}
				return rest
			}
		}
	case ard.StringMap:
		for key, item := range v {
			v[key] = relativize(item, prefixes)
		}
	case ard.Map:
		for key, item := range v {
			v[key] = relativize(item, prefixes)
		}
	case ard.List:
		for i, item := range v {
			v[i] = relativize(item, prefixes)
		}
	}
	return value
}
