package etsi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"calaf.io/calaf/etsi/chart"
	"calaf.io/calaf/tosca"
)

// SOL001 node types Calaf maps.
const (
	typeVNF           = "tosca.nodes.nfv.VNF"
	typeVduCompute    = "tosca.nodes.nfv.Vdu.Compute"
	typeOsContainerDU = "tosca.nodes.nfv.Vdu.OsContainerDeployableUnit"
	typeOsContainer   = "tosca.nodes.nfv.Vdu.OsContainer"
	typeBlockStorage  = "tosca.nodes.nfv.Vdu.VirtualBlockStorage"
	typeMciop         = "tosca.nodes.nfv.Mciop"
	artifactHelmChart = "tosca.artifacts.nfv.HelmChart"
	artifactSwImage   = "tosca.artifacts.nfv.SwImage"
)

// Node is a node template of the flavour as the mapping reads it.
type Node struct {
	Name string
	// Types is the type hierarchy, most derived first.
	Types      []string
	Properties map[string]any
	Artifacts  map[string]Artifact
	// Requirements are the node's resolved requirements.
	Requirements []Requirement
}

func (n *Node) is(typeName string) bool {
	for _, t := range n.Types {
		if t == typeName {
			return true
		}
	}
	return false
}

// Artifact is an artifact of a node template; File is package-relative.
type Artifact struct {
	Types      []string
	File       string
	Repository string
	Properties map[string]any
}

// Requirement is a resolved requirement: its name and its target node template.
type Requirement struct {
	Name   string
	Target string
}

// Input is what Map maps: the flavour's nodes and policies, and the request.
type Input struct {
	VNFD     *tosca.VNFD
	Package  *tosca.Package
	Nodes    []Node
	Policies []Policy
	Request  *Request
	// Service and Namespace are the Calaf Service the VNF is deployed as.
	Service   string
	Namespace string
	// Selector returns the labels that select a node's pods.
	Selector func(node string) map[string]string
	// Charts renders the flavour's Helm charts; nil refuses a flavour that deploys one
	// (chart.ErrNoEngine).
	Charts chart.Engine
	// HelmTimeout bounds the rendering of a Helm chart; zero means chart.DefaultTimeout.
	HelmTimeout time.Duration
	// Scale overrides the scale levels of aspects, by aspect (SOL003 scale: the Service's
	// spec.scale); the instantiation level sets the others.
	Scale map[string]int64
}

// selector returns the labels that select a node's pods.
func (in Input) selector(node string) map[string]string {
	if in.Selector == nil {
		return map[string]string{"calaf.io/node": node}
	}
	return in.Selector(node)
}

// Output is what Map produced.
type Output struct {
	// Objects are the objects of each node template, by node name, in apply order.
	Objects map[string][]map[string]any
	// Warnings say what was adjusted or ignored (e.g. a manifest's namespace).
	Warnings []tosca.Diagnostic
	// VNF describes the instantiated VNF for the Service's status.
	VNF VNF
}

// VNF is the instantiated VNF: who it is, its flavour, level, VDUs and aspects.
type VNF struct {
	// Identity is the VNF node's descriptor id, provider, product and versions.
	Identity tosca.VNFIdentity
	Flavour  string
	Level    string
	VDUs     []VDU
	Aspects  []AspectStatus
	// Levels are the flavour's instantiation levels, sorted.
	Levels []string
}

// VDU is a VDU and the workload realizing it.
type VDU struct {
	// Node is the VDU's node template; Name its properties.name.
	Node string
	Name string
	// Workload is the "Kind/name" of its workload.
	Workload string
	// Replicas is the number of instances of the instantiation level.
	Replicas int64
}

// Map maps the flavour of a SOL001 package onto Kubernetes objects: manifests, container
// VDUs and Helm charts, each VDU's workload scaled to the instantiation level. Problems
// are returned together as a *tosca.InvalidError.
func Map(ctx context.Context, in Input) (*Output, error) {
	m, err := newMapper(in)
	if err != nil {
		return nil, err
	}
	steps := []func(context.Context) error{m.scale, m.helm, m.manifests, m.followNamespace, m.containers, m.bindVDUs}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return m.output(), nil
}

// mapper is one Map run.
type mapper struct {
	in       Input
	params   *params
	scaling  *scaling
	level    string
	replicas map[string]int64 // VDU node → instances
	profiles map[string]vduProfile
	vnfNode  string // owner of the objects that are no VDU's workload
	objects  []*object
	warnings []tosca.Diagnostic
	vdus     []VDU
	replaced map[string]bool // the namespaces of manifests replaced by the Service's
}

// object is a Kubernetes object with where it came from.
type object struct {
	content map[string]any
	file    string // package file (manifest or chart), for diagnostics
	line    int
	owner   string // node template
	vdu     string // the VDU whose workload it is
	chart   bool   // rendered from a Helm chart
}

func newMapper(in Input) (*mapper, error) {
	p, err := in.Request.params()
	if err != nil {
		return nil, tosca.Invalid(in.VNFD.FlavourFile, "instantiate request: %v", err)
	}
	m := &mapper{in: in, params: p, scaling: readScaling(in.Policies), replicas: map[string]int64{}, profiles: map[string]vduProfile{}, replaced: map[string]bool{}}
	for _, n := range in.Nodes {
		if n.is(typeVNF) && m.vnfNode == "" {
			m.vnfNode = n.Name
		}
	}
	if m.vnfNode == "" {
		for _, n := range in.Nodes {
			if m.isVDU(&n) {
				m.vnfNode = n.Name // the first VDU by name holds the shared objects
				break
			}
		}
	}
	if p.namespace != "" && p.namespace != in.Namespace {
		m.warn(in.VNFD.FlavourFile, 0, "instantiate request: additionalParams.namespace %q is not used: the VNF is deployed in the Service's namespace %q", p.namespace, in.Namespace)
	}
	for _, w := range in.Request.Warnings() {
		m.warn(in.VNFD.FlavourFile, 0, "instantiate request: %s", w)
	}
	return m, nil
}

func (m *mapper) isVDU(n *Node) bool {
	return n.is(typeVduCompute) || n.is(typeOsContainerDU)
}

func (m *mapper) warn(file string, line int, format string, args ...any) {
	m.warnings = append(m.warnings, tosca.Diagnostic{File: file, Line: line, Message: fmt.Sprintf(format, args...)})
}

// scale computes the instances of every VDU at the instantiation level; every VDU out of
// its profile is reported.
func (m *mapper) scale(context.Context) error {
	level, err := m.scaling.level(m.in.Request.levelID())
	if err != nil {
		return tosca.Invalid(m.in.VNFD.FlavourFile, "%v", err)
	}
	m.level = level
	warnings, err := m.scaling.checkScale(m.in.Scale)
	if err != nil {
		return tosca.Invalid(m.in.VNFD.FlavourFile, "%v", err)
	}
	for _, w := range warnings {
		m.warn(m.in.VNFD.FlavourFile, 0, "%s", w)
	}
	var diags []tosca.Diagnostic
	for _, n := range m.in.Nodes {
		if !m.isVDU(&n) {
			continue
		}
		m.profiles[n.Name] = profileOf(n.Properties)
		replicas, err := m.scaling.replicas(n.Name, m.profiles[n.Name], level, m.in.Scale)
		if err != nil {
			diags = append(diags, m.nodeDiagnostic(n.Name, err.Error()))
			continue
		}
		m.replicas[n.Name] = replicas
	}
	if len(diags) > 0 {
		return &tosca.InvalidError{Diagnostics: diags}
	}
	return nil
}

// levelID is the requested instantiation level ("" for none).
func (r *Request) levelID() string {
	if r == nil {
		return ""
	}
	return r.InstantiationLevelID
}

// nodeDiagnostic locates a message at a node template of the flavour file.
func (m *mapper) nodeDiagnostic(node, message string) tosca.Diagnostic {
	return tosca.Diagnostic{File: m.in.VNFD.FlavourFile, Line: m.in.VNFD.NodeLines[node], Message: message}
}

// workloadKinds are the kinds a VDU can map to, with whether they have replicas.
var workloadKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "ReplicaSet": true, "DaemonSet": false, "Pod": false}

// bindVDUs maps each VDU realized by manifests or a Helm chart to its workload (the one
// named like the VDU's properties.name; for a chart, "<name>-<suffix>" too), gives it the
// VDU's replicas, and assigns it to the VDU's node. Every VDU without a workload is
// reported, naming the workload it looked for.
func (m *mapper) bindVDUs(context.Context) error {
	var diags []tosca.Diagnostic
	for _, n := range m.in.Nodes {
		if !m.isVDU(&n) || m.builtByCalaf(&n) {
			continue
		}
		name, mapping := asString(n.Properties["name"]), m.params.vduMapping[n.Name]
		obj := m.findWorkload(name, mapping)
		if obj == nil {
			if d, refused := m.missingWorkload(&n, name, mapping); refused {
				diags = append(diags, d)
			}
			continue
		}
		obj.owner, obj.vdu = n.Name, n.Name
		kind := asString(obj.content["kind"])
		if workloadKinds[kind] {
			spec := asMap(obj.content["spec"])
			spec["replicas"] = m.replicas[n.Name]
			obj.content["spec"] = spec
		}
		m.labelPods(obj, n.Name)
		m.vdus = append(m.vdus, VDU{Node: n.Name, Name: name, Workload: kind + "/" + objectName(obj.content), Replicas: m.replicas[n.Name]})
	}
	if len(diags) > 0 {
		return &tosca.InvalidError{Diagnostics: diags}
	}
	if len(m.vdus) == 0 && len(m.objects) == 0 && len(m.params.defFiles) == 0 {
		return tosca.Invalid(m.in.VNFD.FlavourFile, "flavour %q maps no node to any Kubernetes object: it has no VDU (tosca.nodes.nfv.Vdu.Compute or Vdu.OsContainerDeployableUnit), and the request names no manifests or Helm chart", m.in.VNFD.Flavour)
	}
	return nil
}

// labelPods gives the pods of a VDU's workload the labels that say whose they are (the
// Service's and the VDU's), as the workloads Calaf builds have them: a heal chooses pods,
// the NFV API lists VNFC instances, by them. A Pod is labelled as every object is.
func (m *mapper) labelPods(obj *object, node string) {
	if asString(obj.content["kind"]) == "Pod" {
		return
	}
	spec := asMap(obj.content["spec"])
	template := asMap(spec["template"])
	meta := asMap(template["metadata"])
	labels := asMap(meta["labels"])
	for k, v := range m.in.selector(node) {
		labels[k] = v
	}
	meta["labels"], template["metadata"], spec["template"], obj.content["spec"] = labels, meta, template, spec
}

// missingWorkload words a VDU without a workload. When the request lists the manifests
// (or the charts, Tacker v1's using_helm_install_param), the VDUs none of them realizes
// are not instantiated, as Tacker does: a warning, refused under strict. Otherwise (or
// with strict) it is an error.
func (m *mapper) missingWorkload(n *Node, name string, mapping vduMapping) (tosca.Diagnostic, bool) {
	looked := fmt.Sprintf("Deployment, StatefulSet, ReplicaSet, DaemonSet or Pod named %q (its properties.name)", name)
	if mapping.name != "" {
		looked = fmt.Sprintf("workload named %q (additionalParams.vdu_mapping)", mapping.name)
		if mapping.kind != "" {
			looked = fmt.Sprintf("%s %q (additionalParams.vdu_mapping)", mapping.kind, mapping.name)
		}
	}
	if listed := m.requestedSources(); listed != "" && mapping.name == "" {
		d := m.nodeDiagnostic(n.Name, fmt.Sprintf("VDU %s is not instantiated: no workload named %q (its properties.name) in %s", n.Name, name, listed))
		if !m.in.VNFD.Strict {
			m.warnings = append(m.warnings, d)
			return d, false
		}
		d.Message += " (refused with --strict; tolerated otherwise)"
		return d, true
	}
	return m.nodeDiagnostic(n.Name, fmt.Sprintf("VDU %s: no %s in %s", n.Name, looked, m.sources())), true
}

// requestedSources names what the request lists to instantiate: its manifests, or its
// Tacker v1 charts; "" when it lists neither.
func (m *mapper) requestedSources() string {
	switch {
	case len(m.params.defFiles) > 0:
		return "the manifests the request lists (" + strings.Join(m.params.defFiles, ", ") + ")"
	case len(m.params.helmInstalls) > 0:
		var releases []string
		for _, install := range m.params.helmInstalls {
			releases = append(releases, install.release)
		}
		return "the charts the request installs (releases " + strings.Join(releases, ", ") + ")"
	}
	return ""
}

// findWorkload returns the workload a VDU maps to: the one vdu_mapping names (kind and
// name), else the one named name, else the one of a chart named "<name>-<suffix without
// dashes>" (Tacker's rule for charts).
func (m *mapper) findWorkload(name string, mapping vduMapping) *object {
	var prefixed *object
	for _, obj := range m.objects {
		kind := asString(obj.content["kind"])
		if _, ok := workloadKinds[kind]; !ok || obj.vdu != "" {
			continue
		}
		objName := objectName(obj.content)
		if mapping.name != "" {
			if objName == mapping.name && (mapping.kind == "" || mapping.kind == kind) {
				return obj
			}
			continue
		}
		if objName == name {
			return obj
		}
		if rest, ok := strings.CutPrefix(objName, name+"-"); ok && obj.chart && !strings.Contains(rest, "-") && prefixed == nil {
			prefixed = obj
		}
	}
	return prefixed
}

// sources names where workloads were looked for.
func (m *mapper) sources() string {
	seen := map[string]bool{}
	var files []string
	for _, obj := range m.objects {
		if obj.file != "" && !seen[obj.file] {
			seen[obj.file] = true
			files = append(files, obj.file)
		}
	}
	if len(files) == 0 {
		return "the package's manifests (none given: list them in additionalParams.lcm-kubernetes-def-files, or ship them under Files/)"
	}
	sort.Strings(files)
	return strings.Join(files, ", ")
}

// output assembles the objects by node, in the order they were produced.
func (m *mapper) output() *Output {
	out := &Output{Objects: map[string][]map[string]any{}, Warnings: m.warnings}
	for _, obj := range m.objects {
		owner := obj.owner
		if owner == "" {
			owner = m.vnfNode
		}
		out.Objects[owner] = append(out.Objects[owner], obj.content)
	}
	sort.Slice(m.vdus, func(i, j int) bool { return m.vdus[i].Node < m.vdus[j].Node })
	out.VNF = VNF{Identity: m.in.VNFD.Identity(), Flavour: m.in.VNFD.Flavour, Level: m.level, VDUs: m.vdus, Aspects: m.scaling.aspectStatus(m.level, m.in.Scale, m.profiles),
		Levels: slices.Sorted(maps.Keys(m.scaling.levels))}
	return out
}

func objectName(content map[string]any) string {
	return asString(asMap(content["metadata"])["name"])
}
