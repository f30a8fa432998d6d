package render

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/etsi"
	"calaf.io/calaf/etsi/chart"
	"calaf.io/calaf/tosca"
)

// mapVNF runs the ETSI mapping on a rendered SOL001 flavour: the objects of its VDUs
// (manifests, container VDUs, Helm charts) join their nodes, each VDU's workload becomes
// the source of its replicas and ready_replicas attributes, and result.VNF describes the
// instance. A package that is not SOL001 refuses an instantiate request.
func mapVNF(ctx context.Context, compiled *tosca.Compiled, raw map[string]any, result *Result, opts Options, charts chart.Engine) error {
	vnfd := compiled.VNFD()
	if vnfd == nil {
		if opts.Instantiate != nil {
			return invalidf("an instantiate request was given, but %s is not an ETSI SOL001 VNF package (no deployment flavour)", compiled.Package.Entry)
		}
		return nil
	}
	result.Warnings = append(result.Warnings, occurrenceWarnings(vnfd, raw["occurrences"])...)
	out, err := etsi.Map(ctx, etsi.Input{
		VNFD: vnfd, Package: compiled.Package, Nodes: etsiNodes(raw["nodes"]), Policies: etsiPolicies(raw["policies"]),
		Request: opts.Instantiate, Charts: charts, Service: opts.Service, Namespace: opts.Namespace, Scale: opts.Scale,
		Selector: func(node string) map[string]string {
			return map[string]string{v1alpha1.LabelService: opts.Service, v1alpha1.LabelNode: LabelValue(node)}
		},
	})
	if err != nil {
		return err
	}
	result.Warnings = append(result.Warnings, out.Warnings...)
	for _, node := range result.Nodes {
		for i, content := range out.Objects[node.Name] {
			obj, err := newObject(node, len(node.Objects)+i, content, opts)
			if err != nil {
				return err
			}
			node.Objects = append(node.Objects, obj)
		}
	}
	for _, vdu := range out.VNF.VDUs {
		if node := result.Node(vdu.Node); node != nil {
			node.Attributes["replicas"] = AttributeSource{Object: vdu.Workload, Paths: []string{"status.replicas"}, Default: int64(0)}
			node.Attributes["ready_replicas"] = AttributeSource{Object: vdu.Workload, Paths: []string{"status.readyReplicas"}, Default: int64(0)}
		}
	}
	result.VNF = &out.VNF
	result.Warnings = append(result.Warnings, dropPythonHooks(vnfd, result)...)
	moveVNFHooks(result)
	return collectObjects(result)
}

// isPython tells whether an artifact is a Python script (tosca.artifacts.Implementation.Python,
// tosca::Implementation.Python as Puccini names it): the management drivers of Tacker's
// packages.
func isPython(a Artifact) bool {
	for _, t := range append([]string{a.Type}, a.Types...) {
		if t == "tosca.artifacts.Implementation.Python" || t == "tosca::Implementation.Python" {
			return true
		}
	}
	return false
}

// dropPythonHooks takes out the lifecycle hooks implemented by Python scripts (Tacker's
// management drivers, run by Tacker itself): Calaf runs JavaScript and shell artifacts
// only, and an occurrence must not fail for a hook it could never run. Each is said.
func dropPythonHooks(vnfd *tosca.VNFD, result *Result) []tosca.Diagnostic {
	var warnings []tosca.Diagnostic
	for _, node := range result.Nodes {
		var kept []Operation
		for _, op := range node.Operations {
			_, artifact, found := node.Artifact(op.Implementation)
			if IsHook(op) && found && isPython(artifact) {
				warnings = append(warnings, tosca.Diagnostic{File: vnfd.FlavourFile, Line: vnfd.NodeLines[node.Name], Message: fmt.Sprintf(
					"%s of %s is implemented by %s, a Python script (Tacker's management driver): Calaf runs no Python, the hook is not run", op.QualifiedName(), node.Name, artifact.File)})
				continue
			}
			kept = append(kept, op)
		}
		node.Operations = kept
	}
	return warnings
}

// moveVNFHooks hands the hooks of the VNF node (its Vnflcm operations, and the artifacts
// of the node) to the first VDU by name: the VNF node has no pods to run them in, the
// VDUs do, and a hook runs once per occurrence.
func moveVNFHooks(result *Result) {
	if len(result.VNF.VDUs) == 0 {
		return
	}
	first := result.Node(result.VNF.VDUs[0].Node)
	for _, node := range result.Nodes {
		if node == first || !slices.Contains(node.Types, "tosca.nodes.nfv.VNF") {
			continue
		}
		var kept []Operation
		for _, op := range node.Operations {
			if !IsHook(op) {
				kept = append(kept, op)
				continue
			}
			if slices.ContainsFunc(first.Operations, func(own Operation) bool { return own.QualifiedName() == op.QualifiedName() }) {
				continue // the VDU's own hook wins
			}
			if _, clash := first.Artifacts[op.Implementation]; !clash {
				if name, artifact, ok := node.Artifact(op.Implementation); ok {
					first.Artifacts[name] = artifact
				}
			}
			first.Operations = append(first.Operations, op)
		}
		node.Operations = kept
	}
	sort.Slice(first.Operations, func(i, j int) bool { return first.Operations[i].QualifiedName() < first.Operations[j].QualifiedName() })
}

// collectObjects lists the objects of every node in plan order, refusing an object that
// two nodes render.
func collectObjects(result *Result) error {
	result.Objects = nil
	seen := map[string]string{}
	for _, node := range result.Nodes {
		for _, obj := range node.Objects {
			id := ObjectID(obj)
			if other, dup := seen[id]; dup && other != node.Name {
				return invalidf("node %s renders %s, which node %s renders as well", tosca.Echo(node.Name), objectRef(obj), tosca.Echo(other))
			} else if dup {
				return invalidf("node %s renders %s twice", tosca.Echo(node.Name), objectRef(obj))
			}
			seen[id] = node.Name
			result.Objects = append(result.Objects, obj)
		}
	}
	return nil
}

// occurrenceWarnings words the capabilities whose minimum occurrences were tolerated —
// those of container VDUs, which have no connection points binding to them.
func occurrenceWarnings(vnfd *tosca.VNFD, raw any) []tosca.Diagnostic {
	var warnings []tosca.Diagnostic
	for _, item := range asList(raw) {
		s := asMap(item)
		node := asString(s["node"])
		warnings = append(warnings, tosca.Diagnostic{File: vnfd.FlavourFile, Line: vnfd.NodeLines[node],
			Path:    fmt.Sprintf("topology_template.node_templates[%q].capabilities[%q]", node, asString(s["capability"])),
			Message: fmt.Sprintf("%d relationships, fewer than the minimum %d of its occurrences (tolerated: container VDUs have no connection points binding to them)", asInt(s["count"]), asInt(s["min"]))})
	}
	return warnings
}

// etsiNodes converts the driver's node views for the ETSI mapping.
func etsiNodes(raw any) []etsi.Node {
	var nodes []etsi.Node
	for _, item := range asList(raw) {
		n := asMap(item)
		node := etsi.Node{Name: asString(n["name"]), Types: asStrings(n["types"]), Properties: asMap(n["properties"]), Artifacts: map[string]etsi.Artifact{}}
		for name, a := range asMap(n["artifacts"]) {
			artifact := asMap(a)
			node.Artifacts[name] = etsi.Artifact{Types: asStrings(artifact["types"]), File: asString(artifact["file"]),
				Repository: asString(artifact["repository"]), Properties: asMap(artifact["properties"])}
		}
		for _, r := range asList(n["relationships"]) {
			rel := asMap(r)
			node.Requirements = append(node.Requirements, etsi.Requirement{Name: asString(rel["requirement"]), Target: asString(rel["target"])})
		}
		nodes = append(nodes, node)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes
}

// etsiPolicies converts the driver's policies for the ETSI mapping.
func etsiPolicies(raw any) []etsi.Policy {
	var policies []etsi.Policy
	for _, item := range asList(raw) {
		p := asMap(item)
		policies = append(policies, etsi.Policy{Name: asString(p["name"]), Types: asStrings(p["types"]), Properties: asMap(p["properties"]), Targets: asStrings(p["targets"])})
	}
	return policies
}

func asInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	case int:
		return int64(n)
	}
	return 0
}
