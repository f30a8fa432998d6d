package tosca

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// scriptletImportPrefix marks metadata keys through which Puccini reads a JavaScript file.
const scriptletImportPrefix = "puccini.scriptlet.import:"

var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// preflight walks the import graph from the entry template before Puccini reads anything
// and refuses every reference Puccini would follow outside the package: imports that are
// absolute, escape the package, use a network scheme or a repository, scriptlet imports
// that leave the package, and artifact files fetched from anywhere but the package or a
// declared repository. Malformed YAML (including alias bombs) is reported here with its
// line. allowedImports holds the URLs of embedded profiles that may be imported by name;
// mapped maps the URL imports of ETSI type files to the package's copies, walked instead.
func (p *Package) preflight(allowedImports map[string]bool, mapped map[string]string, rootArtifacts bool) error {
	f := &flight{pkg: p, allowed: allowedImports, mapped: mapped, rootArtifacts: rootArtifacts, state: map[string]int{}, imported: map[string]bool{}}
	f.visit(p.Entry)
	if len(f.diags) > 0 {
		return &InvalidError{Diagnostics: f.diags}
	}
	return nil
}

// flight is one preflight walk: a depth-first walk of the import graph, so that an import
// cycle is reported with its path.
type flight struct {
	pkg     *Package
	allowed map[string]bool
	mapped  map[string]string
	diags   []Diagnostic
	state   map[string]int // 0 unvisited, 1 on the current import path, 2 done
	path    []string
	// imported marks the imports by reference walked already; nil in the walk of an
	// imported profile, which may not import others by reference.
	imported map[string]bool
	// rootArtifacts lets an artifact file missing next to its template be at the
	// package's root (an ETSI package: Tacker's convention, see rootArtifacts).
	rootArtifacts bool
}

func (f *flight) report(file string, n *yaml.Node, format string, args ...any) {
	d := Diagnostic{File: file, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		d.Line, d.Column = n.Line, n.Column
	}
	f.diags = append(f.diags, d)
}

func (f *flight) visit(file string) {
	p := f.pkg
	f.state[file] = 1
	f.path = append(f.path, file)
	defer func() {
		f.state[file] = 2
		f.path = f.path[:len(f.path)-1]
	}()
	doc, second, err := p.readYAMLDocuments(file)
	if err != nil {
		f.diags = append(f.diags, DiagnosticsOf(err)...)
		return
	}
	if second > 0 {
		f.diags = append(f.diags, Diagnostic{File: file, Line: second, Message: "a second YAML document (after ---): a template is one document, and TOSCA would ignore the rest"})
	}
	f.diags = append(f.diags, keyProblems(file, doc, false)...)
	top := mappingOf(doc)
	if top == nil {
		return // Puccini reports what is wrong with the shape
	}
	for _, target := range importTargets(mappingValue(top, "imports")) {
		switch {
		case target.repository:
			f.report(file, target.node, "imports from a repository are not allowed: put the file in the package")
		case f.allowed[target.url]:
		case f.imported != nil && f.pkg.importOf(target.url) != nil:
			f.visitImport(f.pkg.importOf(target.url))
		case IsReference(target.url) && f.imported == nil:
			f.report(file, target.node, "import %q: a profile imported by reference imports only its own files and the Calaf profile", target.url)
		case IsReference(target.url):
			f.report(file, target.node, "import %q is not resolved: lock the package's imports by reference (calaf package lock) and let calaf resolve them from its lock", target.url)
		case f.mapped[target.url] != "":
			if rel := f.mapped[target.url]; f.state[rel] == 0 {
				f.visit(rel)
			}
		case urlScheme.MatchString(target.url) && !isWindowsDrive(target.url):
			f.report(file, target.node, "import %q is not allowed: imports must be files inside the package (or the Calaf profile)", target.url)
		default:
			rel, err := p.resolve(file, target.url)
			switch {
			case err != nil:
				f.report(file, target.node, "import %q: %v", target.url, err)
			case rel == file:
				f.report(file, target.node, "import %q imports the file itself", target.url)
			case f.state[rel] == 1:
				cycle := append([]string{}, f.path[slices.Index(f.path, rel):]...)
				f.report(file, target.node, "import %q closes an import cycle: %s", target.url, strings.Join(append(cycle, rel), " → "))
			case f.state[rel] == 0:
				f.visit(rel)
			}
		}
	}
	walkMappings(doc, func(key, value *yaml.Node) {
		if !strings.HasPrefix(key.Value, scriptletImportPrefix) {
			return
		}
		if _, err := p.resolve(file, value.Value); err != nil {
			f.report(file, value, "scriptlet %q: %v", value.Value, err)
		}
	})
	for _, artifact := range artifactFiles(top) {
		if urlScheme.MatchString(artifact.Value) && !isWindowsDrive(artifact.Value) {
			f.report(file, artifact, "artifact file %q is not allowed: artifacts must be files inside the package or name a repository", artifact.Value)
			continue
		}
		rel, err := p.resolvePath(file, artifact.Value)
		switch {
		case err != nil:
			f.report(file, artifact, "artifact file %s: %v", Echo(artifact.Value), err)
		case !p.has(rel) && !(f.rootArtifacts && p.hasAtRoot(artifact.Value)):
			f.report(file, artifact, "artifact file %s: %s is not a file of the package", Echo(artifact.Value), Echo(rel))
		}
	}
}

// visitImport walks the files of a profile imported by reference, within the profile:
// its diagnostics name the import's URL and the file in it.
func (f *flight) visitImport(imp *Import) {
	if f.imported[imp.URL] {
		return
	}
	f.imported[imp.URL] = true
	profile := imp.Profile.Package()
	sub := &flight{pkg: profile, allowed: f.allowed, state: map[string]int{}}
	sub.visit(profile.Entry)
	for _, d := range sub.diags {
		d.File = imp.URL + "!" + d.File
		f.diags = append(f.diags, d)
	}
}

// hasAtRoot tells whether a reference names a file from the package's root.
func (p *Package) hasAtRoot(ref string) bool {
	root, err := cleanRelative(ref)
	return err == nil && p.has(root)
}

// References returns the package paths a file refers to — its imports, scriptlet imports
// and artifact files — whether they exist or not; nil for a file that is not YAML.
func (p *Package) References(file string) []string {
	return p.references(file)
}

// references lists the package-relative files that a YAML file of the package refers to:
// its relative imports, scriptlet imports and artifact files. References that are URLs,
// absolute or outside the package are left to the preflight to report.
func (p *Package) references(file string) []string {
	doc, err := p.readYAML(file)
	if err != nil {
		return nil
	}
	top := mappingOf(doc)
	if top == nil {
		return nil
	}
	var refs []string
	add := func(ref string) {
		if urlScheme.MatchString(ref) && !strings.HasPrefix(ref, "file:") {
			return
		}
		if rel, err := p.resolvePath(file, ref); err == nil {
			refs = append(refs, rel)
		}
	}
	for _, target := range importTargets(mappingValue(top, "imports")) {
		if !target.repository {
			add(target.url)
		}
	}
	walkMappings(doc, func(key, value *yaml.Node) {
		if strings.HasPrefix(key.Value, scriptletImportPrefix) {
			add(value.Value)
		}
	})
	for _, artifact := range artifactFiles(top) {
		add(artifact.Value)
	}
	return refs
}

// maxAliasNodes bounds how many nodes aliases may add to a document once expanded. TOSCA
// templates rarely use aliases at all; a "billion laughs" document adds billions.
const maxAliasNodes = 100_000

// readYAML parses the first document of a package file, turning syntax errors and alias
// bombs into diagnostics. Aliases are counted, never expanded, so this takes time linear
// in the text.
func (p *Package) readYAML(file string) (*yaml.Node, error) {
	doc, _, err := p.readYAMLDocuments(file)
	return doc, err
}

// readYAMLDocuments is readYAML that also tells the line where a second document of the
// file begins (0 when it has none, or only empty ones).
func (p *Package) readYAMLDocuments(file string) (doc *yaml.Node, second int, err error) {
	data, err := p.ReadFile(file)
	if err != nil {
		return nil, 0, Invalid(file, "%v", err)
	}
	if values := yamlValues(data); values > MaxTemplateValues {
		return nil, 0, Invalid(file, "holds up to %d YAML values (counting line breaks and , : - [ { ?), more than the limit of %d", values, MaxTemplateValues)
	}
	decoder := yaml.NewDecoder(bytes.NewReader(data))
	doc = &yaml.Node{}
	if err := decoder.Decode(doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, yamlDiagnostic(file, err)
	}
	literal := countNodes(doc, nil, false)
	if expanded := countNodes(doc, map[*yaml.Node]int{}, true); expanded-literal > maxAliasNodes {
		return nil, 0, Invalid(file, "invalid YAML: its aliases expand it by more than %d nodes (an alias bomb?)", maxAliasNodes)
	}
	for {
		var next yaml.Node
		err := decoder.Decode(&next)
		switch {
		case errors.Is(err, io.EOF):
			return doc, 0, nil
		case err != nil:
			line, _ := YAMLProblem(err)
			return doc, max(line, 1), nil
		case len(next.Content) > 0 && !(next.Content[0].Kind == yaml.ScalarNode && next.Content[0].Tag == "!!null"):
			return doc, next.Content[0].Line, nil
		}
	}
}

// countNodes counts the nodes of a YAML tree, with aliases expanded when expand is set;
// sizes are memoized per node and saturate above maxAliasNodes, so a document whose
// expansion is exponential is counted in linear time. An alias to a node that contains
// it counts as infinite.
func countNodes(n *yaml.Node, memo map[*yaml.Node]int, expand bool) int {
	const infinite = 1 << 40
	if n == nil {
		return 0
	}
	if n.Kind == yaml.AliasNode {
		if !expand {
			return 1
		}
		n = n.Alias
	}
	if expand {
		if size, ok := memo[n]; ok {
			if size < 0 {
				return infinite // an alias inside its own anchor
			}
			return size
		}
		memo[n] = -1
	}
	size := 1
	for _, child := range n.Content {
		size = min(size+countNodes(child, memo, expand), infinite)
	}
	if expand {
		memo[n] = size
	}
	return size
}

// yamlDiagnostic locates an error of the YAML library in file (YAMLProblem).
func yamlDiagnostic(file string, err error) error {
	line, message := YAMLProblem(err)
	return &InvalidError{Diagnostics: []Diagnostic{{File: file, Line: line, Message: "invalid YAML: " + message}}}
}

// resolve checks a reference made from file and returns its package-relative path; the
// target must exist.
func (p *Package) resolve(from, ref string) (string, error) {
	rel, err := p.resolvePath(from, ref)
	if err != nil {
		return "", err
	}
	if !p.has(rel) {
		return "", fmt.Errorf("%q is not a file in the package", rel)
	}
	return rel, nil
}

// resolvePath checks that a reference made from file stays inside the package.
func (p *Package) resolvePath(from, ref string) (string, error) {
	ref = strings.TrimPrefix(ref, "file:")
	if path.IsAbs(ref) || isWindowsDrive(ref) {
		return "", fmt.Errorf("absolute paths are not allowed, use a path relative to %s", from)
	}
	rel, err := cleanRelative(path.Join(path.Dir(from), ref))
	if err != nil {
		return "", fmt.Errorf("it leaves the package")
	}
	return rel, nil
}

func isWindowsDrive(s string) bool {
	return len(s) > 2 && s[1] == ':' && (s[2] == '\\' || s[2] == '/')
}

type importTarget struct {
	url        string
	repository bool
	node       *yaml.Node
}

// importTargets lists the imports of a file in every notation TOSCA 1.0–2.0 allows.
func importTargets(imports *yaml.Node) []importTarget {
	if imports == nil || imports.Kind != yaml.SequenceNode {
		return nil
	}
	var targets []importTarget
	for _, item := range imports.Content {
		switch item.Kind {
		case yaml.ScalarNode:
			targets = append(targets, importTarget{url: item.Value, node: item})
		case yaml.MappingNode:
			url := mappingValue(item, "file")
			if url == nil {
				url = mappingValue(item, "url")
			}
			if url != nil {
				targets = append(targets, importTarget{url: url.Value, node: url, repository: mappingValue(item, "repository") != nil})
				continue
			}
			// TOSCA 1.0 "sequenced list": - name: path | - name: {file: path}
			if len(item.Content) == 2 {
				value := item.Content[1]
				if value.Kind == yaml.ScalarNode {
					targets = append(targets, importTarget{url: value.Value, node: value})
				} else if value.Kind == yaml.MappingNode {
					wrapped := &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{value}}
					targets = append(targets, importTargets(wrapped)...)
				}
			}
		}
	}
	return targets
}

// artifactFiles returns the file references of artifacts that Puccini opens while parsing:
// those in node types and node templates that do not name a repository.
func artifactFiles(top *yaml.Node) []*yaml.Node {
	var files []*yaml.Node
	collect := func(entities *yaml.Node) {
		for _, entity := range mappingValues(entities) {
			for _, artifact := range mappingValues(mappingValue(entity, "artifacts")) {
				switch artifact.Kind {
				case yaml.ScalarNode:
					files = append(files, artifact)
				case yaml.MappingNode:
					if mappingValue(artifact, "repository") != nil {
						continue
					}
					if file := mappingValue(artifact, "file"); file != nil && file.Kind == yaml.ScalarNode {
						files = append(files, file)
					}
				}
			}
		}
	}
	collect(mappingValue(top, "node_types"))
	for _, section := range []string{"topology_template", "service_template"} {
		collect(mappingValue(mappingValue(top, section), "node_templates"))
	}
	return files
}

func mappingOf(doc *yaml.Node) *yaml.Node {
	if doc == nil {
		return nil
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return nil
	}
	return doc
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func mappingValues(m *yaml.Node) []*yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	values := make([]*yaml.Node, 0, len(m.Content)/2)
	for i := 1; i < len(m.Content); i += 2 {
		values = append(values, m.Content[i])
	}
	return values
}

// keyProblems reports the keys of a YAML document that are a YAML null (null, ~, or
// nothing) where a name is expected — a node template named null is no name anyone meant
// — and, with names set (a document of names, such as inputs), those that are a map or
// a list. (A template's maps may have keys that are function calls, which Puccini
// evaluates.)
func keyProblems(file string, doc *yaml.Node, names bool) []Diagnostic {
	var diags []Diagnostic
	walkMappings(doc, func(key, _ *yaml.Node) {
		problem := ""
		switch {
		case names && (key.Kind == yaml.MappingNode || key.Kind == yaml.SequenceNode):
			problem = "a key that is a map or a list: names are text"
		case key.Kind == yaml.ScalarNode && key.Tag == "!!null" && key.Style == 0:
			problem = fmt.Sprintf("a key that is a YAML null (%s): quote it (\"null\") if the name is meant", nullSpelling(key.Value))
		}
		if problem != "" && len(diags) < MaxDiagnostics {
			diags = append(diags, Diagnostic{File: file, Line: key.Line, Column: key.Column, Message: problem})
		}
	})
	return diags
}

func nullSpelling(value string) string {
	if value == "" {
		return "nothing"
	}
	return value
}

// walkMappings calls visit for every key/value pair of every mapping in the tree. Aliases
// are not followed, so a document is walked in time linear to its text.
func walkMappings(n *yaml.Node, visit func(key, value *yaml.Node)) {
	if n == nil {
		return
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			visit(n.Content[i], n.Content[i+1])
		}
	}
	for _, c := range n.Content {
		walkMappings(c, visit)
	}
}
