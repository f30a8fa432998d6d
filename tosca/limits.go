package tosca

import (
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"
)

// Limits of the templates of a package — its entry and the files it imports — checked
// before anything parses them for good (CheckSize): a package beyond one is refused at once,
// naming the limit, instead of holding a worker for the seconds Puccini takes to fail.
const (
	// MaxTemplates bounds the YAML files of a package's import graph.
	MaxTemplates = 256
	// MaxTemplateValues bounds the YAML values of the templates together, as counted
	// before parsing (yamlValues), and so the time parsing them takes.
	MaxTemplateValues = 150_000
	// MaxNodeTemplates bounds the node templates of a package.
	MaxNodeTemplates = 2_000
	// MaxCollectionEntries bounds the items of one YAML list and the entries of one map.
	MaxCollectionEntries = 10_000
)

// yamlValues counts, without parsing, at least as many values as a YAML text holds: every
// value but the first comes after a line break or one of , : - [ { ?, so their number
// bounds the values (and the work of parsing them) from above.
func yamlValues(data []byte) int {
	n := 1
	for _, b := range data {
		switch b {
		case '\n', ',', ':', '-', '[', '{', '?':
			n++
		}
	}
	return n
}

// CheckSize refuses a package whose templates exceed the template limits: more than
// MaxTemplates files, MaxTemplateValues values (counted before anything parses them),
// MaxNodeTemplates node templates, or a list or map of more than MaxCollectionEntries
// entries. It reads the templates once per Package; Compiler calls it before a compile
// starts. Problems of another kind (a missing import, invalid YAML) are left to the
// compile.
func (p *Package) CheckSize() error {
	p.sizeOnce.Do(func() { p.sizeErr = p.checkSize() })
	return p.sizeErr
}

func (p *Package) checkSize() error {
	files, values := []string{p.Entry}, 0
	docs := map[string]*yaml.Node{}
	for i := 0; i < len(files); i++ {
		file := files[i]
		if i == MaxTemplates {
			return Invalid(file, "more than %d templates (the entry and the files it imports): the limit of a package", MaxTemplates)
		}
		data, err := p.ReadFile(file)
		if err != nil {
			continue
		}
		if values += yamlValues(data); values > MaxTemplateValues {
			return Invalid(file, "the templates of the package hold up to %d YAML values (counting line breaks and , : - [ { ?), more than the limit of %d", values, MaxTemplateValues)
		}
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) != nil {
			continue
		}
		docs[file] = &doc
		for _, target := range importTargets(mappingValue(mappingOf(&doc), "imports")) {
			if rel, err := p.resolve(file, target.url); err == nil && !target.repository && !slices.Contains(files, rel) {
				files = append(files, rel)
			}
		}
	}
	if err := checkNodeTemplates(files, docs); err != nil {
		return err
	}
	for _, file := range files {
		if doc := docs[file]; doc != nil {
			if err := largeCollection(file, doc); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkNodeTemplates refuses templates that hold more than MaxNodeTemplates node templates
// together, at the node_templates where the count passes the limit.
func checkNodeTemplates(files []string, docs map[string]*yaml.Node) error {
	total := 0
	var where Diagnostic
	for _, file := range files {
		top := mappingOf(docs[file])
		for _, section := range []string{"topology_template", "service_template"} {
			templates := mappingValue(mappingValue(top, section), "node_templates")
			if templates == nil || templates.Kind != yaml.MappingNode {
				continue
			}
			if total += len(templates.Content) / 2; total > MaxNodeTemplates && where.File == "" {
				where = Diagnostic{File: file, Line: templates.Line, Column: templates.Column}
			}
		}
	}
	if total <= MaxNodeTemplates {
		return nil
	}
	where.Message = fmt.Sprintf("node_templates: %d node templates in the package, more than the limit of %d", total, MaxNodeTemplates)
	return &InvalidError{Diagnostics: []Diagnostic{where}}
}

// largeCollection refuses the first list or map of more than MaxCollectionEntries entries;
// aliases are not followed (their anchors are checked where they stand).
func largeCollection(file string, n *yaml.Node) error {
	entries := len(n.Content)
	if n.Kind == yaml.MappingNode {
		entries /= 2
	}
	if (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && entries > MaxCollectionEntries {
		kind := "a list of %d items"
		if n.Kind == yaml.MappingNode {
			kind = "a map of %d entries"
		}
		return &InvalidError{Diagnostics: []Diagnostic{{File: file, Line: n.Line, Column: n.Column,
			Message: fmt.Sprintf(kind+", more than the limit of %d per list or map", entries, MaxCollectionEntries)}}}
	}
	for _, child := range n.Content {
		if err := largeCollection(file, child); err != nil {
			return err
		}
	}
	return nil
}
