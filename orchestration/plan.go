package orchestration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"calaf.io/calaf/artifacts/protocol"
	"calaf.io/calaf/render"
)

// Lifecycle is the order in which the TOSCA Standard operations Calaf runs on deploy.
var Lifecycle = []string{"create", "configure", "start"}

// Teardown is the order in which the TOSCA Standard operations Calaf runs before it
// deletes a node's objects (a Service deleted with DeletionPolicy Delete).
var Teardown = []string{"stop", "delete"}

// Targets of an operation, from its artifact's "targets" property.
const (
	TargetsAll = "all"
	TargetsOne = "one"
)

// Defaults of an operation.
const (
	DefaultTimeout = 5 * time.Minute
	maxTimeout     = time.Hour
	maxRetries     = 10
)

// planned is an operation ready to run: its request (without the pod) and how to run it.
type planned struct {
	Name        string // "Interface.operation"
	Request     protocol.Request
	Targets     string
	Retries     int
	Container   string // empty: the pod's first container
	Timeout     time.Duration
	Fingerprint string
	// Waiting says why the operation cannot run yet (its inputs read attributes not
	// observed yet); the plan is otherwise complete.
	Waiting string
}

// isStandard tells whether an interface is TOSCA's node lifecycle interface.
func isStandard(op render.Operation) bool {
	return op.Interface == "Standard" || strings.HasSuffix(op.InterfaceType, "::Standard") ||
		strings.HasSuffix(op.InterfaceType, "lifecycle.Standard")
}

// lifecycleOperations returns the Standard create, configure and start operations of a
// node, in that order.
func lifecycleOperations(node *render.Node) []render.Operation {
	return standardOperations(node, Lifecycle)
}

// standardOperations returns the node's Standard operations of the names, in their order.
func standardOperations(node *render.Node, names []string) []render.Operation {
	var ops []render.Operation
	for _, name := range names {
		for _, op := range node.Operations {
			if op.Name == name && isStandard(op) {
				ops = append(ops, op)
			}
		}
	}
	return ops
}

// isLifecycle tells whether an operation is one Calaf runs on deploy.
func isLifecycle(op render.Operation) bool {
	if !isStandard(op) {
		return false
	}
	for _, name := range Lifecycle {
		if op.Name == name {
			return true
		}
	}
	return false
}

// findOperation returns a node's operation by "Interface.operation".
func findOperation(node *render.Node, name string) (render.Operation, bool) {
	for _, op := range node.Operations {
		if op.QualifiedName() == name {
			return op, true
		}
	}
	return render.Operation{}, false
}

// planContext is what plans read besides the node.
type planContext struct {
	files      Files
	revision   string
	service    protocol.ServiceInfo
	attributes map[string]any
}

// plan prepares an operation of a node: its artifact and companion files read from the
// package, its kind, properties, timeout and fingerprint. Errors are the package's
// (a missing or unsupported artifact).
func plan(pc planContext, node *render.Node, op render.Operation) (*planned, error) {
	name := op.QualifiedName()
	artifactName, artifact, err := node.Implementation(op)
	if err != nil {
		return nil, fmt.Errorf("operation %s: %v", name, err)
	}
	kind := artifactKind(artifact)
	if kind == "" {
		t := artifact.Type
		if t == "" {
			t = "a file without .js or .sh extension"
		}
		return nil, fmt.Errorf("operation %s is implemented by %s (%s): Calaf runs calaf.artifacts.JavaScript and calaf.artifacts.Shell artifacts", name, op.Implementation, t)
	}
	source, err := pc.files.ReadFile(artifact.File)
	if err != nil {
		return nil, fmt.Errorf("operation %s: artifact %s: %v", name, op.Implementation, err)
	}
	files := map[string]string{}
	for _, dependency := range op.Dependencies {
		file := dependency
		if _, a, ok := node.Artifact(dependency); ok {
			file = a.File
		} else if !strings.Contains(dependency, "/") && artifact.File != "" {
			file = path.Join(path.Dir(artifact.File), dependency)
		}
		data, err := pc.files.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("operation %s: dependency %s: %v", name, dependency, err)
		}
		files[file] = string(data)
	}
	p := &planned{
		Name:      name,
		Targets:   TargetsAll,
		Container: stringProperty(artifact.Properties, "container"),
		Timeout:   DefaultTimeout,
		Waiting:   op.InputsError,
	}
	if t := stringProperty(artifact.Properties, "targets"); t == TargetsOne {
		p.Targets = TargetsOne
	}
	if n, ok := artifact.Properties["retries"].(int64); ok && n > 0 {
		p.Retries = int(min(n, maxRetries))
	} else if f, ok := artifact.Properties["retries"].(float64); ok && f > 0 {
		p.Retries = int(min(f, maxRetries))
	}
	if op.Timeout > 0 {
		p.Timeout = min(time.Duration(op.Timeout)*time.Second, maxTimeout)
	}
	p.Request = protocol.Request{
		Version:   protocol.Version,
		Kind:      kind,
		Operation: name,
		Artifact:  protocol.ArtifactInfo{Name: artifactName, File: artifact.File, Type: artifact.Type},
		Source:    string(source),
		Files:     files,
		Inputs:    op.Inputs,
		Node: protocol.NodeInfo{
			Name: node.Name, Type: node.Type, Properties: node.Properties, Attributes: pc.attributes,
		},
		Service:       pc.service,
		TimeoutMillis: p.Timeout.Milliseconds(),
	}
	p.Fingerprint = fingerprint(p, pc.revision)
	return p, nil
}

// artifactKind tells how the runner runs an artifact (render.Artifact.Runner, which
// validation checks with): its protocol kind, "" when it cannot.
func artifactKind(a render.Artifact) string {
	switch a.Runner() {
	case render.RunnerJavaScript:
		return protocol.KindJavaScript
	case render.RunnerShell:
		return protocol.KindShell
	}
	return ""
}

func stringProperty(properties map[string]any, name string) string {
	s, _ := properties[name].(string)
	return s
}

// fingerprint identifies what an operation runs with: the artifact and its companion
// files, the evaluated inputs, how it runs, and the package revision. An operation runs
// again only when its fingerprint changes (or on request).
func fingerprint(p *planned, revision string) string {
	h := sha256.New()
	files := make([]string, 0, len(p.Request.Files))
	for name := range p.Request.Files {
		files = append(files, name)
	}
	sort.Strings(files)
	write := func(parts ...string) {
		for _, part := range parts {
			fmt.Fprintf(h, "%d:%s;", len(part), part)
		}
	}
	write("calaf-operation/1", p.Name, p.Request.Kind, p.Request.Artifact.File, p.Request.Source, revision, p.Targets, p.Container)
	for _, name := range files {
		write(name, p.Request.Files[name])
	}
	inputs, _ := json.Marshal(p.Request.Inputs) // maps marshal with sorted keys
	write(string(inputs))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
}
