package tosca

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strings"

	"calaf.io/calaf/profiles"
)

// Real-world ETSI packages rely on things TOSCA (and Puccini) refuse. Calaf accepts the
// ones listed here with a warning naming the file and line; CompileOptions.Strict refuses
// them. Nothing is ever fetched from the network.

// strictHint ends the diagnostics of idioms refused in strict mode.
const strictHint = " (refused with --strict; tolerated otherwise)"

// etsiImports maps the imports of ETSI SOL001 type files by URL (forge.etsi.org,
// docbox.etsi.org, ...) to the copy of the same name the package carries, so that nothing
// is downloaded: the copy next to the importing file, else the only one in the package. A
// URL import with no copy is an error naming the URL; in strict mode, so is one with a copy.
// It also tells whether the package imports ETSI type files at all (by path or URL).
func (p *Package) etsiImports(strict bool) (*etsiImportResult, error) {
	result := &etsiImportResult{mapped: map[string]string{}}
	mapped := result.mapped
	var warnings, errs []Diagnostic
	seen := map[string]bool{}
	queue := []string{p.Entry}
	for len(queue) > 0 {
		file := queue[0]
		queue = queue[1:]
		if seen[file] {
			continue
		}
		seen[file] = true
		doc, err := p.readYAML(file)
		if err != nil {
			continue // the preflight reports it
		}
		for _, target := range importTargets(mappingValue(mappingOf(doc), "imports")) {
			if target.repository {
				continue
			}
			if isETSITypesFile(target.url) {
				result.etsi = true
			}
			if !urlScheme.MatchString(target.url) || isWindowsDrive(target.url) {
				if rel, err := p.resolve(file, target.url); err == nil {
					queue = append(queue, rel)
				}
				continue
			}
			if _, embedded := profiles.EmbeddedPath(target.url); embedded {
				continue
			}
			if !isETSITypesFile(target.url) || !strings.HasPrefix(target.url, "http") {
				continue
			}
			d := Diagnostic{File: file, Line: target.node.Line, Column: target.node.Column}
			local := p.localCopy(file, path.Base(target.url))
			switch {
			case local == "":
				d.Message = fmt.Sprintf("import %q: Calaf downloads nothing; put a copy of %s in the package next to %s (or import Calaf's edition, see docs/etsi.md)", target.url, path.Base(target.url), file)
				errs = append(errs, d)
			case strict:
				d.Message = fmt.Sprintf("import %q by URL: the package's copy %s would be used instead%s", target.url, local, strictHint)
				errs = append(errs, d)
			default:
				d.Message = fmt.Sprintf("import %q by URL: the package's copy %s is used instead (nothing is downloaded)", target.url, local)
				warnings = append(warnings, d)
				mapped[target.url] = local
				queue = append(queue, local)
			}
		}
	}
	if len(errs) > 0 {
		return nil, &InvalidError{Diagnostics: errs}
	}
	result.warnings = warnings
	return result, nil
}

// etsiImportResult is what etsiImports found.
type etsiImportResult struct {
	// mapped maps import URLs to package paths.
	mapped   map[string]string
	warnings []Diagnostic
	// etsi tells whether any file imports an ETSI SOL001 type file.
	etsi bool
}

// localCopy finds the package file named base: next to from, else the only one.
func (p *Package) localCopy(from, base string) string {
	if next := path.Join(path.Dir(from), base); p.has(next) {
		return next
	}
	found := ""
	for _, f := range p.Files {
		if path.Base(f.Path) == base {
			if found != "" {
				return ""
			}
			found = f.Path
		}
	}
	return found
}

// metaWarnings reports the idioms of TOSCA.meta: "Created-by" for "Created-By".
func (p *Package) metaWarnings(strict bool) ([]Diagnostic, error) {
	if !p.has(MetaPath) {
		return nil, nil
	}
	data, err := p.ReadFile(MetaPath)
	if err != nil {
		return nil, nil
	}
	var found []Diagnostic
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for row := 1; scanner.Scan(); row++ {
		key, _, ok := strings.Cut(scanner.Text(), ":")
		key = strings.TrimSpace(key)
		if ok && strings.EqualFold(key, "Created-By") && key != "Created-By" {
			found = append(found, Diagnostic{File: MetaPath, Line: row, Message: fmt.Sprintf("%q is spelled %q in TOSCA-Meta 1.1", key, "Created-By")})
		}
	}
	if strict && len(found) > 0 {
		for i := range found {
			found[i].Message += strictHint
		}
		return nil, &InvalidError{Diagnostics: found}
	}
	return found, nil
}

// idiom recognizes a problem Puccini reports about a tolerated idiom and words the warning.
type idiom func(d Diagnostic) (string, bool)

var extensionProblem = regexp.MustCompile(`^extension "([^"]*)" is not (.*)$`)

// idioms are the Puccini problems tolerated outside strict mode. Puccini reports each and
// goes on without the offending value, which is what tolerating them means.
var idioms = []idiom{
	// requirements: left empty (null) in a node template.
	func(d Diagnostic) (string, bool) {
		if strings.HasSuffix(d.Path, "requirements") && strings.HasPrefix(d.Message, `"null" instead of`) {
			return "requirements: is empty (null); read as no requirements", true
		}
		return "", false
	},
	// an operation written as [] (Tacker's "use the default driver").
	func(d Diagnostic) (string, bool) {
		if strings.Contains(d.Path, "interfaces[") && strings.HasPrefix(d.Message, `"list" instead of`) {
			return "operation written as []: read as an operation without implementation", true
		}
		return "", false
	},
	// virtual_link_external: [] in substitution_mappings (an unmapped requirement).
	func(d Diagnostic) (string, bool) {
		if strings.Contains(d.Path, "substitution_mappings.requirements") {
			return "requirement mapping written as []: the requirement is left unmapped", true
		}
		return "", false
	},
	// Vdu.Compute's virtual_compute capability left without virtual_memory and
	// virtual_cpu: on Kubernetes the workload's manifest says what its pods need.
	func(d Diagnostic) (string, bool) {
		if d.Message != "unassigned required property" || !strings.Contains(d.Path, `.capabilities["virtual_compute"].properties[`) {
			return "", false
		}
		return "left unassigned (as in Tacker's CNF packages): the workload's manifest gives its pods' resources", true
	},
	// Puccini takes an artifact's extension from the first dot of its path.
	func(d Diagnostic) (string, bool) {
		m := extensionProblem.FindStringSubmatch(d.Message)
		if m == nil {
			return "", false
		}
		real := strings.TrimPrefix(path.Ext(m[1]), ".")
		if real == "" || !strings.Contains(m[2], `"`+real+`"`) {
			return "", false
		}
		return fmt.Sprintf("artifact file read as extension %q (from its first dot); its extension %q is the one required", m[1], real), true
	},
}

// tolerate splits Puccini's problems into the tolerated idioms (returned as warnings at
// their file and line) and the real problems.
func tolerate(diags []Diagnostic) (warnings, problems []Diagnostic) {
	for _, d := range diags {
		tolerated := false
		for _, recognize := range idioms {
			if message, ok := recognize(d); ok {
				w := d
				w.Message = message
				warnings = append(warnings, w)
				tolerated = true
				break
			}
		}
		if !tolerated {
			problems = append(problems, d)
		}
	}
	return warnings, problems
}

// flavourIDPath is where Puccini reports a flavour's flavour_id.
const flavourIDPath = `topology_template.substitution_mappings.properties["flavour_id"]`

var unsatisfiedVirtualLink = regexp.MustCompile(`^could not satisfy "(virtual_link[^"]*)" because no candidate node template provides required capability$`)

// valueIdioms are the problems of evaluating a SOL001 flavour (requirement resolution,
// constraints) tolerated outside strict mode, each with its warning.
var valueIdioms = []func(vnfd *VNFD, path, message string) (string, bool){
	// a flavour_id the valid_values of the VNF node type's flavour_id do not list (Tacker
	// adds flavours to a package without updating its types).
	func(vnfd *VNFD, path, message string) (string, bool) {
		if path != flavourIDPath || !strings.HasPrefix(message, "returned false in call to tosca.constraint.valid_values(") {
			return "", false
		}
		return fmt.Sprintf("flavour_id %q is not among the valid_values of the VNF node type's flavour_id; the flavour is deployed all the same", vnfd.Flavour), true
	},
	// a virtual link requirement no node satisfies (the VNF's external and internal
	// virtual links, declared by its type without occurrences): a CNF on Kubernetes
	// deploys no virtual link.
	func(_ *VNFD, _, message string) (string, bool) {
		m := unsatisfiedVirtualLink.FindStringSubmatch(message)
		if m == nil {
			return "", false
		}
		return fmt.Sprintf("requirement %q left unsatisfied: virtual links are not deployed on Kubernetes", m[1]), true
	},
}

// TolerateValues splits the problems found evaluating the values of a SOL001 flavour into
// the idioms tolerated (returned as warnings) and the real problems; a compile that was
// strict tolerates none.
func TolerateValues(vnfd *VNFD, diags []Diagnostic) (warnings, problems []Diagnostic) {
	if vnfd == nil || vnfd.Strict {
		return nil, diags
	}
	for _, d := range diags {
		path, message := d.Path, d.Message
		if before, after, found := strings.Cut(message, ": "); path == "" && found && strings.HasPrefix(before, "topology_template.") {
			path, message = before, after
		}
		tolerated := false
		for _, recognize := range valueIdioms {
			if warning, ok := recognize(vnfd, path, message); ok {
				d.Path, d.Message, tolerated = path, warning, true
				warnings = append(warnings, d)
				break
			}
		}
		if !tolerated {
			problems = append(problems, d)
		}
	}
	return warnings, problems
}

// rootArtifacts finds the artifact files written relative to the package's root in a
// template (entry, or one it imports) under another directory (Tacker's convention: "file: Scripts/mgmt.py" in
// Definitions/df.yaml): an artifact file that is not next to the file naming it but is at
// the root is read from the root, with a warning; in strict mode it is an error. It maps
// each such reference to its package path, for the compile's URL context. A reference
// that names the file relative to its template elsewhere in the package is left alone.
func (p *Package) rootArtifacts(entry string, strict bool, mapped map[string]string) (map[string]string, []Diagnostic, error) {
	found := map[string]string{}
	var warnings, errs []Diagnostic
	ambiguous := map[string]bool{}
	for _, file := range p.templateFiles(entry, mapped) {
		doc, err := p.readYAML(file)
		if err != nil {
			continue
		}
		for _, artifact := range artifactFiles(mappingOf(doc)) {
			ref := artifact.Value
			if urlScheme.MatchString(ref) || path.IsAbs(ref) {
				continue
			}
			if _, err := p.resolve(file, ref); err == nil {
				ambiguous[ref] = true // it names a file next to one template: map it nowhere
				continue
			}
			if !p.hasAtRoot(ref) {
				continue // Puccini reports the missing file
			}
			root, _ := cleanRelative(ref)
			d := Diagnostic{File: file, Line: artifact.Line, Column: artifact.Column}
			if strict {
				d.Message = fmt.Sprintf("artifact file %q is not next to %s; %s at the package's root would be read (Tacker's convention)%s", ref, file, root, strictHint)
				errs = append(errs, d)
				continue
			}
			d.Message = fmt.Sprintf("artifact file %q is not next to %s: %s at the package's root is read (Tacker's convention)", ref, file, root)
			warnings = append(warnings, d)
			found[ref] = root
		}
	}
	if len(errs) > 0 {
		return nil, nil, &InvalidError{Diagnostics: errs}
	}
	for ref := range ambiguous {
		delete(found, ref)
	}
	return found, warnings, nil
}

// templateFiles lists the package's templates entry imports, directly or not, entry
// first; mapped leads URL imports to the package's copies.
func (p *Package) templateFiles(entry string, mapped map[string]string) []string {
	var files []string
	seen := map[string]bool{}
	queue := []string{entry}
	for len(queue) > 0 && len(files) < p.limits.MaxFiles {
		file := queue[0]
		queue = queue[1:]
		if seen[file] {
			continue
		}
		seen[file] = true
		files = append(files, file)
		doc, err := p.readYAML(file)
		if err != nil {
			continue
		}
		for _, target := range importTargets(mappingValue(mappingOf(doc), "imports")) {
			if rel := mapped[target.url]; rel != "" {
				queue = append(queue, rel)
			} else if rel, err := p.resolve(file, target.url); err == nil && !target.repository {
				queue = append(queue, rel)
			}
		}
	}
	return files
}
