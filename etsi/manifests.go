package etsi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"strings"

	"gopkg.in/yaml.v3"

	"calaf.io/calaf/tosca"
)

// Bounds of the objects one package may hand Calaf through manifests and charts.
const (
	maxDocumentsPerFile = 1000
	maxObjects          = 5000
)

// unstorableKinds are request-only kinds: the API server answers them and stores nothing,
// so there is nothing to apply, prune or repair.
var unstorableKinds = map[string]bool{
	"SubjectAccessReview": true, "SelfSubjectAccessReview": true, "LocalSubjectAccessReview": true,
	"SelfSubjectRulesReview": true, "SelfSubjectReview": true, "TokenReview": true, "TokenRequest": true,
	"Binding": true, "Eviction": true,
}

// manifests reads the Kubernetes manifests of the package (Tacker's model): the files of
// additionalParams.lcm-kubernetes-def-files in their order, or else — when VDUs wait for
// workloads and no Helm chart gives them — every YAML file under Files/ made only of
// Kubernetes objects (Helm chart directories excepted), in path order.
func (m *mapper) manifests(context.Context) error {
	files := m.params.defFiles
	listed := len(files) > 0
	if !listed {
		if !m.needsManifests() {
			return nil
		}
		files = m.discoverManifests()
	}
	var diags []tosca.Diagnostic
	for _, file := range files {
		objects, err := m.readManifest(file)
		if err != nil {
			if listed {
				diags = append(diags, tosca.DiagnosticsOf(err)...)
			}
			continue
		}
		m.objects = append(m.objects, objects...)
		if len(m.objects) > maxObjects {
			return tosca.Invalid(file, "the manifests hold more than %d objects", maxObjects)
		}
	}
	if len(diags) > 0 {
		return &tosca.InvalidError{Diagnostics: diags}
	}
	return nil
}

// needsManifests tells whether some VDU waits for a workload no chart provides.
func (m *mapper) needsManifests() bool {
	if m.params.helmChartPath != "" || len(m.params.helmInstalls) > 0 {
		return false
	}
	for _, n := range m.in.Nodes {
		if m.isVDU(&n) && !m.builtByCalaf(&n) && !m.hasChart() {
			return true
		}
	}
	return false
}

// discoverManifests lists the YAML files under Files/ outside Helm chart directories.
func (m *mapper) discoverManifests() []string {
	charts := map[string]bool{}
	for _, f := range m.in.Package.Files {
		if path.Base(f.Path) == "Chart.yaml" {
			charts[path.Dir(f.Path)+"/"] = true
		}
	}
	var files []string
	for _, f := range m.in.Package.Files {
		if !strings.HasPrefix(f.Path, "Files/") || (path.Ext(f.Path) != ".yaml" && path.Ext(f.Path) != ".yml") {
			continue
		}
		inChart := false
		for dir := range charts {
			inChart = inChart || strings.HasPrefix(f.Path, dir)
		}
		if !inChart {
			files = append(files, f.Path)
		}
	}
	return files
}

// readManifest reads the objects of one manifest file, replacing hard-coded namespaces and
// skipping the kinds that cannot be stored, with a warning each.
func (m *mapper) readManifest(file string) ([]*object, error) {
	if strings.Contains(file, "://") {
		return nil, tosca.Invalid(file, "additionalParams.lcm-kubernetes-def-files names a URL, and Calaf downloads nothing: put the manifest in the package and list its package path")
	}
	data, err := m.in.Package.ReadFile(file)
	if err != nil {
		return nil, tosca.Invalid(file, "additionalParams.lcm-kubernetes-def-files: %v", err)
	}
	decoder := yaml.NewDecoder(bytes.NewReader(data))
	var objects []*object
	for count := 0; ; count++ {
		var doc yaml.Node
		err := decoder.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return objects, nil
		}
		if err != nil {
			line, problem := tosca.YAMLProblem(err)
			return nil, &tosca.InvalidError{Diagnostics: []tosca.Diagnostic{{File: file, Line: line, Message: "invalid YAML: " + problem}}}
		}
		if count == maxDocumentsPerFile {
			return nil, tosca.Invalid(file, "more than %d YAML documents", maxDocumentsPerFile)
		}
		obj, err := m.manifestObject(file, &doc)
		if err != nil {
			return nil, err
		}
		if obj != nil {
			objects = append(objects, obj)
		}
	}
}

// manifestObject checks one document of a manifest; nil for an empty document or a kind
// that cannot be stored.
func (m *mapper) manifestObject(file string, doc *yaml.Node) (*object, error) {
	top := doc
	if top.Kind == yaml.DocumentNode && len(top.Content) == 1 {
		top = top.Content[0]
	}
	if top.Kind == yaml.ScalarNode && top.Tag == "!!null" || top.Kind == yaml.DocumentNode && len(top.Content) == 0 {
		return nil, nil
	}
	var content map[string]any
	if err := top.Decode(&content); err != nil {
		line, problem := tosca.YAMLProblem(err)
		return nil, &tosca.InvalidError{Diagnostics: []tosca.Diagnostic{{File: file, Line: max(line, top.Line), Message: "not a Kubernetes object: " + problem}}}
	}
	content = normalize(content).(map[string]any)
	kind, name := asString(content["kind"]), objectName(content)
	if unstorableKinds[kind] && asString(content["apiVersion"]) != "" {
		m.warn(file, top.Line, "%s skipped: the API server stores no %s (it only answers the request)", describeUnnamed(kind, name), kind)
		return nil, nil
	}
	if asString(content["apiVersion"]) == "" || kind == "" || name == "" {
		return nil, &tosca.InvalidError{Diagnostics: []tosca.Diagnostic{{File: file, Line: top.Line, Message: "not a Kubernetes object: it needs apiVersion, kind and metadata.name"}}}
	}
	metadata := asMap(content["metadata"])
	if ns := asString(metadata["namespace"]); ns != "" && ns != m.in.Namespace {
		m.warn(file, top.Line, "%s %q: its namespace %q is replaced by the Service's namespace %q", kind, name, ns, m.in.Namespace)
		metadata["namespace"] = m.in.Namespace
		m.replaced[ns] = true
	}
	return &object{content: content, file: file, line: top.Line}, nil
}

// describeUnnamed names an object of a kind whose requests need no name ("TokenReview"
// alone then).
func describeUnnamed(kind, name string) string {
	if name == "" {
		return kind
	}
	return fmt.Sprintf("%s %q", kind, name)
}

// describe names an object for diagnostics.
func (o *object) describe() string {
	return fmt.Sprintf("%s %q (%s:%d)", asString(o.content["kind"]), objectName(o.content), o.file, o.line)
}

// followNamespace adjusts what of the manifests names the namespace they were written
// for, which Calaf replaced by the Service's (unless strict): a Namespace object of that
// name (additionalParams.namespace, or a namespace the manifests hard-code) is skipped —
// the VNF is deployed in its Service's namespace, which exists — and the ServiceAccount
// subjects of (Cluster)RoleBindings that name one of the manifests' accounts in that
// namespace are moved to the Service's namespace with it. Each with a warning.
func (m *mapper) followNamespace(context.Context) error {
	if m.in.VNFD.Strict {
		return nil
	}
	written := maps.Clone(m.replaced)
	if m.params.namespace != "" && m.params.namespace != m.in.Namespace {
		written[m.params.namespace] = true
	}
	accounts := map[string]bool{}
	for _, obj := range m.objects {
		if asString(obj.content["kind"]) == "ServiceAccount" {
			accounts[objectName(obj.content)] = true
		}
	}
	kept := m.objects[:0]
	for _, obj := range m.objects {
		kind, name := asString(obj.content["kind"]), objectName(obj.content)
		if kind == "Namespace" && written[name] {
			m.warn(obj.file, obj.line, "Namespace %q skipped: the manifests were written for it, and the VNF is deployed in the Service's namespace %q", name, m.in.Namespace)
			continue
		}
		if kind == "RoleBinding" || kind == "ClusterRoleBinding" {
			subjects, _ := obj.content["subjects"].([]any)
			for _, subject := range subjects {
				s := asMap(subject)
				if ns := asString(s["namespace"]); asString(s["kind"]) == "ServiceAccount" && written[ns] && accounts[asString(s["name"])] {
					s["namespace"] = m.in.Namespace
					m.warn(obj.file, obj.line, "%s %q: its subject ServiceAccount %q follows the package's account from namespace %q to the Service's namespace %q", kind, name, asString(s["name"]), ns, m.in.Namespace)
				}
			}
		}
		kept = append(kept, obj)
	}
	m.objects = kept
	return nil
}
