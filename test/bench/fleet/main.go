// Command fleet measures the operator at scale on a real cluster: N Services of the shape
// of Flux's kustomize-controller benchmark (a Deployment scaled to zero, a ServiceAccount,
// a Service and a ConfigMap, each Service with its own inputs), from creation to all Ready,
// and the operator's peak memory — against a same-run baseline: a plain server-side-apply
// loop of the same rendered objects, waiting for the same readiness. With -distinct every
// Service has its own package revision, against raw Puccini compiling the same packages
// in a loop; with -shards K the Services run through one operator and through K shards
// (--watch-label-selector); with -multicluster the Services deploy into two other
// clusters (the test ground's remote control planes) against the same Services in the
// operator's own. Each writes a section of its own.
//
//	go run ./test/bench/fleet -n 1000 -calaf bin/calaf-full -report docs/benchmarks.md
//	go run ./test/bench/fleet -distinct -n 1000 -calaf bin/calaf-full -report docs/benchmarks.md
//	go run ./test/bench/fleet -shards 2 -n 2000 -calaf bin/calaf-full -report docs/benchmarks.md
//	go run ./test/bench/fleet -multicluster -n 200 -calaf bin/calaf-full -report docs/benchmarks.md
//
// The operator logs errors only, to /tmp/calaf-fleet-operator*.log;
// CALAF_FLEET_LOG_LEVEL=debug says more (a slower operator: not for a report).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/render"
	"calaf.io/calaf/source"
	"calaf.io/calaf/test/e2e/framework"
	"calaf.io/calaf/tosca"
)

type result struct {
	name    string
	applied time.Duration // until every object was applied (for the operator: every Service Applied)
	// lastApply is until the last apply request was answered: for the baselines, applied;
	// for the operator, before its Services report it (their status is held for the
	// controllers' first look).
	lastApply time.Duration
	duration  time.Duration // until everything was Ready
	peakRSS   int64         // bytes, of the largest operator process; 0 when not measured
	rssSplit  string        // anonymous and file-backed parts of the peak
	// processRSS are the peaks of each operator process, workerRSS the largest peak of
	// their workers, totalRSS the largest sum of all their resident memory at one sample.
	processRSS          []int64
	workerRSS, totalRSS int64
	// compiles are the operator's compiles that no cache answered, failedCompiles those of
	// them that failed.
	compiles, failedCompiles int64
	// requests counts the API requests of the measured client by "VERB resource"
	// (countingProxy), until all were Ready.
	requests map[string]int64
	// targetRequests are the operator's requests to each target cluster, by its name
	// (-multicluster), counted as requests are.
	targetRequests map[string]map[string]int64
	// cpu is the CPU each process group used until all were applied (cpuGroups).
	cpu map[string]time.Duration
	// backlog: the operator started after its Services were created.
	backlog bool
}

// settings are the bench's command line.
type settings struct {
	n, smaller, workers, rounds int
	operatorQPS                 float64
	calafBinary                 string
	memoryLimits                []string
	// distinct gives every Service its own package revision; shards runs the Services
	// through one operator and through this many shards.
	distinct bool
	shards   int
	// multicluster deploys the Services into two target clusters, against the same
	// Services in the operator's own cluster.
	multicluster bool
	// requestCosts measures what each request of a Service costs the API server.
	requestCosts bool
	// concurrency is the operator's --concurrency; 0: the operator's default.
	concurrency int
	// operatorOnly runs no baseline: for profiling the operator, never for a report.
	operatorOnly bool
	// backlog also runs the operator started after its Services were created.
	backlog bool
	// report is the benchmarks.md to update ("": none).
	report string
	// seed draws the order of the runs within each round (printed, and said in the
	// report, so that a run's order can be repeated).
	seed uint64
	// settleDelay is the operator's --settle-delay; negative: its default.
	settleDelay time.Duration
}

// operatorSettleDelay is the --settle-delay the operator runs with.
func (s settings) operatorSettleDelay() time.Duration {
	if s.settleDelay >= 0 {
		return s.settleDelay
	}
	return operator.DefaultOptions().SettleDelay
}

// operatorConcurrency is the --concurrency the operator runs with.
func (s settings) operatorConcurrency() int {
	if s.concurrency > 0 {
		return s.concurrency
	}
	return operator.DefaultOptions().Concurrency
}

func main() {
	ctrllog.SetLogger(logr.Discard()) // the bench's clients log nothing worth its output
	s, rawDir := parseFlags()
	var err error
	switch {
	case rawDir != "":
		err = rawLoop(context.Background(), os.Stdout, rawDir, s.n)
	default:
		err = run(s, s.report)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// parseFlags returns the settings (with the report to write) and the directory of the raw
// Puccini loop (the child process of -distinct); it exits on a bad command line.
func parseFlags() (s settings, rawDir string) {
	flag.IntVar(&s.n, "n", 1000, "number of Services (2000 with -shards, 200 with -multicluster)")
	flag.StringVar(&s.calafBinary, "calaf", "bin/calaf-full", "calaf-full binary (the operator)")
	flag.StringVar(&s.report, "report", "", "benchmarks.md to update")
	flag.IntVar(&s.workers, "workers", 4, "workers of the concurrent baseline")
	flag.IntVar(&s.concurrency, "concurrency", 0, "the operator's --concurrency (0: its default)")
	flag.IntVar(&s.smaller, "smaller", 0, "also run this many Services in every round, for the growth to -n (0: not)")
	flag.Float64Var(&s.operatorQPS, "operator-qps", 200, "the operator's --kube-api-qps (its burst twice that): the baselines' client allows 200 and 400")
	flag.IntVar(&s.rounds, "rounds", 1, "interleaved rounds (each: both baselines and the operator runs, in an order drawn from -seed); medians are reported")
	flag.Uint64Var(&s.seed, "seed", 0, "the seed of the order of the runs within each round (0: one drawn at random, printed and written in the report)")
	flag.DurationVar(&s.settleDelay, "settle-delay", -1, "the operator's --settle-delay (negative: its default)")
	memoryLimit := flag.String("memory-limit", "", "also run the operator with this --memory-limit (Go's soft limit, as a container limit sets it), in a namespace of its own")
	flag.BoolVar(&s.distinct, "distinct", false, "give every Service its own package revision, against raw Puccini compiling the same packages in a loop (a report section of its own)")
	flag.BoolVar(&s.requestCosts, "request-costs", false, "measure the API server's and etcd's CPU per request of each kind a Service costs, the baselines' applies and the Service's own create, status patch and event (a report section of its own)")
	flag.IntVar(&s.shards, "shards", 0, "run the Services through one operator, then through this many shards (--watch-label-selector), interleaved (a report section of its own)")
	flag.BoolVar(&s.multicluster, "multicluster", false, "run the Services in two target clusters (test/ground/remote.sh's remote and remote2, started and stopped here), half in each, against the same Services in the operator's own cluster, interleaved (a report section of its own)")
	flag.BoolVar(&s.backlog, "backlog", true, "also run the operator started after its Services were created, its window beginning as it starts (the operator's own work, none of the creates)")
	flag.BoolVar(&s.operatorOnly, "operator-only", false, "run the operator alone, no baseline (to profile it: CALAF_APISERVER_PROFILING=true serves the API server's profile too); no report")
	flag.StringVar(&rawDir, "raw-puccini", "", "only compile the packages of -n Services under this directory with raw Puccini in a loop, and print the loop's time and peak RSS (what -distinct runs as its baseline)")
	flag.Parse()
	s.memoryLimits = []string{""}
	if *memoryLimit != "" {
		s.memoryLimits = append(s.memoryLimits, *memoryLimit)
	}
	if s.shards > 0 && !flagSet("n") {
		s.n = 2000
	}
	if s.multicluster && !flagSet("n") {
		s.n = 200
	}
	if s.seed == 0 {
		s.seed = rand.Uint64()
	}
	if err := s.check(); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(2)
	}
	return s, rawDir
}

// flagSet tells whether the command line set a flag.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// check refuses settings that do not go together.
func (s settings) check() error {
	switch {
	case s.distinct && s.shards > 0, s.requestCosts && (s.distinct || s.shards > 0), s.multicluster && (s.distinct || s.shards > 0 || s.requestCosts):
		return fmt.Errorf("-distinct, -shards, -request-costs and -multicluster are separate runs")
	case s.multicluster && (s.smaller > 0 || len(s.memoryLimits) > 1 || s.operatorOnly):
		return fmt.Errorf("-smaller, -memory-limit and -operator-only belong to the default run, not to -multicluster")
	case s.requestCosts && (s.smaller > 0 || s.operatorOnly):
		return fmt.Errorf("-request-costs runs no fleet: no -smaller, no -operator-only")
	case s.shards == 1 || s.shards < 0:
		return fmt.Errorf("-shards needs at least 2 shards")
	case (s.distinct || s.shards > 0) && (s.smaller > 0 || len(s.memoryLimits) > 1):
		return fmt.Errorf("-smaller and -memory-limit belong to the default run, not to -distinct or -shards")
	case s.operatorOnly && (s.distinct || s.shards > 0):
		return fmt.Errorf("-operator-only belongs to the default run, not to -distinct or -shards")
	case s.operatorOnly && s.report != "":
		return fmt.Errorf("-operator-only measures no baseline, so it writes no report")
	}
	return nil
}

// bench is what every run of the bench shares.
type bench struct {
	settings
	config *rest.Config
	c      client.Client
	pkg    *tosca.Package
	// archives are the package archives the Services point at: one for all, or one each.
	archives [][]byte
	// rendered are the objects of n Services, by n, in renderNamespace.
	rendered map[int][]byte
	// order draws the order of the runs of each round, from the seed.
	order *runOrder
}

func run(s settings, report string) error {
	ctx := context.Background()
	b, err := newBench(ctx, s)
	if err != nil {
		return err
	}
	switch {
	case s.distinct:
		return b.runDistinct(ctx, report)
	case s.requestCosts:
		return b.runCosts(ctx, report)
	case s.shards > 0:
		return b.runShards(ctx, report)
	case s.multicluster:
		return b.runMulticluster(ctx, report)
	}
	return b.runScale(ctx, report)
}

// newBench connects to the cluster, installs the CRDs and opens the bench package.
func newBench(ctx context.Context, s settings) (*bench, error) {
	config, err := framework.LoadConfig()
	if err != nil {
		return nil, err
	}
	config.QPS, config.Burst = 200, 400
	c, err := client.New(config, client.Options{Scheme: operator.NewScheme()})
	if err != nil {
		return nil, err
	}
	if err := framework.InstallCRDs(ctx, c); err != nil {
		return nil, err
	}
	dir := packageDir()
	if s.multicluster {
		dir = nodelessPackageDir()
	}
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	if err != nil {
		return nil, err
	}
	archive, err := source.Pack(pkg)
	if err != nil {
		return nil, err
	}
	return &bench{settings: s, config: config, c: c, pkg: pkg, archives: [][]byte{archive}, rendered: map[int][]byte{}, order: newRunOrder(s.seed)}, nil
}

// packageDir is the bench package's directory.
func packageDir() string {
	return filepath.Join(framework.RepoRoot(), "test", "bench", "fleet", "package")
}

// nodelessPackageDir is the directory of -multicluster's package, whose objects are
// healthy in a cluster without nodes or controllers.
func nodelessPackageDir() string {
	return filepath.Join(framework.RepoRoot(), "test", "bench", "fleet", "nodeless")
}

// runScale runs -rounds rounds of both baselines and the operator, at -n Services and
// -smaller, the sizes and the runs of each in orders drawn from the seed, and reports
// their medians.
func (b *bench) runScale(ctx context.Context, report string) error {
	sizes := []int{b.n}
	if b.smaller > 0 {
		sizes = []int{b.smaller, b.n}
	}
	rounds := map[int][][]result{}
	fmt.Printf("runs in an order drawn from seed %d (-seed %d repeats it)\n", b.seed, b.seed)
	for i := 0; i < b.rounds; i++ {
		for _, k := range b.order.next(len(sizes)) { // which fleet size goes first, drawn too
			n := sizes[k]
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
	if b.smaller > 0 {
		smaller = medians(rounds[b.smaller])
	}
	return writeReport(report, b.settings, rounds[b.n], smaller)
}

func printRound(i, n int, results []result) {
	for _, r := range results {
		fmt.Printf("round %d, %d Services: %-55s applied %6.1f s (last apply %.1f s)  Ready %6.1f s  %s\n", i+1, n, r.name, r.applied.Seconds(), r.lastApply.Seconds(), r.duration.Seconds(), rss(r.peakRSS))
		if r.workerRSS > 0 {
			fmt.Printf("   RSS: %s per operator process, %s of its largest worker, %s of all together\n", mib(r.processRSS...), mib(r.workerRSS), mib(r.totalRSS))
		}
		if r.requests != nil {
			fmt.Printf("   requests per Service: %s\n", strings.Join(perService(r.requests, n), ", "))
		}
		if r.cpu != nil {
			var groups []string
			for _, group := range cpuGroups {
				groups = append(groups, fmt.Sprintf("%s %.1f", group, r.cpu[group].Seconds()))
			}
			fmt.Printf("   CPU seconds until applied: %s; all %.1f\n", strings.Join(groups, ", "), cpuTotal(r.cpu).Seconds())
		}
	}
}

// round runs both baselines, the operator once per memory limit and (with -backlog) the
// operator started after its Services, in an order drawn for the round, each in
// namespaces of their own (suffixed with the round); the results are in that list's order.
func (b *bench) round(ctx context.Context, n, i int) ([]result, error) {
	var runs []func() (result, error)
	for _, workers := range b.baselineWorkers() {
		runs = append(runs, func() (result, error) {
			namespace := fmt.Sprintf("fleet-baseline%d-%d-r%d-%s", workers, n, i, runID)
			objects, err := b.objects(ctx, n, namespace)
			if err != nil {
				return result{}, err
			}
			r, err := b.baseline(ctx, n, namespace, objects, workers)
			if err != nil {
				return result{}, err
			}
			return r, clearNamespace(ctx, b.c, namespace)
		})
	}
	for j, limit := range b.memoryLimits {
		runs = append(runs, func() (result, error) {
			return b.operatorRun(ctx, fleet{n: n, namespace: fmt.Sprintf("fleet-calaf%d-%d-r%d-%s", j, n, i, runID), memoryLimit: limit, selectors: []string{""}})
		})
	}
	if b.backlog {
		runs = append(runs, func() (result, error) {
			return b.operatorRun(ctx, fleet{n: n, namespace: fmt.Sprintf("fleet-backlog-%d-r%d-%s", n, i, runID), selectors: []string{""}, backlog: true})
		})
	}
	return b.order.run(runs)
}

// baselineWorkers are the workers of each baseline a round runs: sequential, then
// concurrent; none with -operator-only.
func (s settings) baselineWorkers() []int {
	if s.operatorOnly {
		return nil
	}
	return []int{1, s.workers}
}

// serviceName names Service i (and its app).
func serviceName(i int) string { return fmt.Sprintf("app-%04d", i) }

func inputsOf(i int) map[string]any {
	return map[string]any{"app": serviceName(i), "message": fmt.Sprintf("hello from app %d", i)}
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
		result, err := renderer.Render(ctx, compiled, render.Options{Service: serviceName(i), Namespace: namespace})
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
	cpuBefore, start := sampleCPU(), time.Now()
	if err := applyAll(ctx, applier, objects, workers); err != nil {
		return result{}, err
	}
	applied := time.Since(start)
	cpu := sampleCPU().since(cpuBefore)
	if err := waitDeploymentsCurrent(ctx, b.c, namespace, n); err != nil {
		return result{}, err
	}
	return result{name: name, applied: applied, lastApply: applied, duration: time.Since(start), requests: proxy.Counts(false), cpu: cpu}, nil
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
