package render

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/etsi"
	"calaf.io/calaf/tosca"
)

// Policy types of the Calaf profile that lifecycle management reads.
const (
	policyScaling   = "calaf.policies.Scaling"
	policyAlertRule = "calaf.policies.AlertRule"
)

// scalableKinds are the workload kinds whose replicas a scale level or a stop sets.
var scalableKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "ReplicaSet": true}

// policy is a policy of the package as the driver returns it.
type policy struct {
	Name       string
	Types      []string
	Properties map[string]any
	Targets    []string
}

func (p policy) is(typeName string) bool { return slices.Contains(p.Types, typeName) }

// applyLifecycle scales the workloads of the package's scaling aspects to the levels of
// opts.Scale (ETSI aspects were scaled by the mapping), scales every workload to zero when
// opts.Stopped, and describes for lifecycle operations the aspects, the nodes' hooks and
// the alert rules (result.Lifecycle). Problems of the package or of the levels are
// *tosca.InvalidErrors.
func applyLifecycle(result *Result, raw map[string]any, opts Options) error {
	var policies []policy
	for _, item := range asList(raw["policies"]) {
		p := asMap(item)
		policies = append(policies, policy{Name: asString(p["name"]), Types: asStrings(p["types"]), Properties: asMap(p["properties"]), Targets: asStrings(p["targets"])})
	}
	lc := &v1alpha1.LifecycleStatus{}
	aspects, err := scaleAspects(result, policies, opts)
	if err != nil {
		return err
	}
	lc.Aspects = aspects
	if result.VNF != nil {
		lc.Aspects = append(lc.Aspects, vnfAspects(result.VNF)...)
		lc.InstantiationLevels = result.VNF.Levels
	}
	if opts.Stopped {
		result.Warnings = append(result.Warnings, stop(result)...)
	}
	lc.Hooks = hooks(result.Nodes)
	if lc.AlertRules, err = alertRules(policies, lc.Aspects); err != nil {
		return err
	}
	result.Lifecycle = lc
	return nil
}

// scaleAspects applies the calaf.policies.Scaling aspects: each target workload runs its
// rendered replicas plus delta per level. It refuses a level past what max_instances
// allows, and warns of levels of aspects the package does not have.
func scaleAspects(result *Result, policies []policy, opts Options) ([]v1alpha1.AspectStatus, error) {
	var out []v1alpha1.AspectStatus
	known := map[string]bool{}
	scaled := map[string]string{} // node → aspect
	for _, p := range policies {
		if !p.is(policyScaling) {
			continue
		}
		id := asString(p.Properties["aspect"])
		if id == "" {
			id = p.Name
		}
		if known[id] {
			return nil, invalidf("scaling policy %q: aspect %q is declared twice", p.Name, id)
		}
		known[id] = true
		status, err := scaleAspect(result, p, id, opts.Scale[id], scaled)
		if err != nil {
			return nil, err
		}
		out = append(out, status)
	}
	for _, id := range sortedKeys(opts.Scale) {
		if !known[id] && (result.VNF == nil || !vnfHasAspect(result.VNF, id)) {
			result.Warnings = append(result.Warnings, tosca.Diagnostic{Message: fmt.Sprintf("spec.scale names aspect %q, which the package does not have: ignored", id)})
		}
	}
	return out, nil
}

// scaleAspect sets the replicas of an aspect's targets at a level and returns the
// aspect's status.
func scaleAspect(result *Result, p policy, id string, level int64, scaled map[string]string) (v1alpha1.AspectStatus, error) {
	delta := max(asInt(p.Properties["delta"]), 1)
	minimum, maximum := asInt(p.Properties["min_instances"]), asInt(p.Properties["max_instances"])
	status := v1alpha1.AspectStatus{AspectID: id, ScaleLevel: int32(level), MaxScaleLevel: math.MaxInt32, Nodes: p.Targets}
	if level < 0 {
		return status, invalidf("aspect %s: scale level %d is below 0", id, level)
	}
	for _, name := range p.Targets {
		if other, ok := scaled[name]; ok {
			return status, invalidf("scaling policy %q: node %s is scaled by aspect %s already", p.Name, name, other)
		}
		scaled[name] = id
		node := result.Node(name)
		workloads := scalableObjects(node)
		if len(workloads) == 0 {
			return status, invalidf("scaling policy %q: node %s has no Deployment, StatefulSet or ReplicaSet to scale", p.Name, name)
		}
		for _, obj := range workloads {
			base := replicasOf(obj)
			if base < minimum || base > maximum {
				return status, invalidf("scaling policy %q: %s %s has %d replicas, outside [%d, %d] (min_instances, max_instances)", p.Name, obj.GetKind(), obj.GetName(), base, minimum, maximum)
			}
			if most := (maximum - base) / delta; most < int64(status.MaxScaleLevel) {
				status.MaxScaleLevel = int32(most)
				status.Bound = fmt.Sprintf("max_instances %d of node %s (%d replicas at level 0, %d per level)", maximum, name, base, delta)
			}
			if err := unstructured.SetNestedField(obj.Object, base+level*delta, "spec", "replicas"); err != nil {
				return status, err
			}
		}
	}
	if int64(status.MaxScaleLevel) < level {
		return status, invalidf("aspect %s: scale level %d is past its maximum %d, set by %s", id, level, status.MaxScaleLevel, status.Bound)
	}
	return status, nil
}

// scalableObjects returns the objects of a node whose replicas can be set.
func scalableObjects(node *Node) []*unstructured.Unstructured {
	if node == nil {
		return nil
	}
	var out []*unstructured.Unstructured
	for _, obj := range node.Objects {
		if scalableKinds[obj.GetKind()] {
			out = append(out, obj)
		}
	}
	return out
}

// replicasOf returns an object's spec.replicas (1, Kubernetes' default, when unset).
func replicasOf(obj *unstructured.Unstructured) int64 {
	value, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas")
	if !found {
		return 1
	}
	return asInt(value)
}

// stop scales every workload to zero; it warns of those that cannot be stopped so.
func stop(result *Result) []tosca.Diagnostic {
	var warnings []tosca.Diagnostic
	for _, node := range result.Nodes {
		for _, obj := range node.Objects {
			switch {
			case scalableKinds[obj.GetKind()]:
				_ = unstructured.SetNestedField(obj.Object, int64(0), "spec", "replicas")
			case obj.GetKind() == "DaemonSet" || obj.GetKind() == "Job":
				warnings = append(warnings, tosca.Diagnostic{Message: fmt.Sprintf("the Service is stopped, but %s %s of node %s keeps running: only Deployments, StatefulSets and ReplicaSets are scaled to zero", obj.GetKind(), obj.GetName(), node.Name)})
			}
		}
	}
	return warnings
}

// vnfAspects describes the aspects of an ETSI VNF.
func vnfAspects(vnf *etsi.VNF) []v1alpha1.AspectStatus {
	var out []v1alpha1.AspectStatus
	for _, a := range vnf.Aspects {
		out = append(out, v1alpha1.AspectStatus{AspectID: a.ID, ScaleLevel: int32(a.ScaleLevel), MaxScaleLevel: int32(a.Reachable), Bound: a.Bound, Nodes: a.VDUs})
	}
	return out
}

func vnfHasAspect(vnf *etsi.VNF, id string) bool {
	return slices.ContainsFunc(vnf.Aspects, func(a etsi.AspectStatus) bool { return a.ID == id })
}

// IsHook tells whether an operation is a lifecycle hook: an operation of SOL001's Vnflcm
// interface or of the Calaf profile's Lifecycle interface.
func IsHook(op Operation) bool {
	return op.Interface == "Vnflcm" || op.Interface == "Lifecycle" ||
		strings.HasSuffix(op.InterfaceType, "Vnflcm") || strings.HasSuffix(op.InterfaceType, "calaf.interfaces.Lifecycle")
}

// hooks lists the lifecycle hooks of each node.
func hooks(nodes []*Node) []v1alpha1.NodeHooks {
	var out []v1alpha1.NodeHooks
	for _, node := range nodes {
		var names []string
		for _, op := range node.Operations {
			if IsHook(op) {
				names = append(names, op.QualifiedName())
			}
		}
		if len(names) > 0 {
			out = append(out, v1alpha1.NodeHooks{Node: node.Name, Operations: names})
		}
	}
	return out
}

// alertRules reads the calaf.policies.AlertRule policies; a SCALE rule must name an
// aspect of the package.
func alertRules(policies []policy, aspects []v1alpha1.AspectStatus) ([]v1alpha1.AlertRule, error) {
	var rules []v1alpha1.AlertRule
	for _, p := range policies {
		if !p.is(policyAlertRule) {
			continue
		}
		rule := v1alpha1.AlertRule{
			Name: p.Name, AlertName: asString(p.Properties["alert"]), Operation: v1alpha1.OperationType(asString(p.Properties["operation"])),
			Nodes: p.Targets, CooldownSeconds: int32(seconds(p.Properties["cooldown"])), MaxPerHour: int32(asInt(p.Properties["max_per_hour"])),
		}
		for key, value := range asMap(p.Properties["labels"]) {
			if rule.Labels == nil {
				rule.Labels = map[string]string{}
			}
			rule.Labels[key] = fmt.Sprint(value)
		}
		if rule.Operation == v1alpha1.OperationScale {
			rule.AspectID, rule.Steps = asString(p.Properties["aspect"]), int32(max(asInt(p.Properties["steps"]), 1))
			rule.Direction = v1alpha1.ScaleDirection(asString(p.Properties["direction"]))
			if !slices.ContainsFunc(aspects, func(a v1alpha1.AspectStatus) bool { return a.AspectID == rule.AspectID }) {
				return nil, invalidf("alert rule %q scales aspect %q, which the package does not have", p.Name, rule.AspectID)
			}
		}
		rules = append(rules, rule)
	}
	return rules, nil
}

// seconds reads a scalar-unit.time as Puccini evaluates it: a number of seconds, or a
// map with its scalar value.
func seconds(v any) int64 {
	switch t := v.(type) {
	case map[string]any:
		if s, ok := t["scalar"]; ok {
			return seconds(s)
		}
		return seconds(t["value"])
	case float64:
		return int64(math.Round(t))
	}
	return asInt(v)
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
