//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/artifacts/protocol"
	"calaf.io/calaf/orchestration"
	"calaf.io/calaf/test/benchreport"
	"calaf.io/calaf/test/e2e/framework"
)

var orchestrationReport = flag.String("orchestration-report", "", "write the \"Orchestration\" section of this Markdown file (make bench: docs/benchmarks.md)")

const orchestrationSection = "## Orchestration"

// benchRounds of each measurement; the median is reported.
const benchRounds = 15

type sample struct {
	name, note string
	values     []time.Duration
}

func (s sample) median() time.Duration {
	v := append([]time.Duration(nil), s.values...)
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v[len(v)/2]
}

func (s sample) min() time.Duration {
	m := s.values[0]
	for _, v := range s.values {
		m = min(m, v)
	}
	return m
}

func (s sample) max() time.Duration {
	m := s.values[0]
	for _, v := range s.values {
		m = max(m, v)
	}
	return m
}

// TestOrchestrationBench measures what one operation costs on the test ground's real node,
// against a same-run baseline: a plain exec round trip (`echo`, what `kubectl exec` does)
// into the same container. It writes the "Orchestration" section of -orchestration-report.
func TestOrchestrationBench(t *testing.T) {
	if *orchestrationReport == "" {
		t.Skip("writes docs/benchmarks.md when run by make bench (-orchestration-report)")
	}
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-bench-ops")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	pod := benchPod(t, c, ns)

	runner, err := orchestration.LoadRunner(filepath.Join(filepath.Dir(suite.calaf), orchestration.RunnerName))
	if err != nil {
		t.Fatal(err)
	}
	target := orchestration.Target{Namespace: ns, Pod: pod.Name, Container: "main", PodUID: string(pod.UID)}
	jsReq := &protocol.Request{
		Version: protocol.Version, Kind: protocol.KindJavaScript, Operation: "Standard.configure",
		Artifact: protocol.ArtifactInfo{Name: "configure", File: "Artifacts/configure.js"},
		Source:   "calaf.writeFile('/tmp/bench.conf', 'dnn=' + calaf.inputs.dnn + '\\n');\ncalaf.setAttribute('registration', 'registered for ' + calaf.inputs.dnn);\n",
		Inputs:   map[string]any{"dnn": "internet"}, Pod: protocol.PodInfo{Name: pod.Name, Namespace: ns, Container: "main"},
		TimeoutMillis: 60000,
	}
	jsExecReq := *jsReq
	jsExecReq.Source = "const r = calaf.exec(['sh', '-c', 'grep -c = /tmp/bench.conf']);\ncalaf.setAttribute('n', r.stdout.trim());\n"
	shReq := *jsReq
	shReq.Kind, shReq.Artifact.File = protocol.KindShell, "Artifacts/configure.sh"
	shReq.Source = "echo \"dnn=$dnn\" > /tmp/bench.conf\necho \"registration=registered for $dnn\" >> \"$CALAF_ATTRIBUTES\"\n"

	baseline := sample{name: "plain exec round trip (`echo`, as `kubectl exec`): the baseline"}
	install := sample{name: fmt.Sprintf("runner transfer into a fresh container (%.1f MB over exec stdin)", float64(runner.Size)/1e6)}
	first := sample{name: "first operation in a fresh container (probe + transfer + run)"}
	warmJS := sample{name: "operation, JavaScript (warm: runner in place)"}
	inRunner := sample{name: "… of which inside the runner (work dir, goja, artifact, result)", note: "part"}
	warmJSExec := sample{name: "operation, JavaScript running one command (`calaf.exec`)"}
	warmShell := sample{name: "operation, shell artifact (warm)"}

	for i := 0; i < benchRounds; i++ {
		start := time.Now()
		if _, err := c.Exec(ctx, ns, pod.Name, "main", "echo", "hi"); err != nil {
			t.Fatal(err)
		}
		baseline.values = append(baseline.values, time.Since(start))

		// A fresh executor and no runner in the container: the first run installs it.
		if _, err := c.Exec(ctx, ns, pod.Name, "main", "rm", "-rf", "/tmp/.calaf"); err != nil {
			t.Fatal(err)
		}
		executor := orchestration.NewPodExecutor(c.Config, runner)
		start = time.Now()
		res, timing, err := executor.Run(ctx, target, jsReq)
		total := time.Since(start)
		if err != nil || res.Failed() || !timing.Installed {
			t.Fatalf("first run: %+v, %+v, %v", res, timing, err)
		}
		first.values = append(first.values, total)
		install.values = append(install.values, timing.Install)

		for _, m := range []struct {
			s   *sample
			req *protocol.Request
		}{{&warmJS, jsReq}, {&warmJSExec, &jsExecReq}, {&warmShell, &shReq}} {
			res, timing, err := executor.Run(ctx, target, m.req)
			if err != nil || res.Failed() || timing.Installed {
				t.Fatalf("%s: %+v, %+v, %v", m.s.name, res, timing, err)
			}
			m.s.values = append(m.s.values, timing.Exec)
			if m.s == &warmJS {
				inRunner.values = append(inRunner.values, time.Duration(res.DurationMillis)*time.Millisecond)
			}
		}
	}

	onDemand := benchOnDemand(t, ctx, ns)
	samples := []sample{baseline, install, first, warmJS, inRunner, warmJSExec, warmShell, onDemand}
	for _, s := range samples {
		t.Logf("%-70s median %8v  min %8v  max %8v", s.name, s.median().Round(100*time.Microsecond), s.min().Round(100*time.Microsecond), s.max().Round(100*time.Microsecond))
	}
	section := orchestrationMarkdown(samples, baseline, warmJS, install, int(runner.Size))
	if err := benchreport.WriteBenchmark(*orchestrationReport, section); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s:\n%s", *orchestrationReport, section)
}

// benchPod starts a one-pod busybox Deployment (no Calaf involved) and returns its pod.
func benchPod(t *testing.T, c *framework.Cluster, ns string) *corev1.Pod {
	t.Helper()
	labels := map[string]string{"app": "bench"}
	one := int32(1)
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "main", Image: framework.BusyboxImage, ImagePullPolicy: corev1.PullNever,
					Command: []string{"sh", "-c", "exec sleep 1000000"},
				}}},
			},
		},
	}
	if _, err := c.Clientset.AppsV1().Deployments(ns).Create(context.Background(), deployment, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := c.WaitForPodRunning(context.Background(), ns, "app=bench", 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// benchOnDemand measures the operator's whole path for an on-demand operation: an
// Operation created until it reports Succeeded (accept, reconcile, plan, exec, status).
func benchOnDemand(t *testing.T, ctx context.Context, ns string) sample {
	t.Helper()
	dir := opsPackage(t, "JavaScript", "configure.js", "calaf.setAttribute('config_state', 'configured');\n", 0)
	calaf(t, "deploy", "app", dir, "-n", ns, "-i=image="+framework.BusyboxImage, "--wait", "--wait-timeout=4m")
	s := sample{name: "on-demand Operation through the operator: created → Succeeded"}
	for i := 0; i < 5; i++ {
		op := &v1alpha1.Operation{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-", Namespace: ns},
			Spec:       v1alpha1.OperationSpec{ServiceName: "app", Node: "app", Operation: "Standard.configure"},
		}
		start := time.Now()
		if err := suite.client.Create(ctx, op); err != nil {
			t.Fatal(err)
		}
		for {
			if err := suite.client.Get(ctx, client.ObjectKeyFromObject(op), op); err != nil {
				t.Fatal(err)
			}
			if op.Status.Phase == v1alpha1.OperationSucceeded {
				break
			}
			if op.Status.Phase == v1alpha1.OperationFailed || time.Since(start) > time.Minute {
				t.Fatalf("on-demand operation: %+v", op.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
		s.values = append(s.values, time.Since(start))
	}
	return s
}

func orchestrationMarkdown(samples []sample, baseline, warm, install sample, runnerBytes int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", orchestrationSection)
	fmt.Fprintf(&b, "Written by `make bench` (test/e2e, TestOrchestrationBench) on %s: the test ground's one-node cluster (kube-apiserver, kubelet, containerd 1.6, runc) on this machine, %s/%s, %d CPUs, %s; load average at the end %s.\n\n",
		time.Now().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), benchreport.LoadAverage())
	b.WriteString("One busybox pod (no JavaScript runtime in the image). Every round, in the same container: a plain exec round trip (the baseline, over the same WebSocket exec transport), then the runner removed and a new executor, so the first operation probes, streams the runner in and runs; then warm operations with the runner in place. " +
		fmt.Sprintf("%d rounds; median, min and max. ", benchRounds) +
		"The JavaScript operation writes a file and sets an attribute; the shell one does the same with /bin/sh. \"Inside the runner\" is the runner's own measure (from the request read to the result written, millisecond resolution); the rest of a warm run is the exec round trip and the runner process starting. The last row goes through the operator (5 rounds): an Operation resource created until its status says Succeeded.\n\n")
	b.WriteString("| step | median | min | max | × baseline (median) |\n|---|---:|---:|---:|---:|\n")
	for _, s := range samples {
		ratio := fmt.Sprintf("%.1f×", float64(s.median())/float64(baseline.median()))
		if s.note == "part" {
			ratio = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", s.name, ms(s.median()), ms(s.min()), ms(s.max()), ratio)
	}
	fmt.Fprintf(&b, "\nA warm operation costs %.1f× a plain exec round trip (%s more); the runner's transfer (%.1f MB, once per container and runner version) adds %s, %.0f MB/s.\n",
		float64(warm.median())/float64(baseline.median()), ms(warm.median()-baseline.median()),
		float64(runnerBytes)/1e6, ms(install.median()), float64(runnerBytes)/1e6/install.median().Seconds())
	return b.String()
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}
