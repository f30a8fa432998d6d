package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
)

// shardKey is the label that assigns a Service to a shard in these tests (Flux's idiom).
const shardKey = "sharding.calaf.io/key"

// startShard starts an operator that handles the Services selector selects, with its own
// metrics registry, and stops it when the test ends.
func startShard(t *testing.T, selector string) {
	t.Helper()
	parsed, err := labels.Parse(selector)
	if err != nil {
		t.Fatal(err)
	}
	opts := env.opts
	opts.ServiceSelector, opts.Registry = parsed, prometheus.NewRegistry()
	process, err := operator.NewProcess(env.config, opts, zap.New(zap.Level(zapLevel())))
	if err != nil {
		t.Fatal(err)
	}
	mgr, _, err := process.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(env.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("shard %s: %v", selector, err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// Shards split a fleet by a label of the Services (--watch-label-selector): each handles
// its own Services and their occurrences, and leaves the others' alone — it neither
// reconciles another shard's Service nor takes its Operations for ones of a Service gone.
func TestShardsHandleOnlyTheirServices(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env.stop() // the suite's operator handles every Service: the shards stand in for it
	t.Cleanup(func() { g.Expect(startOperator(false)).To(Succeed()) })
	startShard(t, "!"+shardKey)

	ns, nsA := newNamespace(t), newNamespace(t) // (the package's Service "front" has a fixed name)
	b := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b", Labels: map[string]string{shardKey: "b"}},
		Spec: v1alpha1.ServiceSpec{Source: upload(t, ns, "b", layeredPackage())}}
	g.Expect(env.client.Create(ctx, b)).To(Succeed())
	modify := &v1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b-modify"},
		Spec: v1alpha1.OperationSpec{ServiceName: "b", Type: v1alpha1.OperationModify,
			Modify: &v1alpha1.ModifyRequest{Inputs: map[string]apiextensionsv1.JSON{"greeting": {Raw: []byte(`"bonjour"`)}}}}}
	g.Expect(env.client.Create(ctx, modify)).To(Succeed())
	a := createService(t, nsA, "a", upload(t, nsA, "a", layeredPackage()), nil)
	updateService(t, a, func(svc *v1alpha1.Service) { svc.Spec.Interval = &metav1.Duration{Duration: time.Second} })
	waitReady(t, a)
	// A few resyncs of its own Service later, the main shard has still not touched b.
	// (Only the main shard runs: the suite's count of Service reconciles is its own.)
	resyncs := reconcileCount()
	g.Eventually(reconcileCount, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", resyncs+3))
	g.Expect(getService(g, client.ObjectKeyFromObject(b)).Status.Conditions).To(BeEmpty(), "the main shard reconciled shard b's Service")
	g.Expect(getOperation(g, client.ObjectKeyFromObject(modify)).Status.OperationState).To(BeEmpty(), "the main shard took shard b's occurrence")

	startShard(t, shardKey+"=b")
	waitReady(t, client.ObjectKeyFromObject(b))
	g.Eventually(func() v1alpha1.OperationState {
		return getOperation(g, client.ObjectKeyFromObject(modify)).Status.OperationState
	}, time.Minute, 200*time.Millisecond).Should(Equal(v1alpha1.StateCompleted))
	g.Expect(getConfigMap(g, ns, "b-base").Data).To(HaveKeyWithValue("greeting", "bonjour"))
}

func getOperation(g Gomega, key client.ObjectKey) *v1alpha1.Operation {
	op := &v1alpha1.Operation{}
	g.Expect(env.client.Get(context.Background(), key, op)).To(Succeed())
	return op
}
