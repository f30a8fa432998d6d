package render

import (
	"fmt"
	"path"
	"strings"

	"calaf.io/calaf/tosca"
)

// What an artifact is run with in a pod (Artifact.Runner).
const (
	RunnerJavaScript = "javascript"
	RunnerShell      = "shell"
)

// Runner tells how the in-pod runner runs an artifact, from its type or else, for an
// untyped or generic implementation, its extension: RunnerJavaScript, RunnerShell, or ""
// when it cannot run it.
func (a Artifact) Runner() string {
	for _, t := range append([]string{a.Type}, a.Types...) {
		switch t {
		case "calaf.artifacts.JavaScript":
			return RunnerJavaScript
		case "calaf.artifacts.Shell":
			return RunnerShell
		}
	}
	if a.Type == "" || a.Type == "tosca.artifacts.Implementation" || a.Type == "tosca::Implementation" {
		switch path.Ext(a.File) {
		case ".js":
			return RunnerJavaScript
		case ".sh":
			return RunnerShell
		}
	}
	return ""
}

// Implementation returns what runs an operation of the node: the artifact it names, or
// the artifact whose file it is, or else the package file it names — File, as resolved
// when the package was rendered (resolveOperations), or the path from the package's root.
func (n *Node) Implementation(op Operation) (name string, artifact Artifact, err error) {
	if name, artifact, ok := n.Artifact(op.Implementation); ok {
		return name, artifact, nil
	}
	file := op.File
	if file == "" {
		if file, err = tosca.CleanPath(op.Implementation); err != nil {
			return "", Artifact{}, fmt.Errorf("implementation %s: it leaves the package", tosca.Echo(op.Implementation))
		}
	}
	return "", Artifact{File: file}, nil
}

// resolveOperations finds, for every operation of the nodes, the package file that
// implements it (Operation.File) and checks, before anything runs it in a pod, that
// the runner can run it: the file is in the package (a path relative to the compiled
// template, or from the package's root), listed in the package's manifest when it has
// one, of a type the runner runs, and so are its dependencies. An ETSI Vnflcm operation
// (Tacker's management drivers, which Calaf does not run) of another type is a warning.
func resolveOperations(pkg *tosca.Package, entry string, nodes []*Node) ([]tosca.Diagnostic, error) {
	r := operationCheck{pkg: pkg, entry: entry}
	for _, node := range nodes {
		for i := range node.Operations {
			r.operation(node, &node.Operations[i])
		}
	}
	if len(r.problems) > 0 {
		return nil, &tosca.InvalidError{Diagnostics: r.problems}
	}
	return r.warnings, nil
}

// operationCheck is one resolveOperations.
type operationCheck struct {
	pkg      *tosca.Package
	entry    string
	listed   map[string]bool
	manifest string
	read     bool
	problems []tosca.Diagnostic
	warnings []tosca.Diagnostic
}

func (r *operationCheck) report(warning bool, node *Node, op *Operation, format string, args ...any) {
	d := tosca.Diagnostic{File: r.entry, Message: fmt.Sprintf("node %s: operation %s: ", tosca.Echo(node.Name), tosca.Echo(op.QualifiedName())) + fmt.Sprintf(format, args...)}
	if warning {
		r.warnings = append(r.warnings, d)
	} else {
		r.problems = append(r.problems, d)
	}
}

// operation resolves and checks one operation of a node.
func (r *operationCheck) operation(node *Node, op *Operation) {
	name, artifact, found := node.Artifact(op.Implementation)
	if !found {
		file, err := r.path(op.Implementation, path.Dir(r.entry))
		if err != nil {
			r.report(false, node, op, "implementation %s: %v", tosca.Echo(op.Implementation), err)
			return
		}
		artifact = Artifact{File: file}
	}
	what := "implementation " + tosca.Echo(op.Implementation)
	if found {
		what = "artifact " + tosca.Echo(name)
	}
	switch {
	case artifact.Repository != "":
		r.report(false, node, op, "%s comes from the repository %s: Calaf runs the package's own files", what, tosca.Echo(artifact.Repository))
		return
	case artifact.File == "":
		r.report(false, node, op, "%s has no file", what)
		return
	case !r.pkg.HasFile(artifact.File) && !found:
		r.report(false, node, op, "%s is no artifact of the node and no file of the package (%s)", what, tosca.Echo(artifact.File))
		return
	case !r.pkg.HasFile(artifact.File):
		r.report(false, node, op, "%s: %s is not a file of the package", what, tosca.Echo(artifact.File))
		return
	}
	op.File = artifact.File
	r.checkListed(node, op, what, artifact.File)
	if artifact.Runner() == "" {
		kind := artifact.Type
		if kind == "" {
			kind = "a file that is no .js nor .sh"
		}
		r.report(isVnflcm(*op), node, op, "%s is %s: the runner runs calaf.artifacts.JavaScript and calaf.artifacts.Shell artifacts", what, tosca.Echo(kind))
	}
	for _, dependency := range op.Dependencies {
		r.dependency(node, op, artifact, dependency)
	}
}

// dependency checks a companion file of an operation as the orchestrator finds it: an
// artifact of the node, a name beside the implementation, or a package path.
func (r *operationCheck) dependency(node *Node, op *Operation, implementation Artifact, dependency string) {
	file := dependency
	if _, a, ok := node.Artifact(dependency); ok {
		file = a.File
	} else if !strings.Contains(dependency, "/") {
		file = path.Join(path.Dir(implementation.File), dependency)
	}
	clean, err := tosca.CleanPath(file)
	switch {
	case err != nil:
		r.report(false, node, op, "dependency %s: it leaves the package", tosca.Echo(dependency))
	case !r.pkg.HasFile(clean):
		r.report(false, node, op, "dependency %s: %s is not a file of the package", tosca.Echo(dependency), tosca.Echo(clean))
	default:
		r.checkListed(node, op, "dependency "+tosca.Echo(dependency), clean)
	}
}

// path resolves an implementation given as a path: relative to dir (the compiled
// template's directory), or else, when no such file exists, from the package's root.
func (r *operationCheck) path(ref, dir string) (string, error) {
	rel, err := tosca.CleanPath(path.Join(dir, ref))
	if err != nil {
		return "", fmt.Errorf("it leaves the package")
	}
	if !r.pkg.HasFile(rel) {
		if fromRoot, err := tosca.CleanPath(ref); err == nil && r.pkg.HasFile(fromRoot) {
			return fromRoot, nil
		}
	}
	return rel, nil
}

// checkListed refuses a file the package's manifest does not list, when it has one.
func (r *operationCheck) checkListed(node *Node, op *Operation, what, file string) {
	if !r.read {
		r.read = true
		manifest, listed, err := r.pkg.ManifestListing()
		if err != nil {
			r.problems = append(r.problems, tosca.DiagnosticsOf(err)...)
		}
		r.manifest, r.listed = manifest, listed
	}
	if r.listed != nil && !r.listed[file] {
		r.report(false, node, op, "%s: %s is not listed in the manifest %s: an unlisted script is refused", what, tosca.Echo(file), r.manifest)
	}
}

// isVnflcm tells an operation of SOL001's Vnflcm interface.
func isVnflcm(op Operation) bool {
	return op.Interface == "Vnflcm" || strings.HasSuffix(op.InterfaceType, "Vnflcm")
}
