package orchestration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/artifacts/protocol"
	"calaf.io/calaf/internal/jsonvalue"
	"calaf.io/calaf/internal/redact"
	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

// fakeExecutor runs requests in memory: each call is recorded, and the result comes from
// a function of the test.
type fakeExecutor struct {
	mu    sync.Mutex
	calls []string // "operation@pod"
	reqs  []protocol.Request
	fn    func(target Target, req *protocol.Request) (*protocol.Result, error)
}

func (f *fakeExecutor) Run(_ context.Context, target Target, req *protocol.Request) (*protocol.Result, Timing, error) {
	f.mu.Lock()
	f.calls = append(f.calls, req.Operation+"@"+target.Pod)
	f.reqs = append(f.reqs, *req)
	fn := f.fn
	f.mu.Unlock()
	if fn == nil {
		return &protocol.Result{Attributes: map[string]any{"registration": "ok in " + target.Pod}}, Timing{}, nil
	}
	res, err := fn(target, req)
	return res, Timing{}, err
}

func (f *fakeExecutor) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := f.calls
	f.calls = nil
	sort.Strings(calls)
	return calls
}

// world is a Service with one node "smf" (a Deployment) and its pods.
type world struct {
	t      *testing.T
	client client.Client
	exec   *fakeExecutor
	orch   *Orchestrator
	clock  time.Time
	svc    *v1alpha1.Service
	node   *render.Node
	pkg    *tosca.Package
	deploy *unstructured.Unstructured
	rs     *unstructured.Unstructured
	status v1alpha1.NodeStatus
	notes  chan string
}

func newWorld(t *testing.T, files map[string]string, ops ...render.Operation) *world {
	t.Helper()
	dir := t.TempDir()
	files["service.yaml"] = "tosca_definitions_version: tosca_simple_yaml_1_3\n"
	for name, content := range files {
		full := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, exec: &fakeExecutor{}, clock: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), pkg: pkg, notes: make(chan string, 100)}
	w.svc = &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Name: "core", Namespace: "ns", UID: "svc-uid"}}
	w.node = &render.Node{
		Name: "smf", Type: "mini5gc.nodes.SMF", Properties: map[string]any{"replicas": int64(1)},
		Operations: ops,
		Artifacts: map[string]render.Artifact{
			"configure": {Type: "calaf.artifacts.JavaScript", File: "Artifacts/configure.js", Properties: map[string]any{"targets": "all", "retries": int64(1)}},
			"create":    {Type: "calaf.artifacts.Shell", File: "Artifacts/create.sh", Properties: map[string]any{"targets": "one"}},
			"start":     {Type: "calaf.artifacts.JavaScript", File: "Artifacts/start.js"},
			"report":    {Type: "calaf.artifacts.JavaScript", File: "Artifacts/report.js"},
		},
	}
	w.deploy = &unstructured.Unstructured{}
	w.deploy.SetAPIVersion("apps/v1")
	w.deploy.SetKind("Deployment")
	w.deploy.SetName("core-smf")
	w.deploy.SetNamespace("ns")
	w.deploy.SetUID("deploy-uid")
	w.rs = &unstructured.Unstructured{}
	w.rs.SetAPIVersion("apps/v1")
	w.rs.SetKind("ReplicaSet")
	w.rs.SetName("core-smf-7f")
	w.rs.SetNamespace("ns")
	w.rs.SetUID("rs-uid")
	w.rs.SetLabels(map[string]string{v1alpha1.LabelService: "core", v1alpha1.LabelNode: "smf"})
	controllerRef := true
	w.rs.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "core-smf", UID: "deploy-uid", Controller: &controllerRef}})
	w.client = fake.NewClientBuilder().WithScheme(testScheme(t)).
		WithStatusSubresource(&v1alpha1.Operation{}).WithObjects(w.rs, w.svc).Build()
	w.orch = NewOrchestrator(w.client, w.exec, Options{
		Log:    logr.Discard(),
		Now:    func() time.Time { return w.clock },
		Notify: func(ns, name string) bool { w.notes <- ns + "/" + name; return true },
	})
	w.status = v1alpha1.NodeStatus{Name: "smf", Phase: v1alpha1.NodeReady}
	return w
}

func lifecycleOp(name, impl string, inputs map[string]any) render.Operation {
	return render.Operation{Interface: "Standard", InterfaceType: "tosca::Standard", Name: name, Implementation: impl, Inputs: inputs}
}

// addPod adds a ready pod of the Deployment (through its ReplicaSet); owner "" makes a
// pod with the Service's labels that the Service does not own.
func (w *world) addPod(name string, owner types.UID) {
	w.t.Helper()
	controllerRef := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"),
			Labels: map[string]string{v1alpha1.LabelService: "core", v1alpha1.LabelNode: "smf"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
		},
	}
	if owner != "" {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "core-smf-7f", UID: owner, Controller: &controllerRef}}
	}
	if err := w.client.Create(context.Background(), pod); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) deletePod(name string) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	if err := w.client.Delete(context.Background(), pod); err != nil {
		w.t.Fatal(err)
	}
}

// testScheme holds the built-in kinds and Calaf's.
func testScheme(t *testing.T) *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// input is what a reconcile hands the orchestrator for the node.
func (w *world) input(revision string) Input {
	return Input{
		Service:    w.svc,
		Files:      w.pkg,
		Revision:   revision,
		Node:       w.node,
		Attributes: map[string]any{"ready_replicas": int64(1)},
		Live:       map[string]*unstructured.Unstructured{"Deployment/core-smf": w.deploy},
		Operations: w.status.Operations,
	}
}

// reconciled is what a reconcile keeps of a Result, as the Service reconciler does: the
// node's attributes and when to look again.
type reconciled struct {
	Attributes   map[string]map[string]any
	RequeueAfter time.Duration
}

// record records a Result in the node's status as the Service reconciler does.
func (w *world) record(in Input, res Result) *reconciled {
	w.status.Operations = res.Operations
	if res.Message != "" {
		w.status.Message = res.Message
	}
	values := map[string]any{}
	for name, value := range in.Attributes {
		values[name] = value
	}
	for name, value := range res.Attributes {
		values[name] = value
	}
	if len(res.Attributes) > 0 {
		w.status.Attributes = jsonvalue.Map(func(v any) any { return v }, values)
	}
	return &reconciled{Attributes: map[string]map[string]any{"smf": values}, RequeueAfter: res.RequeueAfter}
}

// runOnce calls Run as a reconcile would and records its Result.
func (w *world) runOnce(in Input) (bool, error, *reconciled) {
	res := w.orch.Run(context.Background(), in)
	return res.Done, res.Failure, w.record(in, res)
}

// run calls Run as a reconcile would, then waits for the job it started (if any).
func (w *world) run(revision string) (bool, error, *reconciled) {
	w.t.Helper()
	configured, err, s := w.runOnce(w.input(revision))
	w.waitIdle()
	return configured, err, s
}

func (w *world) waitIdle() {
	w.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		w.orch.mu.Lock()
		busy := false
		for _, j := range w.orch.jobs {
			busy = busy || !j.isFinished()
		}
		w.orch.mu.Unlock()
		if !busy {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.t.Fatal("a job did not finish")
}

func (w *world) op(name string) v1alpha1.NodeOperationStatus {
	for _, op := range w.status.Operations {
		if op.Name == name {
			return op
		}
	}
	w.t.Fatalf("no status of %s in %+v", name, w.status.Operations)
	return v1alpha1.NodeOperationStatus{}
}

func expectCalls(t *testing.T, got []string, want ...string) {
	t.Helper()
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("runs: got %v, want %v", got, want)
	}
}

// Configure runs once in every ready pod the Service owns, its attributes flow into the
// node's attributes, a resync runs nothing and changes nothing, a new pod gets it alone.
func TestLifecycleRunsOncePerPod(t *testing.T) {
	w := newWorld(t, map[string]string{"Artifacts/configure.js": "calaf.setAttribute('registration', 'ok');"},
		lifecycleOp("configure", "configure", map[string]any{"dnn": "internet"}))
	w.addPod("smf-a", "rs-uid")
	w.addPod("smf-b", "rs-uid")
	w.addPod("intruder", "")      // the Service's labels, but no owner
	w.addPod("other-rs", "other") // owned by another ReplicaSet

	configured, err, _ := w.run("rev1")
	if configured || err != nil {
		t.Fatalf("first run: configured %v, %v", configured, err)
	}
	if op := w.op("Standard.configure"); op.Phase != v1alpha1.OperationRunning || op.Attempts != 1 || !strings.Contains(w.status.Message, "running Standard.configure in 2 pods") {
		t.Fatalf("while running: %+v, %q", op, w.status.Message)
	}
	expectCalls(t, w.exec.take(), "Standard.configure@smf-a", "Standard.configure@smf-b")
	if note := <-w.notes; note != "ns/core" {
		t.Errorf("notify %q", note)
	}

	configured, err, s := w.run("rev1")
	if !configured || err != nil {
		t.Fatalf("after the run: configured %v, %v", configured, err)
	}
	op := w.op("Standard.configure")
	if op.Phase != v1alpha1.OperationSucceeded || strings.Join(op.Pods, ",") != "smf-a,smf-b" || op.Failures != 0 {
		t.Fatalf("after the run: %+v", op)
	}
	if got := string(w.status.Attributes["registration"].Raw); got != `"ok in smf-b"` {
		t.Errorf("node attribute registration = %s", got)
	}
	if s.Attributes["smf"]["registration"] != "ok in smf-b" || s.Attributes["smf"]["ready_replicas"] != int64(1) {
		t.Errorf("scope attributes = %v", s.Attributes["smf"])
	}
	req := w.exec.reqs[0]
	if req.Kind != protocol.KindJavaScript || req.Source != "calaf.setAttribute('registration', 'ok');" || req.Inputs["dnn"] != "internet" ||
		req.Pod.Container != "main" || req.Node.Properties["replicas"] != int64(1) || req.Service.Revision != "rev1" || req.TimeoutMillis != DefaultTimeout.Milliseconds() {
		t.Errorf("request: %+v", req)
	}

	before := w.status.DeepCopy()
	for i := 0; i < 3; i++ {
		if configured, err, _ := w.run("rev1"); !configured || err != nil {
			t.Fatalf("resync: %v, %v", configured, err)
		}
	}
	expectCalls(t, w.exec.take())
	if !apiequality.Semantic.DeepEqual(before, &w.status) {
		t.Fatalf("a resync changed the status:\n%+v\n%+v", before, w.status)
	}

	w.addPod("smf-c", "rs-uid")
	if configured, _, _ := w.run("rev1"); configured {
		t.Fatal("a new pod must be configured first")
	}
	expectCalls(t, w.exec.take(), "Standard.configure@smf-c")
	if configured, _, _ := w.run("rev1"); !configured || strings.Join(w.op("Standard.configure").Pods, ",") != "smf-a,smf-b,smf-c" {
		t.Fatalf("after scale-out: %+v", w.op("Standard.configure"))
	}

	w.deletePod("smf-a")
	if configured, _, _ := w.run("rev1"); !configured || strings.Join(w.op("Standard.configure").Pods, ",") != "smf-b,smf-c" {
		t.Fatalf("a deleted pod is forgotten: %+v", w.op("Standard.configure"))
	}
	expectCalls(t, w.exec.take())

	// A container that restarts starts from its image again: it runs configure again.
	pod := &corev1.Pod{}
	if err := w.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "smf-c"}, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.ContainerStatuses[0].RestartCount = 1
	if err := w.client.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	w.run("rev1")
	expectCalls(t, w.exec.take(), "Standard.configure@smf-c")
	if configured, _, _ := w.run("rev1"); !configured || strings.Join(w.op("Standard.configure").Pods, ",") != "smf-b,smf-c#1" {
		t.Fatalf("after a container restart: %+v", w.op("Standard.configure"))
	}

	// A new revision of the package runs it again everywhere.
	w.run("rev2")
	expectCalls(t, w.exec.take(), "Standard.configure@smf-b", "Standard.configure@smf-c")
	if op := w.op("Standard.configure"); op.Attempts != 1 {
		t.Errorf("attempts restart with a new fingerprint: %+v", op)
	}
}

// create (on one pod), configure and start run in that order in each pod; a failing
// step stops the pod's chain.
func TestLifecycleOrder(t *testing.T) {
	w := newWorld(t, map[string]string{"Artifacts/configure.js": "x", "Artifacts/create.sh": "y", "Artifacts/start.js": "z"},
		lifecycleOp("start", "start", nil), lifecycleOp("configure", "configure", nil), lifecycleOp("create", "create", nil))
	w.addPod("smf-a", "rs-uid")
	w.addPod("smf-b", "rs-uid")
	var mu sync.Mutex
	order := map[string][]string{}
	w.exec.fn = func(target Target, req *protocol.Request) (*protocol.Result, error) {
		mu.Lock()
		order[target.Pod] = append(order[target.Pod], req.Operation)
		mu.Unlock()
		if req.Operation == "Standard.configure" && target.Pod == "smf-b" {
			return &protocol.Result{Error: "no route to nrf", ErrorKind: protocol.ErrorException, Stderr: "connect: refused"}, nil
		}
		return &protocol.Result{}, nil
	}
	w.run("rev1")
	w.run("rev1")
	if got := strings.Join(order["smf-a"], ","); got != "Standard.create,Standard.configure,Standard.start" {
		t.Errorf("smf-a ran %s", got)
	}
	if got := strings.Join(order["smf-b"], ","); got != "Standard.configure" {
		t.Errorf("smf-b ran %s (create runs in one pod only, start not after a failed configure)", got)
	}
	if op := w.op("Standard.configure"); op.Phase != v1alpha1.OperationPending || op.Failures != 1 ||
		op.Message != "Standard.configure failed in pod smf-b: no route to nrf; stderr: connect: refused" {
		t.Errorf("configure: %+v", op)
	}
	if names := []string{w.status.Operations[0].Name, w.status.Operations[1].Name, w.status.Operations[2].Name}; strings.Join(names, ",") != "Standard.create,Standard.configure,Standard.start" {
		t.Errorf("status order %v", names)
	}
}

// A failure is retried with backoff as often as the artifact's retries say, then fails
// the node for good — no more runs until the package changes; fixing it recovers.
func TestFailureRetriesThenFails(t *testing.T) {
	w := newWorld(t, map[string]string{"Artifacts/configure.js": "throw new Error('bad')"}, lifecycleOp("configure", "configure", nil))
	w.addPod("smf-a", "rs-uid")
	w.exec.fn = func(Target, *protocol.Request) (*protocol.Result, error) {
		return &protocol.Result{Error: "Error: bad (at Artifacts/configure.js:1:7)", ErrorKind: protocol.ErrorException}, nil
	}
	w.run("rev1")
	configured, err, s := w.run("rev1")
	if configured || err != nil || s.RequeueAfter != 5*time.Second || !strings.Contains(w.status.Message, "failed (attempt 1 of 2), retrying in 5s") {
		t.Fatalf("after the first failure: %v, %v, requeue %v, %q", configured, err, s.RequeueAfter, w.status.Message)
	}
	expectCalls(t, w.exec.take(), "Standard.configure@smf-a")
	w.clock = w.clock.Add(2 * time.Second)
	w.run("rev1")
	expectCalls(t, w.exec.take()) // still backing off
	w.clock = w.clock.Add(4 * time.Second)
	w.run("rev1")
	expectCalls(t, w.exec.take(), "Standard.configure@smf-a")
	_, err, _ = w.run("rev1")
	if err == nil || err.Error() != "Standard.configure failed in pod smf-a: Error: bad (at Artifacts/configure.js:1:7)" {
		t.Fatalf("after the retry: %v", err)
	}
	if op := w.op("Standard.configure"); op.Phase != v1alpha1.OperationFailed || op.Attempts != 2 || op.Failures != 2 {
		t.Fatalf("failed: %+v", op)
	}
	w.clock = w.clock.Add(time.Hour)
	for i := 0; i < 3; i++ {
		if _, err, _ := w.run("rev1"); err == nil {
			t.Fatal("the node must stay failed")
		}
	}
	expectCalls(t, w.exec.take())

	w.exec.fn = nil
	if err := os.WriteFile(filepath.Join(w.pkg.Root, "Artifacts/configure.js"), []byte("// fixed"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.run("rev2")
	if configured, err, _ := w.run("rev2"); !configured || err != nil {
		t.Fatalf("after the fix: %v, %v", configured, err)
	}
	expectCalls(t, w.exec.take(), "Standard.configure@smf-a")
}

// Inputs that read attributes not observed yet make the operation wait, without running.
func TestWaitsForInputs(t *testing.T) {
	op := lifecycleOp("configure", "configure", nil)
	op.InputsError = `nrf_url: attribute nrf.cluster_ip has no value yet`
	w := newWorld(t, map[string]string{"Artifacts/configure.js": "x"}, op)
	w.addPod("smf-a", "rs-uid")
	configured, err, s := w.run("rev1")
	if configured || err != nil || !strings.Contains(w.status.Message, "waits for its inputs: nrf_url") || s.RequeueAfter == 0 {
		t.Fatalf("%v, %v, %q, requeue %v", configured, err, w.status.Message, s.RequeueAfter)
	}
	expectCalls(t, w.exec.take())
}

// A broken plan (missing artifact, unsupported type) fails the node with a clear message;
// a node without a workload cannot run lifecycle operations.
func TestPlanErrors(t *testing.T) {
	w := newWorld(t, map[string]string{}, lifecycleOp("configure", "configure", nil))
	w.addPod("smf-a", "rs-uid")
	if _, err, _ := w.run("rev1"); err == nil || !strings.Contains(err.Error(), `artifact configure: file "Artifacts/configure.js" not found`) {
		t.Errorf("missing artifact: %v", err)
	}
	w = newWorld(t, map[string]string{"Artifacts/x.py": "print()"}, lifecycleOp("configure", "Artifacts/x.py", nil))
	if _, err, _ := w.run("rev1"); err == nil || !strings.Contains(err.Error(), "Calaf runs calaf.artifacts.JavaScript and calaf.artifacts.Shell") {
		t.Errorf("unsupported artifact: %v", err)
	}
	w = newWorld(t, map[string]string{"Artifacts/configure.js": "x"}, lifecycleOp("configure", "configure", nil))
	in := w.input("rev1")
	in.Live = map[string]*unstructured.Unstructured{}
	if _, err, _ := w.runOnce(in); err == nil || !strings.Contains(err.Error(), "no workload") {
		t.Errorf("no workload: %v", err)
	}
}

func TestFingerprint(t *testing.T) {
	base := func() *planned {
		return &planned{Name: "Standard.configure", Targets: TargetsAll, Request: protocol.Request{
			Kind: protocol.KindJavaScript, Source: "src", Artifact: protocol.ArtifactInfo{File: "a.js"},
			Files:  map[string]string{"lib.js": "1", "data.json": "2"},
			Inputs: map[string]any{"a": 1, "b": map[string]any{"x": "y", "z": []any{1, 2}}},
		}}
	}
	fp := fingerprint(base(), "rev")
	for i := 0; i < 20; i++ {
		if fingerprint(base(), "rev") != fp {
			t.Fatal("fingerprint is not stable")
		}
	}
	p := base()
	p.Request.Inputs["a"] = float64(1) // as decoded from JSON
	if fingerprint(p, "rev") != fp {
		t.Error("1 and 1.0 must fingerprint alike")
	}
	changes := map[string]func(p *planned){
		"source":     func(p *planned) { p.Request.Source = "src2" },
		"input":      func(p *planned) { p.Request.Inputs["b"].(map[string]any)["x"] = "w" },
		"dependency": func(p *planned) { p.Request.Files["lib.js"] = "3" },
		"targets":    func(p *planned) { p.Targets = TargetsOne },
		"container":  func(p *planned) { p.Container = "sidecar" },
	}
	for name, change := range changes {
		p := base()
		change(p)
		if fingerprint(p, "rev") == fp {
			t.Errorf("a change of the %s must change the fingerprint", name)
		}
	}
	if fingerprint(base(), "rev2") == fp {
		t.Error("a new revision must change the fingerprint")
	}
}

func createOperation(t *testing.T, w *world, name, operation string, inputs map[string]any) *v1alpha1.Operation {
	t.Helper()
	op := &v1alpha1.Operation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), CreationTimestamp: metav1.NewTime(w.clock)},
		Spec:       v1alpha1.OperationSpec{ServiceName: "core", Node: "smf", Operation: operation, Inputs: map[string]apiextensionsv1.JSON{}},
	}
	for k, v := range inputs {
		data, _ := json.Marshal(v)
		op.Spec.Inputs[k] = apiextensionsv1.JSON{Raw: data}
	}
	ctx := context.Background()
	if err := w.client.Create(ctx, op); err != nil {
		t.Fatal(err)
	}
	r := &OperationReconciler{Client: w.client, Notify: w.orch.notify}
	for i := 0; i < 2; i++ { // accepts it, then (Pending) asks for a reconcile of the Service
		if _, err := r.Reconcile(ctx, reconcileRequest(op)); err != nil {
			t.Fatal(err)
		}
	}
	return getOperation(t, w, name)
}

func getOperation(t *testing.T, w *world, name string) *v1alpha1.Operation {
	t.Helper()
	op := &v1alpha1.Operation{}
	if err := w.client.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, op); err != nil {
		t.Fatal(err)
	}
	return op
}

// An Operation runs once in the node's pods with its extra inputs, reports per-pod
// results, and its attributes become the node's; later reconciles do not run it again.
func TestOnDemandOperation(t *testing.T) {
	report := render.Operation{Interface: "Admin", InterfaceType: "mini5gc.interfaces.Admin", Name: "report", Implementation: "report", Inputs: map[string]any{"verbose": false, "plmn": "00101"}}
	w := newWorld(t, map[string]string{"Artifacts/report.js": "r"}, report)
	w.addPod("smf-a", "rs-uid")
	w.addPod("smf-b", "rs-uid")
	var plmns []any
	w.exec.fn = func(target Target, req *protocol.Request) (*protocol.Result, error) {
		w.exec.mu.Lock()
		plmns = append(plmns, req.Inputs["plmn"])
		w.exec.mu.Unlock()
		return &protocol.Result{Attributes: map[string]any{"last_report": fmt.Sprint(req.Inputs["verbose"])}, Logs: []string{"report from " + target.Pod}}, nil
	}
	// plmn is text in the template: 208 given for it (as a shell types it) stays text.
	op := createOperation(t, w, "report-1", "Admin.report", map[string]any{"verbose": true, "plmn": 208})
	if op.Status.Phase != v1alpha1.OperationPending || len(op.OwnerReferences) != 1 || op.OwnerReferences[0].UID != "svc-uid" || op.Labels[v1alpha1.LabelService] != "core" {
		t.Fatalf("accepted: %+v", op)
	}
	select {
	case <-w.notes:
	case <-time.After(5 * time.Second):
		t.Fatal("accepting an Operation must ask for a reconcile of its Service")
	}

	if configured, err, _ := w.run("rev1"); !configured || err != nil {
		t.Fatalf("an on-demand run leaves the node configured: %v, %v", configured, err)
	}
	expectCalls(t, w.exec.take(), "Admin.report@smf-a", "Admin.report@smf-b")
	if len(plmns) != 2 || plmns[0] != "208" || plmns[1] != "208" {
		t.Errorf("plmn reached the pods as %#v, want the text \"208\"", plmns)
	}
	op = getOperation(t, w, "report-1")
	if op.Status.Phase != v1alpha1.OperationSucceeded || len(op.Status.Results) != 2 || !op.Status.Results[0].Succeeded ||
		string(op.Status.Results[1].Attributes["last_report"].Raw) != `"true"` || op.Status.Results[1].Message != "report from smf-b" || op.Status.CompletionTime == nil {
		t.Fatalf("result: %+v", op.Status)
	}

	w.run("rev1")
	entry := w.op("Admin.report")
	if entry.Fingerprint != "operation:report-1" || entry.Phase != "Succeeded" || string(w.status.Attributes["last_report"].Raw) != `"true"` {
		t.Fatalf("recorded: %+v, attributes %v", entry, w.status.Attributes)
	}
	before := w.status.DeepCopy()
	for i := 0; i < 3; i++ {
		w.run("rev1")
	}
	expectCalls(t, w.exec.take())
	if !apiequality.Semantic.DeepEqual(before, &w.status) {
		t.Fatal("later reconciles changed the status")
	}

	bad := createOperation(t, w, "bad-1", "Admin.nope", nil)
	w.run("rev1")
	if bad = getOperation(t, w, "bad-1"); bad.Status.Phase != v1alpha1.OperationFailed || bad.Status.Message != "node smf has no operation Admin.nope (it has Admin.report)" {
		t.Fatalf("unknown operation: %+v", bad.Status)
	}
	expectCalls(t, w.exec.take())
}

// An Operation that was running when the operator stopped is failed, not run again.
func TestOnDemandInterrupted(t *testing.T) {
	report := render.Operation{Interface: "Admin", Name: "report", Implementation: "report"}
	w := newWorld(t, map[string]string{"Artifacts/report.js": "r"}, report)
	w.addPod("smf-a", "rs-uid")
	op := createOperation(t, w, "report-1", "Admin.report", nil)
	patch := client.MergeFrom(op.DeepCopy())
	op.Status.Phase = v1alpha1.OperationRunning
	if err := w.client.Status().Patch(context.Background(), op, patch); err != nil {
		t.Fatal(err)
	}
	w.run("rev1")
	expectCalls(t, w.exec.take())
	if op = getOperation(t, w, "report-1"); op.Status.Phase != v1alpha1.OperationFailed || !strings.HasPrefix(op.Status.Message, "interrupted") {
		t.Fatalf("%+v", op.Status)
	}
}

// The Operation reconciler refuses Operations for a missing Service or node.
func TestOperationRefused(t *testing.T) {
	w := newWorld(t, map[string]string{}, lifecycleOp("configure", "configure", nil))
	w.svc.Status.Nodes = []v1alpha1.NodeStatus{{Name: "nrf"}, {Name: "smf"}}
	if err := w.client.Status().Update(context.Background(), w.svc); err != nil {
		// the fake client has no status subresource for Services: update the object
		if err := w.client.Update(context.Background(), w.svc); err != nil {
			t.Fatal(err)
		}
	}
	op := &v1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}, Spec: v1alpha1.OperationSpec{ServiceName: "core", Node: "amf", Operation: "Standard.configure"}}
	if err := w.client.Create(context.Background(), op); err != nil {
		t.Fatal(err)
	}
	r := &OperationReconciler{Client: w.client}
	if _, err := r.Reconcile(context.Background(), reconcileRequest(op)); err != nil {
		t.Fatal(err)
	}
	if op = getOperation(t, w, "x"); op.Status.Phase != v1alpha1.OperationFailed || op.Status.Message != "Service core has no node template amf (it has nrf, smf)" {
		t.Fatalf("%+v", op.Status)
	}
	op = &v1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{Name: "y", Namespace: "ns"}, Spec: v1alpha1.OperationSpec{ServiceName: "nope", Node: "smf", Operation: "Standard.configure"}}
	if err := w.client.Create(context.Background(), op); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), reconcileRequest(op)); err != nil {
		t.Fatal(err)
	}
	if op = getOperation(t, w, "y"); op.Status.Phase != v1alpha1.OperationFailed || op.Status.Message != "Service nope not found in namespace ns" {
		t.Fatalf("%+v", op.Status)
	}
}

func reconcileRequest(op *v1alpha1.Operation) ctrl.Request {
	return ctrl.Request{NamespacedName: client.ObjectKeyFromObject(op)}
}

// Reconciles while a run is in progress start nothing and keep it Running.
func TestRunWhileRunning(t *testing.T) {
	w := newWorld(t, map[string]string{"Artifacts/configure.js": "x"}, lifecycleOp("configure", "configure", nil))
	w.addPod("smf-a", "rs-uid")
	release := make(chan struct{})
	w.exec.fn = func(Target, *protocol.Request) (*protocol.Result, error) {
		<-release
		return &protocol.Result{}, nil
	}
	for i := 0; i < 3; i++ {
		configured, err, _ := w.runOnce(w.input("rev1"))
		if configured || err != nil || w.op("Standard.configure").Phase != v1alpha1.OperationRunning || w.status.Message != "running Standard.configure in pod smf-a" {
			t.Fatalf("run %d while running: %v, %v, %+v", i, configured, err, w.status)
		}
	}
	close(release)
	w.waitIdle()
	expectCalls(t, w.exec.take(), "Standard.configure@smf-a")
	if configured, err, _ := w.run("rev1"); !configured || err != nil || w.op("Standard.configure").Attempts != 1 {
		t.Fatalf("after: %v, %v, %+v", configured, err, w.op("Standard.configure"))
	}
}

// A reconcile that reads a Service from a cache that does not show the last status yet
// runs nothing again: the orchestrator's own record wins.
func TestStaleStatusRunsNothingAgain(t *testing.T) {
	w := newWorld(t, map[string]string{"Artifacts/configure.js": "x"}, lifecycleOp("configure", "configure", nil))
	w.addPod("smf-a", "rs-uid")
	stale := w.status.DeepCopy() // before anything ran
	w.run("rev1")
	running := w.status.DeepCopy()
	if configured, _, _ := w.run("rev1"); !configured {
		t.Fatal("not configured")
	}
	expectCalls(t, w.exec.take(), "Standard.configure@smf-a")
	for _, old := range []*v1alpha1.NodeStatus{stale, running} {
		w.status = *old.DeepCopy()
		if configured, err, _ := w.run("rev1"); !configured || err != nil {
			t.Fatalf("with a stale status: %v, %v", configured, err)
		}
		expectCalls(t, w.exec.take())
		if op := w.op("Standard.configure"); op.Phase != v1alpha1.OperationSucceeded || len(op.Pods) != 1 {
			t.Fatalf("restored: %+v", op)
		}
	}
}

// secretRedactor hides one secret value.
type secretRedactor string

func (s secretRedactor) String(text string) string {
	return strings.ReplaceAll(text, string(s), "*****")
}
func (s secretRedactor) Value(v any) any {
	if text, ok := v.(string); ok {
		return s.String(text)
	}
	return v
}

// What an operation logs reaches Events and status redacted, like everything else from a
// run (a package may log the secret inputs it was given).
func TestRunsAreRedacted(t *testing.T) {
	w := newWorld(t, map[string]string{"Artifacts/configure.js": "x"}, lifecycleOp("configure", "configure", nil))
	w.addPod("smf-a", "rs-uid")
	events := &eventLog{}
	w.orch.recorder = events
	w.exec.fn = func(Target, *protocol.Request) (*protocol.Result, error) {
		return &protocol.Result{Logs: []string{"got hunter2-secret"}, Attributes: map[string]any{"seen": "hunter2-secret"}}, nil
	}
	for range 2 {
		in := w.input("rev1")
		in.Redact = secretRedactor("hunter2-secret")
		w.runOnce(in)
		w.waitIdle()
	}
	data, _ := json.Marshal(w.status)
	if strings.Contains(string(data), "hunter2-secret") || !strings.Contains(string(data), "*****") {
		t.Errorf("status: %s", data)
	}
	if len(events.events) == 0 {
		t.Fatal("no event")
	}
	for _, e := range events.events {
		if strings.Contains(e, "hunter2-secret") {
			t.Errorf("event not redacted: %s", e)
		}
	}
}

// What comes back from a pod is redacted before any message is cut, split or joined from
// it: a PEM key in a long error, at the cut of the stderr tail, and logged line by line
// shows no part of itself in status or Events.
func TestRunsAreRedactedBeforeTheyAreCut(t *testing.T) {
	lines := []string{
		"MIIEowIBAAKCAQEAvN1s0mEwz3Xk9c2YhUq8bq7m1WkT0xRr0a4Z6Jx3FtY2uQ8p",
		"w0rZk7jQe5Lb1aVn3S9cUoPq2XyHd4GfMi6Ts8Ke0Rz1NwLvBu7CjAhYm5Dg2x3E",
		"Qk9HtF6aZl4Xs2Wd8Vr1Yp0Nc3Mb5Jg7Ue9Ti2Ro4Ew6Qy8Az0Sx1Dc3Fv5Gb",
	}
	pem := "-----BEGIN PRIVATE KEY-----\n" + strings.Join(lines, "\n") + "\n-----END PRIVATE KEY-----\n"
	secrets := redact.New()
	secrets.Add(pem)
	w := newWorld(t, map[string]string{"Artifacts/configure.js": "x"}, lifecycleOp("configure", "configure", nil))
	w.addPod("smf-a", "rs-uid")
	events := &eventLog{}
	w.orch.recorder = events
	w.exec.fn = func(Target, *protocol.Request) (*protocol.Result, error) {
		return &protocol.Result{
			Logs:   append([]string{"key:"}, strings.Split(pem, "\n")...),
			Error:  "cannot load " + strings.Repeat("x", 900) + pem,
			Stderr: protocol.Tail(strings.Repeat("y", 500)+pem, 100),
		}, nil
	}
	in := w.input("rev1")
	in.Redact = secrets
	w.runOnce(in)
	w.waitIdle()
	w.runOnce(in)
	data, _ := json.Marshal(w.status)
	shown := append([]string{string(data)}, events.events...)
	for _, text := range shown {
		for _, line := range lines {
			for i := 0; i+8 <= len(line); i++ {
				if strings.Contains(text, line[i:i+8]) {
					t.Fatalf("%q of the key shows in %s", line[i:i+8], text)
				}
			}
		}
	}
	if !strings.Contains(string(data), "*****") {
		t.Errorf("status says nothing of the failure: %s", data)
	}
}
