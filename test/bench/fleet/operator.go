package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/source"
	"calaf.io/calaf/test/e2e/framework"
)

// fleet is one operator run: n Services in a namespace of their own and the operator
// processes that reconcile them.
type fleet struct {
	n           int
	namespace   string
	memoryLimit string
	// selectors are the --watch-label-selector of each operator process ("": all Services).
	selectors []string
	// shards labels the Services for this many shards (shardLabels; 0: no labels).
	shards int
	// backlog creates the Services before the operator starts: the run measures the
	// operator's own work from its start, with none of the creates in its window.
	backlog bool
	// targets are the kubeconfig Secrets of f's namespace that Services deploy through,
	// Service i through targets[i mod len] (none: all in the operator's own cluster).
	targets []string
}

// operatorRun measures the operator processes of f (measureOperator), then clears f's
// namespace.
func (b *bench) operatorRun(ctx context.Context, f fleet) (result, error) {
	res, err := b.measureOperator(ctx, f)
	if err != nil {
		return result{}, err
	}
	return res, clearNamespace(ctx, b.c, f.namespace)
}

// measureOperator starts the operator processes of f on its namespace, each through a
// counting proxy of its own, creates the n Services there and waits until all are Ready;
// with a backlog, it creates the Services first and starts the operator processes after
// them, and the run's window (time, CPU, requests) begins as they start.
func (b *bench) measureOperator(ctx context.Context, f fleet) (result, error) {
	if err := createNamespace(ctx, b.c, f.namespace); err != nil {
		return result{}, err
	}
	sources, err := b.upload(ctx, f.namespace)
	if err != nil {
		return result{}, err
	}
	var procs []*operatorProcess
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	startAll := func() error {
		for i, selector := range f.selectors {
			p, err := b.startOperator(f, selector, i)
			if err != nil {
				return err
			}
			procs = append(procs, p)
		}
		return nil
	}
	if !f.backlog {
		if err := startAll(); err != nil {
			return result{}, err
		}
		time.Sleep(2 * time.Second) // let them start their caches: not part of the measure
		for _, p := range procs {
			p.proxy.Counts(true)
		}
	}

	watch, err := watchServices(ctx, b.config, f.namespace)
	if err != nil {
		return result{}, err
	}
	defer watch.stop()

	fmt.Printf("calaf: creating %d Services, %d at a time\n", f.n, b.workers)
	cpuBefore, start := sampleCPU(), time.Now()
	if err := createServices(ctx, b.c, sources, f, b.workers); err != nil {
		return result{}, err
	}
	fmt.Printf("calaf: %d Services created in %.1f s\n", f.n, time.Since(start).Seconds())
	if f.backlog {
		time.Sleep(2 * time.Second) // the bench's watch takes in the creates: not part of the measure
		fmt.Println("calaf: starting the operator")
		cpuBefore, start = sampleCPU(), time.Now()
		if err := startAll(); err != nil {
			return result{}, err
		}
	}
	res, err := waitFleet(ctx, watch, procs, start, cpuBefore, f.n)
	if err != nil {
		return result{}, err
	}
	res.requests = map[string]int64{}
	for _, p := range procs {
		if last := p.proxy.LastApply(); last.Sub(start) > res.lastApply {
			res.lastApply = last.Sub(start)
		}
		for key, count := range p.proxy.Counts(false) {
			res.requests[key] += count
		}
	}
	res.name, res.backlog = b.operatorName(f), f.backlog
	return res, nil
}

// operatorName names the operator processes of f in the report.
func (b *bench) operatorName(f fleet) string {
	switch {
	case len(f.selectors) > 1:
		return fmt.Sprintf("calaf, %d shards (concurrency %d each)", len(f.selectors), b.operatorConcurrency())
	case f.memoryLimit != "":
		return fmt.Sprintf("calaf operator (concurrency %d, --memory-limit %s)", b.operatorConcurrency(), f.memoryLimit)
	case f.backlog:
		return fmt.Sprintf("calaf operator started after its Services (concurrency %d)", b.operatorConcurrency())
	}
	return fmt.Sprintf("calaf operator (concurrency %d, no memory limit)", b.operatorConcurrency())
}

// upload stores the bench's package archives as upload ConfigMaps in namespace: the one
// every Service points at, or one for each Service.
func (b *bench) upload(ctx context.Context, namespace string) ([]*v1alpha1.UploadSource, error) {
	if len(b.archives) > 1 {
		fmt.Printf("uploading %d packages\n", len(b.archives))
	}
	var sources []*v1alpha1.UploadSource
	for i, archive := range b.archives {
		name := "fleet.calaf-package"
		if len(b.archives) > 1 {
			name = serviceName(i) + ".calaf-package"
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, BinaryData: map[string][]byte{source.UploadKey: archive}}
		if err := b.c.Create(ctx, cm); err != nil && !strings.Contains(err.Error(), "already exists") {
			return nil, err
		}
		sources = append(sources, &v1alpha1.UploadSource{ConfigMapName: cm.Name, SHA256: source.SHA256(archive)})
	}
	return sources, nil
}

// operatorProcess is one operator process, with its counting proxy, its package cache
// directory and its metrics port.
type operatorProcess struct {
	op    *framework.Operator
	proxy *countingProxy
	dir   string
	port  int
}

// startOperator starts operator process i of f, watching f's namespace and the Services
// selector selects.
func (b *bench) startOperator(f fleet, selector string, i int) (*operatorProcess, error) {
	dir, err := os.MkdirTemp("", "calaf-fleet-")
	if err != nil {
		return nil, err
	}
	p := &operatorProcess{dir: dir, port: 18089 + i}
	if p.proxy, err = startProxy(b.config); err != nil {
		p.stop()
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := p.proxy.WriteKubeconfig(kubeconfig); err != nil {
		p.stop()
		return nil, err
	}
	op := &framework.Operator{
		Binary:  b.calafBinary,
		LogPath: filepath.Join(os.TempDir(), "calaf-fleet-operator"+suffix(i)+".log"),
		Args: []string{"--kubeconfig=" + kubeconfig, "--concurrency=" + strconv.Itoa(b.operatorConcurrency()), "--package-cache-dir=" + filepath.Join(dir, "packages"),
			"--zap-log-level=" + cmp.Or(os.Getenv("CALAF_FLEET_LOG_LEVEL"), "error"), fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", p.port), "--enable-pprof",
			"--watch-namespace=" + f.namespace, fmt.Sprintf("--kube-api-qps=%g", b.operatorQPS), fmt.Sprintf("--kube-api-burst=%d", int(2*b.operatorQPS))},
	}
	if b.settleDelay >= 0 {
		op.Args = append(op.Args, "--settle-delay="+b.settleDelay.String())
	}
	if f.memoryLimit != "" {
		op.Args = append(op.Args, "--memory-limit="+f.memoryLimit)
	}
	if selector != "" {
		op.Args = append(op.Args, "--watch-label-selector="+selector)
	}
	if b.multicluster { // in both runs alike: the target clusters' proxies listen on loopback
		op.Args = append(op.Args, "--target-cluster-allow=127.0.0.1/32")
	}
	if err := op.Start(); err != nil {
		p.stop()
		return nil, err
	}
	p.op = op
	return p, nil
}

// suffix tells the files of operator process i from the first one's ("-i"; none for 0).
func suffix(i int) string {
	if i == 0 {
		return ""
	}
	return "-" + strconv.Itoa(i)
}

// stop stops the process and its proxy and removes its directory.
func (p *operatorProcess) stop() {
	if p.op != nil {
		p.op.Stop()
	}
	if p.proxy != nil {
		p.proxy.Close()
	}
	_ = os.RemoveAll(p.dir)
}

// createServices creates f's n Services, each with its own inputs and its shard's labels,
// workers at once (as many as the concurrent baseline's); Service i's package is
// sources[i], or the only one.
func createServices(ctx context.Context, c client.Client, sources []*v1alpha1.UploadSource, f fleet, workers int) error {
	group, ctx := errgroup.WithContext(ctx)
	group.SetLimit(max(workers, 1))
	for i := 0; i < f.n; i++ {
		svc := newService(f, i, sources[i%len(sources)])
		group.Go(func() error { return c.Create(ctx, svc) })
	}
	return group.Wait()
}

// newService is Service i of f, with its inputs and its shard's labels.
func newService(f fleet, i int, source *v1alpha1.UploadSource) *v1alpha1.Service {
	svc := &v1alpha1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: serviceName(i), Labels: shardLabels(i, f.shards), Finalizers: []string{v1alpha1.ServiceFinalizer}},
		Spec: v1alpha1.ServiceSpec{
			Source: v1alpha1.Source{Upload: source},
			Inputs: map[string]apiextensionsv1.JSON{},
		},
	}
	for key, value := range inputsOf(i) {
		svc.Spec.Inputs[key] = apiextensionsv1.JSON{Raw: []byte(strconv.Quote(value.(string)))}
	}
	if len(f.targets) > 0 {
		svc.Spec.KubeConfig = &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.SecretKeyReference{Name: f.targets[i%len(f.targets)]}}
	}
	return svc
}

// serviceWatch follows the Services of a namespace through a watch (an informer), so
// that waiting for them costs the API server one LIST and the events of their changes,
// and the bench the handling of each event once: it tallies the Services Applied and
// Ready as their events arrive, rather than looking at all of them every time it looks
// (which, 10 times a second, took the bench as much CPU as the operator's own watches).
type serviceWatch struct {
	cancel context.CancelFunc
	tally  *serviceTally
}

// watchServices starts following the Services of namespace.
func watchServices(ctx context.Context, config *rest.Config, namespace string) (*serviceWatch, error) {
	c, err := cache.New(config, cache.Options{Scheme: operator.NewScheme(), DefaultNamespaces: map[string]cache.Config{namespace: {}}})
	if err != nil {
		return nil, err
	}
	informer, err := c.GetInformer(ctx, &v1alpha1.Service{})
	if err != nil {
		return nil, err
	}
	tally := newServiceTally()
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    tally.note,
		UpdateFunc: func(_, obj any) { tally.note(obj) },
		DeleteFunc: tally.forget,
	}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("the watch of the Services of %s did not start", namespace)
	}
	return &serviceWatch{cancel: cancel, tally: tally}, nil
}

func (w *serviceWatch) stop() { w.cancel() }

// serviceTally counts the Services that are Ready, and those Applied, for their
// generation, from the events of their changes.
type serviceTally struct {
	mu             sync.Mutex
	states         map[string]serviceState
	ready, applied int
}

type serviceState struct{ ready, applied bool }

func newServiceTally() *serviceTally { return &serviceTally{states: map[string]serviceState{}} }

// note records the state of the Service obj (an event's object).
func (t *serviceTally) note(obj any) {
	svc, ok := obj.(*v1alpha1.Service)
	if !ok {
		return
	}
	state := serviceState{
		ready:   hasCondition(svc, v1alpha1.ConditionReady) && svc.Status.ObservedGeneration == svc.Generation,
		applied: hasCondition(svc, v1alpha1.ConditionApplied),
	}
	t.set(svc.Namespace+"/"+svc.Name, state)
}

// forget drops a deleted Service (obj, or the tombstone of one).
func (t *serviceTally) forget(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		t.set(tombstone.Key, serviceState{})
		return
	}
	if svc, ok := obj.(*v1alpha1.Service); ok {
		t.set(svc.Namespace+"/"+svc.Name, serviceState{})
	}
}

func (t *serviceTally) set(key string, state serviceState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.states[key]
	t.ready += boolInt(state.ready) - boolInt(old.ready)
	t.applied += boolInt(state.applied) - boolInt(old.applied)
	if state == (serviceState{}) {
		delete(t.states, key)
		return
	}
	t.states[key] = state
}

// counts returns how many Services are Ready, and how many Applied.
func (t *serviceTally) counts() (ready, applied int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ready, t.applied
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// waitFleet waits until all n Services are Ready, noting when all were applied (and the
// CPU used until then, from cpuBefore) and the memory of the operator processes on the way.
func waitFleet(ctx context.Context, watch *serviceWatch, procs []*operatorProcess, start time.Time, cpuBefore cpuTimes, n int) (result, error) {
	var pids []int
	for _, p := range procs {
		pids = append(pids, p.op.Pid())
	}
	mem := newMemory(pids)
	var applied time.Duration
	var cpu map[string]time.Duration
	lastSample := time.Time{}
	for deadline := time.Now().Add(30 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if time.Since(lastSample) >= time.Second {
			mem.sample()
			lastSample = time.Now()
		}
		ready, done := watch.tally.counts()
		if done >= n && applied == 0 {
			applied, cpu = time.Since(start), sampleCPU().since(cpuBefore)
		}
		if ready < n {
			continue
		}
		duration := time.Since(start)
		mem.sample()
		var compiles, failed int64
		for i, p := range procs {
			fmt.Println("   RSS at its peak:", mem.splits[i])
			metrics := p.metrics()
			printRequests(metrics)
			compiles += metricSum(metrics, "calaf_compile_duration_seconds_count")
			failed += metricSum(metrics, `calaf_compile_duration_seconds_count{result="error"}`)
			if path := os.Getenv("CALAF_FLEET_HEAP_PROFILE"); path != "" {
				p.saveHeapProfile(path + suffix(i))
			}
		}
		if applied == 0 {
			applied, cpu = duration, sampleCPU().since(cpuBefore)
		}
		return mem.result(result{applied: applied, duration: duration, compiles: compiles, failedCompiles: failed, cpu: cpu}), nil
	}
	return result{}, fmt.Errorf("the Services were not all Ready in time; operator log: %s", procs[0].op.LogPath)
}

// hasCondition tells whether the Service's condition is True for its generation.
func hasCondition(svc *v1alpha1.Service, condition string) bool {
	cond := apimeta.FindStatusCondition(svc.Status.Conditions, condition)
	return cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == svc.Generation
}

// metrics returns the operator's metrics, in Prometheus's text format ("" when it does not
// answer).
func (p *operatorProcess) metrics() string {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", p.port))
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return string(data)
}

// printRequests prints the operator's API requests by verb, cache lookups, compiles and
// workers started, from its metrics.
func printRequests(metrics string) {
	for _, line := range strings.Split(metrics, "\n") {
		for _, name := range []string{"rest_client_requests_total", "calaf_cache_requests_total", "controller_runtime_reconcile_total", "go_memstats_heap_inuse_bytes", "go_memstats_next_gc_bytes", "calaf_compile_duration_seconds_count", "calaf_workers_started_total"} {
			if strings.HasPrefix(line, name) {
				fmt.Println("  ", line)
				break
			}
		}
	}
}

// metricSum sums the samples of a metric over its labels, in Prometheus's text format; name
// may end with labels, to sum only those samples.
func metricSum(metrics, name string) int64 {
	var sum float64
	for _, line := range strings.Split(metrics, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		fields := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(fields) > 0 {
			value, _ := strconv.ParseFloat(fields[0], 64)
			sum += value
		}
	}
	return int64(sum)
}

// saveHeapProfile writes the operator's heap profile (for `go tool pprof`).
func (p *operatorProcess) saveHeapProfile(path string) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", p.port))
	if err != nil {
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	_ = os.WriteFile(path, data, 0o644)
}
