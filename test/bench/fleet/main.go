// Command fleet measures the operator at scale on a real cluster: N Services of the shape
// of Flux's kustomize-controller benchmark (a Deployment scaled to zero, a ServiceAccount,
// a Service and a ConfigMap, each Service with its own inputs), from creation to all Ready,
// and the operator's peak memory — against a same-run baseline: a plain server-side-apply
// loop of the same rendered objects, waiting for the same readiness.
//
//	go run ./test/bench/fleet -n 1000 -calaf bin/calaf -report docs/benchmarks.md
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/render"
	"calaf.io/calaf/source"
	"calaf.io/calaf/test/e2e/framework"
	"calaf.io/calaf/tosca"
)

type result struct {
	name     string
	applied  time.Duration // until every object was applied (for the operator: every Service Applied)
	duration time.Duration // until everything was Ready
	peakRSS  int64         // bytes; 0 when not measured
	rssSplit string        // anonymous and file-backed parts of the peak
	// requests counts the API requests of the measured client by "VERB resource"
	// (countingProxy), until all were Ready.
	requests map[string]int64
}

// settings are the bench's command line.
type settings struct {
	n, smaller, workers, rounds int
	operatorQPS                 float64
	calafBinary                 string
	memoryLimits                []string
}

func main() {
	var s settings
	flag.IntVar(&s.n, "n", 1000, "number of Services")
	flag.StringVar(&s.calafBinary, "calaf", "bin/calaf", "calaf binary (the operator)")
	report := flag.String("report", "", "benchmarks.md to update")
	flag.IntVar(&s.workers, "workers", 4, "workers of the concurrent baseline and the operator's concurrency")
	flag.IntVar(&s.smaller, "smaller", 0, "also run this many Services in every round, for the growth to -n (0: not)")
	flag.Float64Var(&s.operatorQPS, "operator-qps", 200, "the operator's --kube-api-qps (its burst twice that): the baselines' client allows 200 and 400")
	flag.IntVar(&s.rounds, "rounds", 1, "interleaved rounds (each: both baselines, then the operator runs); medians are reported")
	memoryLimit := flag.String("memory-limit", "", "also run the operator with this --memory-limit (Go's soft limit, as a container limit sets it), in a namespace of its own")
	flag.Parse()
	s.memoryLimits = []string{""}
	if *memoryLimit != "" {
		s.memoryLimits = append(s.memoryLimits, *memoryLimit)
	}
	if err := run(s, *report); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// bench is what every run of the bench shares.
type bench struct {
	settings
	config *rest.Config
	c      client.Client
	pkg    *tosca.Package
	// rendered are the objects of n Services, by n, in renderNamespace.
	rendered map[int][]byte
}

func run(s settings, report string) error {
	ctx := context.Background()
	config, err := framework.LoadConfig()
	if err != nil {
		return err
	}
	config.QPS, config.Burst = 200, 400
	c, err := client.New(config, client.Options{Scheme: operator.NewScheme()})
	if err != nil {
		return err
	}
	if err := framework.InstallCRDs(ctx, c); err != nil {
		return err
	}
	pkgDir := filepath.Join(framework.RepoRoot(), "test", "bench", "fleet", "package")
	pkg, err := tosca.Open(pkgDir, tosca.DefaultLimits())
	if err != nil {
		return err
	}
	b := &bench{settings: s, config: config, c: c, pkg: pkg, rendered: map[int][]byte{}}
	sizes := []int{s.n}
	if s.smaller > 0 {
		sizes = []int{s.smaller, s.n}
	}
	rounds := map[int][][]result{}
	for i := 0; i < s.rounds; i++ {
		for _, n := range sizes {
			results, err := b.round(ctx, n, i)
			if err != nil {
				return err
			}
			printRound(i, n, results)
			rounds[n] = append(rounds[n], results)
		}
	}
	if report == "" {
		return nil
	}
	var smaller []result
	if s.smaller > 0 {
		smaller = medians(rounds[s.smaller])
	}
	return writeReport(report, s, medians(rounds[s.n]), smaller)
}

func printRound(i, n int, results []result) {
	for _, r := range results {
		fmt.Printf("round %d, %d Services: %-55s applied %6.1f s  Ready %6.1f s  %s\n", i+1, n, r.name, r.applied.Seconds(), r.duration.Seconds(), rss(r.peakRSS))
		fmt.Printf("   requests per Service: %s\n", strings.Join(perService(r.requests, n), ", "))
	}
}

// round runs both baselines, then the operator once per memory limit, each in
// namespaces of their own (suffixed with the round).
func (b *bench) round(ctx context.Context, n, i int) ([]result, error) {
	var results []result
	for _, workers := range []int{1, b.workers} {
		namespace := fmt.Sprintf("fleet-baseline%d-%d-r%d-%s", workers, n, i, runID)
		objects, err := b.objects(ctx, n, namespace)
		if err != nil {
			return nil, err
		}
		r, err := b.baseline(ctx, n, namespace, objects, workers)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	for j, limit := range b.memoryLimits {
		r, err := b.operatorRun(ctx, n, limit, fmt.Sprintf("fleet-calaf%d-%d-r%d-%s", j, n, i, runID))
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

func inputsOf(i int) map[string]any {
	return map[string]any{"app": fmt.Sprintf("app-%04d", i), "message": fmt.Sprintf("hello from app %d", i)}
}

// runID tells one run's namespaces from another's on the same cluster.
var runID = strconv.FormatInt(time.Now().Unix()%(36*36*36*36), 36)

// renderNamespace is the namespace objects are rendered in, replaced by the run's own.
const renderNamespace = "fleet-render-namespace"

// objects returns the objects of n Services as the operator would render them, in
// namespace (rendered once per n: not timed).
func (b *bench) objects(ctx context.Context, n int, namespace string) ([]*unstructured.Unstructured, error) {
	if b.rendered[n] == nil {
		fmt.Printf("rendering %d packages for the baselines\n", n)
		objects, err := renderAll(ctx, b.pkg, n, renderNamespace)
		if err != nil {
			return nil, err
		}
		if b.rendered[n], err = json.Marshal(objects); err != nil {
			return nil, err
		}
	}
	var objects []*unstructured.Unstructured
	data := bytes.ReplaceAll(b.rendered[n], []byte(renderNamespace), []byte(namespace))
	return objects, json.Unmarshal(data, &objects)
}

// renderAll renders the objects of n Services as the operator would.
func renderAll(ctx context.Context, pkg *tosca.Package, n int, namespace string) ([]*unstructured.Unstructured, error) {
	compiler := tosca.NewCompiler(4)
	compiler.Binding = true
	renderer := render.NewRenderer(1)
	var objects []*unstructured.Unstructured
	for i := 0; i < n; i++ {
		compiled, err := compiler.Compile(ctx, pkg, inputsOf(i))
		if err != nil {
			return nil, err
		}
		result, err := renderer.Render(ctx, compiled, render.Options{Service: fmt.Sprintf("app-%04d", i), Namespace: namespace})
		if err != nil {
			return nil, err
		}
		for _, obj := range result.Objects {
			objects = append(objects, obj.DeepCopy())
		}
	}
	return objects, nil
}

func createNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, ns); err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	return nil
}

// baseline applies the objects with a plain server-side-apply loop (workers at once),
// through a counting proxy, and waits until every Deployment is Current.
func (b *bench) baseline(ctx context.Context, n int, namespace string, objects []*unstructured.Unstructured, workers int) (result, error) {
	if err := createNamespace(ctx, b.c, namespace); err != nil {
		return result{}, err
	}
	proxy, err := startProxy(b.config)
	if err != nil {
		return result{}, err
	}
	defer proxy.Close()
	applier, err := client.New(proxy.Config(b.config.QPS, b.config.Burst), client.Options{Scheme: operator.NewScheme()})
	if err != nil {
		return result{}, err
	}
	name := "baseline: server-side apply loop"
	if workers > 1 {
		name = fmt.Sprintf("baseline: server-side apply, %d workers", workers)
	}
	fmt.Printf("%s: %d objects\n", name, len(objects))
	start := time.Now()
	if err := applyAll(ctx, applier, objects, workers); err != nil {
		return result{}, err
	}
	applied := time.Since(start)
	if err := waitDeploymentsCurrent(ctx, b.c, namespace, n); err != nil {
		return result{}, err
	}
	return result{name: name, applied: applied, duration: time.Since(start), requests: proxy.Counts(false)}, nil
}

// applyAll sends one server-side apply request per object, workers at once.
func applyAll(ctx context.Context, c client.Client, objects []*unstructured.Unstructured, workers int) error {
	var next atomic.Int64
	var failure atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(objects) {
					return
				}
				if err := c.Patch(ctx, objects[i], client.Apply, client.ForceOwnership, client.FieldOwner("baseline")); err != nil {
					failure.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := failure.Load().(error); ok {
		return err
	}
	return nil
}

func waitDeploymentsCurrent(ctx context.Context, c client.Client, namespace string, n int) error {
	deadline := time.Now().Add(30 * time.Minute)
	for time.Now().Before(deadline) {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("apps/v1")
		list.SetKind("DeploymentList")
		if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return err
		}
		current := 0
		for i := range list.Items {
			if s, err := status.Compute(&list.Items[i]); err == nil && s.Status == status.CurrentStatus {
				current++
			}
		}
		if current >= n {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("deployments of %s not Current in time", namespace)
}

// operatorRun runs the operator on namespace, through a counting proxy, creates n
// Services there and waits until all are Ready.
func (b *bench) operatorRun(ctx context.Context, n int, memoryLimit, namespace string) (result, error) {
	if err := createNamespace(ctx, b.c, namespace); err != nil {
		return result{}, err
	}
	upload, err := uploadPackage(ctx, b.c, b.pkg, namespace)
	if err != nil {
		return result{}, err
	}
	dir, err := os.MkdirTemp("", "calaf-fleet-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	proxy, err := startProxy(b.config)
	if err != nil {
		return result{}, err
	}
	defer proxy.Close()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := proxy.WriteKubeconfig(kubeconfig); err != nil {
		return result{}, err
	}
	op, err := startOperator(b.calafBinary, dir, kubeconfig, b.workers, b.operatorQPS, memoryLimit, namespace)
	if err != nil {
		return result{}, err
	}
	defer op.Stop()
	time.Sleep(2 * time.Second) // let it start its caches: not part of the measure
	proxy.Counts(true)

	fmt.Printf("calaf: creating %d Services\n", n)
	start := time.Now()
	if err := createServices(ctx, b.c, upload, n, namespace); err != nil {
		return result{}, err
	}
	res, err := waitFleet(ctx, b.c, op, start, n, namespace)
	if err != nil {
		return result{}, err
	}
	res.requests = proxy.Counts(false)
	res.name = fmt.Sprintf("calaf operator (concurrency %d, no memory limit)", b.workers)
	if memoryLimit != "" {
		res.name = fmt.Sprintf("calaf operator (concurrency %d, --memory-limit %s)", b.workers, memoryLimit)
	}
	return res, nil
}

// uploadPackage stores the package as an upload ConfigMap the Services point at.
func uploadPackage(ctx context.Context, c client.Client, pkg *tosca.Package, namespace string) (*v1alpha1.UploadSource, error) {
	archive, err := source.Pack(pkg)
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "fleet.calaf-package"}, BinaryData: map[string][]byte{source.UploadKey: archive}}
	if err := c.Create(ctx, cm); err != nil && !strings.Contains(err.Error(), "already exists") {
		return nil, err
	}
	return &v1alpha1.UploadSource{ConfigMapName: cm.Name, SHA256: source.SHA256(archive)}, nil
}

// startOperator starts the calaf operator as a process watching namespace.
func startOperator(calafBinary, dir, kubeconfig string, workers int, qps float64, memoryLimit, namespace string) (*framework.Operator, error) {
	op := &framework.Operator{
		Binary:  calafBinary,
		LogPath: filepath.Join(os.TempDir(), "calaf-fleet-operator.log"),
		Args: []string{"--kubeconfig=" + kubeconfig, "--concurrency=" + strconv.Itoa(workers), "--package-cache-dir=" + filepath.Join(dir, "packages"),
			"--zap-log-level=error", "--metrics-bind-address=127.0.0.1:18089", "--enable-pprof",
			"--watch-namespace=" + namespace, fmt.Sprintf("--kube-api-qps=%g", qps), fmt.Sprintf("--kube-api-burst=%d", int(2*qps))},
	}
	if memoryLimit != "" {
		op.Args = append(op.Args, "--memory-limit="+memoryLimit)
	}
	return op, op.Start()
}

// createServices creates n Services of the uploaded package, each with its own inputs.
func createServices(ctx context.Context, c client.Client, upload *v1alpha1.UploadSource, n int, namespace string) error {
	for i := 0; i < n; i++ {
		svc := &v1alpha1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("app-%04d", i), Finalizers: []string{v1alpha1.ServiceFinalizer}},
			Spec: v1alpha1.ServiceSpec{
				Source: v1alpha1.Source{Upload: upload},
				Inputs: map[string]apiextensionsv1.JSON{},
			},
		}
		for key, value := range inputsOf(i) {
			svc.Spec.Inputs[key] = apiextensionsv1.JSON{Raw: []byte(strconv.Quote(value.(string)))}
		}
		if err := c.Create(ctx, svc); err != nil {
			return err
		}
	}
	return nil
}

// waitFleet waits until all n Services are Ready, noting when all were applied and the
// operator's peak RSS on the way.
func waitFleet(ctx context.Context, c client.Client, op *framework.Operator, start time.Time, n int, namespace string) (result, error) {
	pid := op.Pid()
	var peak int64
	var applied time.Duration
	split := ""
	deadline := time.Now().Add(30 * time.Minute)
	for time.Now().Before(deadline) {
		if rss := peakRSS(pid); rss > peak {
			peak, split = rss, rssSplit(pid)
		}
		var list v1alpha1.ServiceList
		if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			return result{}, err
		}
		ready, done := 0, 0
		for _, svc := range list.Items {
			if hasCondition(&svc, v1alpha1.ConditionReady) && svc.Status.ObservedGeneration == svc.Generation {
				ready++
			}
			if hasCondition(&svc, v1alpha1.ConditionApplied) {
				done++
			}
		}
		if done >= n && applied == 0 {
			applied = time.Since(start)
		}
		if ready >= n {
			duration := time.Since(start)
			peak = max(peak, peakRSS(pid))
			fmt.Println("   RSS at its peak:", split)
			printRequests()
			if path := os.Getenv("CALAF_FLEET_HEAP_PROFILE"); path != "" {
				saveHeapProfile(path)
			}
			if applied == 0 {
				applied = duration
			}
			return result{applied: applied, duration: duration, peakRSS: peak, rssSplit: split}, nil
		}
		time.Sleep(time.Second)
	}
	return result{}, fmt.Errorf("the Services were not all Ready in time; operator log: %s", op.LogPath)
}

// hasCondition tells whether the Service's condition is True for its generation.
func hasCondition(svc *v1alpha1.Service, condition string) bool {
	cond := apimeta.FindStatusCondition(svc.Status.Conditions, condition)
	return cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == svc.Generation
}

// peakRSS reads a process's peak resident set size (VmHWM) from /proc.
func peakRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			fields := strings.Fields(line)
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func rss(bytes int64) string {
	if bytes == 0 {
		return ""
	}
	return fmt.Sprintf("peak RSS %.0f MiB", float64(bytes)/(1<<20))
}

// printRequests prints the operator's API requests by verb, from its metrics.
func printRequests() {
	resp, err := http.Get("http://127.0.0.1:18089/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "rest_client_requests_total") || strings.HasPrefix(line, "calaf_cache_requests_total") || strings.HasPrefix(line, "controller_runtime_reconcile_total") || strings.HasPrefix(line, "go_memstats_heap_inuse_bytes") || strings.HasPrefix(line, "go_memstats_next_gc_bytes") {
			fmt.Println("  ", line)
		}
	}
}

// saveHeapProfile writes the operator's heap profile (for `go tool pprof`).
func saveHeapProfile(path string) {
	resp, err := http.Get("http://127.0.0.1:18089/debug/pprof/heap")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	_ = os.WriteFile(path, data, 0o644)
}

// rssSplit reads how a process's resident memory splits into anonymous memory (heap,
// stacks) and file pages (the binary's code and data).
func rssSplit(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	var parts []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "RssAnon:") || strings.HasPrefix(line, "RssFile:") {
			parts = append(parts, strings.Join(strings.Fields(line), " "))
		}
	}
	return strings.Join(parts, ", ")
}
