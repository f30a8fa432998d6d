//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/benchreport"
	"calaf.io/calaf/test/e2e/framework"
)

var lifecycleReport = flag.String("lifecycle-report", "", "write the \"Lifecycle\" section of this Markdown file (make bench: docs/benchmarks.md)")

const lifecycleSection = "## Lifecycle"

// lifecycleRounds of each measurement, interleaved; the median is reported.
const lifecycleRounds = 7

// plainScaledPackage is a Deployment scaled by an aspect, with no operation of its own.
const plainScaledPackage = `tosca_definitions_version: tosca_simple_yaml_1_3
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
  policies:
  - smf_scaling:
      type: calaf.policies.Scaling
      targets: [ smf ]
      properties: { aspect: smf, delta: 1, max_instances: 4 }
`

// TestLifecycleBench measures, on the one-node cluster, the time from a SCALE request
// (`calaf scale`, a whole process) to the new replica Ready, against `kubectl scale` of the
// same workload (a copy of the Deployment Calaf renders, not Calaf's) in the same rounds;
// and until the occurrence is COMPLETED, without and with Standard.configure and scale
// hooks. It writes the "Lifecycle" section of -lifecycle-report.
func TestLifecycleBench(t *testing.T) {
	if *lifecycleReport == "" {
		t.Skip("writes docs/benchmarks.md when run by make bench (-lifecycle-report)")
	}
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-bench-lcm")
	image := "-i=image=" + framework.BusyboxImage
	plain := t.TempDir()
	if err := os.WriteFile(filepath.Join(plain, "service.yaml"), []byte(plainScaledPackage), 0o644); err != nil {
		t.Fatal(err)
	}
	calaf(t, "deploy", "plain", plain, "-n", ns, image, "--wait", "--wait-timeout=4m")
	calaf(t, "deploy", "full", lcmPackage(t, "", 0), "-n", ns, image, "--wait", "--wait-timeout=4m")
	baseline := copyDeployment(t, c, ns, "plain-smf", "baseline")

	kubectl := sample{name: "`kubectl scale` of the same Deployment (not Calaf's), 1 → 2 replicas: new replica Ready (the baseline)"}
	ready := sample{name: "`calaf scale --aspect smf` (SCALE occurrence), 1 → 2: new replica Ready"}
	completed := sample{name: "… SCALE occurrence COMPLETED (the Service healthy at the new generation)"}
	full := sample{name: "SCALE of a node with Standard.configure and scale_start/scale_end hooks: COMPLETED (new pod configured, both hooks run)"}
	for i := 0; i < lifecycleRounds; i++ {
		kubectl.values = append(kubectl.values, timeKubectlScale(t, c, ns, baseline))
		r, d := timeCalafScale(t, c, ns, "plain", "plain-smf")
		ready.values, completed.values = append(ready.values, r), append(completed.values, d)
		_, d = timeCalafScale(t, c, ns, "full", "full-smf")
		full.values = append(full.values, d)
	}
	samples := []sample{kubectl, ready, completed, full}
	for _, s := range samples {
		t.Logf("%-110s median %8v  min %8v  max %8v", s.name, s.median().Round(time.Millisecond), s.min().Round(time.Millisecond), s.max().Round(time.Millisecond))
	}
	section := lifecycleMarkdown(samples, kubectl)
	if err := benchreport.WriteBenchmark(*lifecycleReport, section); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s:\n%s", *lifecycleReport, section)
}

// copyDeployment creates a Deployment named name with the pod spec Calaf rendered for
// another, its own labels and one replica.
func copyDeployment(t *testing.T, c *framework.Cluster, ns, from, name string) string {
	t.Helper()
	ctx := context.Background()
	src, err := c.Clientset.AppsV1().Deployments(ns).Get(ctx, from, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": name}
	one := int32(1)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: *src.Spec.Template.DeepCopy()}}
	d.Spec.Template.Labels = labels
	if _, err := c.Clientset.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReadyReplicas(t, c, ns, name, 1)
	return name
}

// timeKubectlScale times `kubectl scale` to 2 replicas until the new one is Ready, then
// scales back to 1 (not timed).
func timeKubectlScale(t *testing.T, c *framework.Cluster, ns, name string) time.Duration {
	t.Helper()
	start := time.Now()
	runKubectl(t, "scale", "deployment/"+name, "--replicas=2", "-n", ns)
	waitReadyReplicas(t, c, ns, name, 2)
	elapsed := time.Since(start)
	runKubectl(t, "scale", "deployment/"+name, "--replicas=1", "-n", ns)
	waitReadyReplicas(t, c, ns, name, 1)
	return elapsed
}

func runKubectl(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+suite.kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
}

// timeCalafScale times `calaf scale --aspect smf` until the new replica is Ready and until
// the occurrence is COMPLETED, then scales in again (not timed).
func timeCalafScale(t *testing.T, c *framework.Cluster, ns, service, deployment string) (time.Duration, time.Duration) {
	t.Helper()
	start := time.Now()
	out := calaf(t, "scale", service, "--aspect", "smf", "-n", ns)
	name := createdOccurrenceName(t, out)
	waitReadyReplicas(t, c, ns, deployment, 2)
	ready := time.Since(start)
	for getOccurrence(t, ns, name).Status.OperationState != v1alpha1.StateCompleted {
		if time.Since(start) > 3*time.Minute {
			t.Fatalf("%s did not complete: %s", name, getOccurrence(t, ns, name).Status.Message)
		}
		time.Sleep(20 * time.Millisecond)
	}
	completed := time.Since(start)
	calaf(t, "scale", service, "--aspect", "smf", "--in", "-n", ns, "--wait")
	waitReadyReplicas(t, c, ns, deployment, 1)
	return ready, completed
}

// waitReadyReplicas polls a Deployment until exactly n replicas exist and are ready.
func waitReadyReplicas(t *testing.T, c *framework.Cluster, ns, name string, n int32) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		d, err := c.Clientset.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && d.Status.ReadyReplicas == n && d.Status.Replicas == n && d.Status.ObservedGeneration == d.Generation {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Deployment %s: not %d ready replicas: %+v, %v", name, n, d.Status, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func lifecycleMarkdown(samples []sample, baseline sample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", lifecycleSection)
	fmt.Fprintf(&b, "Written by `make bench` (test/e2e, TestLifecycleBench) on %s: the test ground's one-node cluster on this machine, %s/%s, %d CPUs, %s; load average at the end %s.\n\n",
		time.Now().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), benchreport.LoadAverage())
	b.WriteString("A SCALE request through Calaf against `kubectl scale` of the same workload, whole processes (the `calaf` and `kubectl` binaries), " +
		fmt.Sprintf("%d interleaved rounds; median, min and max. ", lifecycleRounds) +
		"Each round scales a busybox Deployment from 1 to 2 replicas and back: the baseline is a copy of the Deployment Calaf renders (same pod template, no Calaf labels) scaled by `kubectl scale`; Calaf's is the Service's own, scaled by `calaf scale --aspect smf` (an Operation: queued, started, the Service's spec.scale changed, the reconcile applies the new replicas). \"Ready\" is the Deployment reporting the new replica ready (polled every 20 ms); \"COMPLETED\" adds the Service's health check at the new generation and the occurrence's end. The last row scales a node whose new pod runs Standard.configure and whose scale_start and scale_end hooks run in a pod.\n\n")
	b.WriteString("| step | median | min | max | × baseline (median) |\n|---|---:|---:|---:|---:|\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f× |\n", s.name, ms(s.median()), ms(s.min()), ms(s.max()), float64(s.median())/float64(baseline.median()))
	}
	diff, word := samples[1].median()-baseline.median(), "more"
	if diff < 0 {
		diff, word = -diff, "less: the difference is within the pod start's spread"
	}
	fmt.Fprintf(&b, "\nFrom the request to the new replica Ready, a SCALE occurrence costs %.2f× `kubectl scale` of the same workload (%s %s); most of both is the pod starting.\n",
		float64(samples[1].median())/float64(baseline.median()), ms(diff), word)
	return b.String()
}
