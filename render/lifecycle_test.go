package render

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/api/v1alpha1"
)

// lifecycleTemplate has a scaling aspect over a Deployment, a hook, and two alert rules.
const lifecycleTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  node_templates:
    smf:
      type: calaf.nodes.Deployment
      properties:
        image: busybox
        replicas: 2
      interfaces:
        Lifecycle:
          operations:
            scale_start: Artifacts/scale_start.sh
    store:
      type: calaf.nodes.StatefulSet
      properties:
        image: busybox
    agent:
      type: calaf.nodes.DaemonSet
      properties:
        image: busybox
  policies:
  - smf_scaling:
      type: calaf.policies.Scaling
      targets: [ smf ]
      properties:
        aspect: smf_aspect
        delta: 2
        min_instances: 1
        max_instances: 7
  - smf_down:
      type: calaf.policies.AlertRule
      targets: [ smf ]
      properties:
        alert: SMFDown
        labels: { severity: critical }
        operation: HEAL
        cooldown: 30 s
        max_per_hour: 2
  - smf_busy:
      type: calaf.policies.AlertRule
      properties:
        alert: SMFBusy
        operation: SCALE
        aspect: smf_aspect
`

// renderLifecycle renders template as the service.yaml of a package that holds the script
// of its hook.
func renderLifecycle(t *testing.T, template string, opts Options) (*Result, error) {
	t.Helper()
	opts.Service, opts.Namespace = "s", "n"
	files := map[string]string{"service.yaml": template, "Artifacts/scale_start.sh": "echo scaling\n"}
	return NewRenderer(4).Render(context.Background(), compilePackage(t, files), opts)
}

func replicasOfNode(t *testing.T, result *Result, node string) int64 {
	t.Helper()
	for _, obj := range result.Node(node).Objects {
		if scalableKinds[obj.GetKind()] {
			n, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
			return n
		}
	}
	t.Fatalf("node %s has no workload", node)
	return 0
}

// A calaf.policies.Scaling aspect adds delta replicas per level to its targets, within
// max_instances; the status names the aspect, its level and what bounds it; hooks and
// alert rules are described for the lifecycle controller.
func TestLifecycleScaling(t *testing.T) {
	result, err := renderLifecycle(t, lifecycleTemplate, Options{Scale: map[string]int64{"smf_aspect": 2}})
	if err != nil {
		t.Fatal(err)
	}
	if n := replicasOfNode(t, result, "smf"); n != 6 {
		t.Errorf("smf at level 2 runs %d replicas, want 2 + 2×2", n)
	}
	want := []v1alpha1.AspectStatus{{AspectID: "smf_aspect", ScaleLevel: 2, MaxScaleLevel: 2, Nodes: []string{"smf"},
		Bound: "max_instances 7 of node smf (2 replicas at level 0, 2 per level)"}}
	if !reflect.DeepEqual(result.Lifecycle.Aspects, want) {
		t.Errorf("aspects %+v, want %+v", result.Lifecycle.Aspects, want)
	}
	if want := []v1alpha1.NodeHooks{{Node: "smf", Operations: []string{"Lifecycle.scale_start"}}}; !reflect.DeepEqual(result.Lifecycle.Hooks, want) {
		t.Errorf("hooks %+v, want %+v", result.Lifecycle.Hooks, want)
	}
	rules := result.Lifecycle.AlertRules
	if len(rules) != 2 {
		t.Fatalf("alert rules: %+v", rules)
	}
	busy, down := rules[0], rules[1]
	if down.Name != "smf_down" || down.AlertName != "SMFDown" || down.Operation != v1alpha1.OperationHeal || !reflect.DeepEqual(down.Nodes, []string{"smf"}) ||
		down.CooldownSeconds != 30 || down.MaxPerHour != 2 || down.Labels["severity"] != "critical" {
		t.Errorf("heal rule: %+v", down)
	}
	if busy.Operation != v1alpha1.OperationScale || busy.AspectID != "smf_aspect" || busy.Direction != v1alpha1.ScaleOut || busy.Steps != 1 ||
		busy.CooldownSeconds != 300 || busy.MaxPerHour != 6 {
		t.Errorf("scale rule (defaults): %+v", busy)
	}

	// Level 0 is what the package declares; other nodes keep theirs.
	result, err = renderLifecycle(t, lifecycleTemplate, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := replicasOfNode(t, result, "smf"); n != 2 {
		t.Errorf("smf at level 0 runs %d replicas", n)
	}
	if n := replicasOfNode(t, result, "store"); n != 1 {
		t.Errorf("store runs %d replicas", n)
	}
}

// A level past max_instances is refused with what bounds it; a level of an aspect the
// package does not have is ignored with a warning.
func TestLifecycleScalingBounds(t *testing.T) {
	_, err := renderLifecycle(t, lifecycleTemplate, Options{Scale: map[string]int64{"smf_aspect": 3}})
	if err == nil || !strings.Contains(err.Error(), "aspect smf_aspect: scale level 3 is past its maximum 2, set by max_instances 7 of node smf") {
		t.Errorf("past max: %v", err)
	}
	result, err := renderLifecycle(t, lifecycleTemplate, Options{Scale: map[string]int64{"gone": 1}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range result.Warnings {
		found = found || strings.Contains(w.Message, `spec.scale names aspect "gone", which the package does not have: ignored`)
	}
	if !found {
		t.Errorf("no warning for an unknown aspect: %v", result.Warnings)
	}
	bad := strings.Replace(lifecycleTemplate, "aspect: smf_aspect\n`", "aspect: nope\n`", 1)
	bad = strings.Replace(bad, "        operation: SCALE\n        aspect: smf_aspect", "        operation: SCALE\n        aspect: nope", 1)
	if _, err := renderLifecycle(t, bad, Options{}); err == nil || !strings.Contains(err.Error(), `alert rule "smf_busy" scales aspect "nope", which the package does not have`) {
		t.Errorf("alert rule of an unknown aspect: %v", err)
	}
	daemon := strings.Replace(lifecycleTemplate, "targets: [ smf ]\n      properties:\n        aspect", "targets: [ agent ]\n      properties:\n        aspect", 1)
	if _, err := renderLifecycle(t, daemon, Options{}); err == nil || !strings.Contains(err.Error(), "node agent has no Deployment, StatefulSet or ReplicaSet to scale") {
		t.Errorf("a DaemonSet target: %v", err)
	}
}

// A stopped Service runs no pods: its Deployments and StatefulSets at zero replicas, a
// DaemonSet named in a warning.
func TestLifecycleStopped(t *testing.T) {
	result, err := renderLifecycle(t, lifecycleTemplate, Options{Stopped: true, Scale: map[string]int64{"smf_aspect": 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{"smf", "store"} {
		if n := replicasOfNode(t, result, node); n != 0 {
			t.Errorf("stopped %s runs %d replicas", node, n)
		}
	}
	found := false
	for _, w := range result.Warnings {
		found = found || strings.Contains(w.Message, "DaemonSet s-agent of node agent keeps running")
	}
	if !found {
		t.Errorf("no warning for the DaemonSet: %v", result.Warnings)
	}
}
