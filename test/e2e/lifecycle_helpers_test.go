//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/e2e/framework"
)

// lcmPackage writes a package of one Deployment, smf, scaled by the aspect smf (1 replica
// at level 0, one more per level, at most 4): its Standard.configure writes
// /tmp/smf.conf and counts its runs in /tmp/configure.runs; its Lifecycle hooks (in one
// pod each) log every run in /tmp/hooks.log and set the output "hook". An alert rule heals
// it. scaleStart replaces the scale_start hook's script; readyAfter delays the pods'
// readiness (seconds).
func lcmPackage(t *testing.T, scaleStart string, readyAfter int) string {
	t.Helper()
	dir := t.TempDir()
	probe := ""
	if readyAfter > 0 {
		probe = "        readiness_probe: { command: [ 'true' ], initial_delay_seconds: " + strconv.Itoa(readyAfter) + ", period_seconds: 1 }\n"
	}
	template := `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  inputs:
    image: { type: string }
  node_templates:
    smf:
      type: calaf.nodes.Deployment
      properties:
        image: { get_input: image }
        command: [ sh, -c, 'exec sleep 1000000' ]
        termination_grace_period_seconds: 1
` + probe + `      artifacts:
        configure:
          type: calaf.artifacts.Shell
          file: Artifacts/configure.sh
        hook:
          type: calaf.artifacts.Shell
          file: Artifacts/hook.sh
          properties: { targets: one }
        scale_start:
          type: calaf.artifacts.Shell
          file: Artifacts/scale_start.sh
          properties: { targets: one }
      interfaces:
        Standard:
          operations:
            configure: configure
        Lifecycle:
          operations:
            scale_start: scale_start
            scale_end: hook
            heal_start: hook
            heal_end: hook
            instantiate_end: hook
  policies:
  - smf_scaling:
      type: calaf.policies.Scaling
      targets: [ smf ]
      properties: { aspect: smf, delta: 1, max_instances: 4 }
  - smf_down:
      type: calaf.policies.AlertRule
      targets: [ smf ]
      properties: { alert: SMFDown, labels: { severity: critical }, operation: HEAL, cooldown: 15 s, max_per_hour: 2 }
`
	hook := "echo \"$CALAF_OPERATION $occurrence\" >> /tmp/hooks.log\necho \"hook=$CALAF_OPERATION\" >> \"$CALAF_OUTPUTS\"\n"
	if scaleStart == "" {
		scaleStart = hook
	}
	files := map[string]string{
		"service.yaml":             template,
		"Artifacts/configure.sh":   "echo \"configured $CALAF_POD\" >> /tmp/configure.runs\necho 'dnn=internet' > /tmp/smf.conf\n",
		"Artifacts/hook.sh":        hook,
		"Artifacts/scale_start.sh": scaleStart,
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// servicePods returns the running, not terminating pods of a node of a Service, by name.
func servicePods(t *testing.T, c *framework.Cluster, ns, service, node string) map[string]corev1.Pod {
	t.Helper()
	list, err := c.Clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "calaf.io/service=" + service + ",calaf.io/node=" + node})
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]corev1.Pod{}
	for _, pod := range list.Items {
		if pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning {
			pods[pod.Name] = pod
		}
	}
	return pods
}

// waitPods waits until a node has n running pods and returns their names, sorted.
func waitPods(t *testing.T, c *framework.Cluster, ns, service, node string, n int) []string {
	t.Helper()
	var names []string
	NewWithT(t).Eventually(func(g Gomega) {
		names = nil
		for name := range servicePods(t, c, ns, service, node) {
			names = append(names, name)
		}
		g.Expect(names).To(HaveLen(n))
	}, 3*time.Minute, time.Second).Should(Succeed())
	sort.Strings(names)
	return names
}

// occurrences lists the occurrences of a namespace (not the hook runs), oldest first.
func occurrences(t *testing.T, ns string) []v1alpha1.Operation {
	t.Helper()
	list := &v1alpha1.OperationList{}
	if err := suite.client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []v1alpha1.Operation
	for _, op := range list.Items {
		if op.Labels[v1alpha1.LabelOccurrence] == "" {
			out = append(out, op)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreationTimestamp.Equal(&out[j].CreationTimestamp) {
			return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// lastOccurrence returns the newest occurrence of a namespace. Creation times have
// one-second resolution, so use it only where the occurrences are seconds apart;
// after a CLI command, createdOccurrence names the right one.
func lastOccurrence(t *testing.T, ns string) v1alpha1.Operation {
	t.Helper()
	all := occurrences(t, ns)
	if len(all) == 0 {
		t.Fatal("no occurrence")
	}
	return all[len(all)-1]
}

// createdOccurrence reads the occurrence that a calaf lifecycle command said it created.
func createdOccurrence(t *testing.T, ns, out string) v1alpha1.Operation {
	t.Helper()
	return *getOccurrence(t, ns, createdOccurrenceName(t, out))
}

// createdOccurrenceName returns the name in a calaf command's
// "operation.calaf.io/NAME created" line.
func createdOccurrenceName(t *testing.T, out string) string {
	t.Helper()
	match := regexp.MustCompile(`(?m)^operation\.calaf\.io/(\S+) created`).FindStringSubmatch(out)
	if match == nil {
		t.Fatalf("the command names no occurrence it created:\n%s", out)
	}
	return match[1]
}

// getOccurrence reads an occurrence.
func getOccurrence(t *testing.T, ns, name string) *v1alpha1.Operation {
	t.Helper()
	op := &v1alpha1.Operation{}
	if err := suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, op); err != nil {
		t.Fatal(err)
	}
	return op
}

// stepOf returns the step of an occurrence by name (and whether it belongs to the
// rollback).
func stepOf(t *testing.T, op *v1alpha1.Operation, name string, rollback bool) v1alpha1.OperationStep {
	t.Helper()
	step, ok := findStep(op, name, rollback)
	if !ok {
		t.Fatalf("%s has no step %q: %+v", op.Name, name, op.Status.Steps)
	}
	return step
}

// findStep returns the step of an occurrence by name, if it has it.
func findStep(op *v1alpha1.Operation, name string, rollback bool) (v1alpha1.OperationStep, bool) {
	for _, s := range op.Status.Steps {
		if s.Name == name && s.Rollback == rollback {
			return s, true
		}
	}
	return v1alpha1.OperationStep{}, false
}

// stateNames lists the states an occurrence went through.
func stateNames(op *v1alpha1.Operation) []string {
	var out []string
	for _, tr := range op.Status.Transitions {
		out = append(out, string(tr.State))
	}
	return out
}

// hookRuns counts, over the pods, the lines of /tmp/hooks.log of an occurrence's runs of a
// hook.
func hookRuns(t *testing.T, c *framework.Cluster, ns string, pods []string, hook, occurrence string) int {
	t.Helper()
	total := 0
	for _, pod := range pods {
		res, err := c.Exec(context.Background(), ns, pod, "main", "sh", "-c", "cat /tmp/hooks.log 2>/dev/null || true")
		if err != nil {
			t.Fatalf("exec in %s: %v", pod, err)
		}
		for _, line := range strings.Split(res.Stdout, "\n") {
			if line == hook+" "+occurrence {
				total++
			}
		}
	}
	return total
}

// calafExit runs the calaf CLI and returns its output and exit code.
func calafExit(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	out, code, err := framework.Calaf(ctx, suite.calaf, suite.kubeconfig, args...)
	if err != nil {
		t.Fatalf("calaf %v: %v\n%s", args, err, out)
	}
	return out, code
}

// lcmConfigureRuns counts the runs of the lcmPackage's Standard.configure in each pod.
func lcmConfigureRuns(t *testing.T, c *framework.Cluster, ns string, pods []string) map[string]int {
	return countLines(t, c, ns, pods, "/tmp/configure.runs")
}
