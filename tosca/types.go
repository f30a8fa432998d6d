package tosca

import (
	"io/fs"
	"path"
	"strings"

	"gopkg.in/yaml.v3"

	"calaf.io/calaf/profiles"
)

// nodeTypes indexes the node type definitions a template can reach through its imports.
type nodeTypes map[string]*yaml.Node

// maxTypeDepth bounds a derived_from chain (a loop is Puccini's to report).
const maxTypeDepth = 64

// nodeTypeIndex reads the node types of every file reachable from a package file through
// its imports: package files, ETSI type files mapped to their local copies, and the
// embedded profiles. Files that cannot be read are skipped (the preflight and Puccini
// report them).
func (p *Package) nodeTypeIndex(entry string, mapped map[string]string) nodeTypes {
	index := nodeTypes{}
	seen := map[string]bool{}
	queue := []string{entry}
	for len(queue) > 0 {
		file := queue[0]
		queue = queue[1:]
		if seen[file] || len(seen) > p.limits.MaxFiles {
			continue
		}
		seen[file] = true
		top := p.readSource(file)
		if top == nil {
			continue
		}
		types := mappingValue(top, "node_types")
		for i := 0; types != nil && types.Kind == yaml.MappingNode && i+1 < len(types.Content); i += 2 {
			if _, dup := index[types.Content[i].Value]; !dup {
				index[types.Content[i].Value] = types.Content[i+1]
			}
		}
		for _, target := range importTargets(mappingValue(top, "imports")) {
			if next := p.importSource(file, target, mapped); next != "" {
				queue = append(queue, next)
			}
		}
	}
	return index
}

// embeddedPrefix marks sources that are files of the embedded profiles.
const embeddedPrefix = "embedded:"

// importSource names the source an import leads to: a package path, or an embedded
// profile file; "" for what cannot be followed.
func (p *Package) importSource(from string, target importTarget, mapped map[string]string) string {
	if target.repository {
		return ""
	}
	if rel := mapped[target.url]; rel != "" {
		return rel
	}
	if embedded, ok := profiles.EmbeddedPath(target.url); ok {
		return embeddedPrefix + embedded
	}
	if urlScheme.MatchString(target.url) {
		return ""
	}
	if inner, ok := strings.CutPrefix(from, embeddedPrefix); ok {
		return embeddedPrefix + path.Join(path.Dir(inner), target.url)
	}
	rel, err := p.resolvePath(from, target.url)
	if err != nil {
		return ""
	}
	return rel
}

// readSource returns the top-level mapping of a package file or embedded profile file.
func (p *Package) readSource(source string) *yaml.Node {
	if inner, ok := strings.CutPrefix(source, embeddedPrefix); ok {
		data, err := fs.ReadFile(profiles.FS(), inner)
		if err != nil {
			return nil
		}
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) != nil {
			return nil
		}
		return mappingOf(&doc)
	}
	if !p.has(source) {
		return nil
	}
	doc, err := p.readYAML(source)
	if err != nil {
		return nil
	}
	return mappingOf(doc)
}

// derives tells whether a node type is ancestor or derives from it.
func (t nodeTypes) derives(name, ancestor string) bool {
	for depth := 0; name != "" && depth < maxTypeDepth; depth++ {
		if name == ancestor {
			return true
		}
		definition := t[name]
		if definition == nil {
			return false
		}
		parent := mappingValue(definition, "derived_from")
		if parent == nil {
			return false
		}
		name = parent.Value
	}
	return false
}

// defaults returns the property defaults of a node type, the most derived type winning.
func (t nodeTypes) defaults(name string) map[string]any {
	defaults := map[string]any{}
	for depth := 0; name != "" && depth < maxTypeDepth; depth++ {
		definition := t[name]
		if definition == nil {
			break
		}
		properties := mappingValue(definition, "properties")
		for i := 0; properties != nil && properties.Kind == yaml.MappingNode && i+1 < len(properties.Content); i += 2 {
			key := properties.Content[i].Value
			if _, set := defaults[key]; set {
				continue
			}
			if def := mappingValue(properties.Content[i+1], "default"); def != nil {
				defaults[key] = decodeNode(def)
			}
		}
		parent := mappingValue(definition, "derived_from")
		if parent == nil {
			break
		}
		name = parent.Value
	}
	return defaults
}
