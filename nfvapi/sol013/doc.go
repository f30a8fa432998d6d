// Package sol013 holds the conventions ETSI GS NFV-SOL 013 sets for every NFV REST interface,
// independent of any resource: ProblemDetails errors, the Version header, attribute-based
// filtering (filter=(eq,attr,value);…), attribute selectors (all_fields, fields,
// exclude_fields, exclude_default) and paging by an opaque marker with a Link header. It
// works on resources as decoded JSON (map[string]any), so that one implementation serves
// every resource type.
package sol013
