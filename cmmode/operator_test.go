package cmmode_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/cmmode"
	"calaf.io/calaf/internal/operator"
)

const greetingTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  inputs:
    greeting:
      type: string
      default: hello
  node_templates:
    greeting:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          greeting: { get_input: greeting }
`

// startOperator runs an operator in ConfigMap mode for namespace, in this process; it
// counts the requests it sends for Calaf's custom resources (calaf.io), which must be
// none: it is stopped at the test's end.
func startOperator(t *testing.T, namespace string, mode operator.ResourceMode) *atomic.Int64 {
	t.Helper()
	var calafRequests atomic.Int64
	config := rest.CopyConfig(env.config)
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if strings.Contains(req.URL.Path, "/apis/calaf.io") {
				calafRequests.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	opts := operator.DefaultOptions()
	opts.MetricsAddress, opts.HealthAddress = "0", "0"
	opts.Namespace, opts.Resources, opts.InProcess = namespace, mode, true
	opts.PackageCacheDir = filepath.Join(t.TempDir(), "packages")
	opts.ProgressInterval, opts.OutboundDiscover = time.Second, false
	opts.Registry = prometheus.NewRegistry() // one per operator of the test binary
	mgr, _, err := operator.NewManager(config, opts, zap.New(zap.UseDevMode(true)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})
	return &calafRequests
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// service reads the Service a ConfigMap stands for, as the reconcilers see it.
func service(g Gomega, namespace, name string) *v1alpha1.Service {
	svc := &v1alpha1.Service{}
	g.Expect(env.cm.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, svc)).To(Succeed())
	return svc
}

// readyAt waits until the Service is Ready at generation.
func readyAt(t *testing.T, namespace, name string, generation int64) *v1alpha1.Service {
	t.Helper()
	var svc *v1alpha1.Service
	NewWithT(t).Eventually(func(g Gomega) {
		svc = service(g, namespace, name)
		g.Expect(svc.Generation).To(Equal(generation))
		g.Expect(svc.Status.ObservedGeneration).To(Equal(generation))
		g.Expect(apimeta.IsStatusConditionTrue(svc.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue(), "conditions: %+v", svc.Status.Conditions)
	}).WithTimeout(90 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return svc
}

// A Service written as a ConfigMap (spec.yaml and a dotted key) is deployed by an operator
// that never asks for a custom resource; a new input moves its generation and its object;
// an invalid spec is refused with the API server's message while the admitted one goes on;
// deleting the ConfigMap deletes what it deployed.
func TestServiceFromConfigMap(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	ns := newNamespace(t)
	calafRequests := startOperator(t, ns, operator.ResourcesConfigMaps)
	src := upload(t, ns, map[string]string{"service.yaml": greetingTemplate})
	spec, err := yaml.Marshal(v1alpha1.ServiceSpec{Source: src})
	g.Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello",
		Labels: map[string]string{cmmode.LabelKind: "Service", cmmode.LabelVersion: "v1alpha1", "team": "blue"}},
		Data: map[string]string{cmmode.KeySpec: string(spec), "spec.inputs.greeting": "bonjour"}}
	g.Expect(env.client.Create(ctx, cm)).To(Succeed())

	svc := readyAt(t, ns, "hello", 1)
	g.Expect(svc.Labels).To(Equal(map[string]string{"team": "blue"}))
	g.Expect(svc.Spec.Interval).NotTo(BeNil(), "the CRD's default interval applies")
	rendered := &corev1.ConfigMap{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello-greeting"}, rendered)).To(Succeed())
		g.Expect(rendered.Data).To(HaveKeyWithValue("greeting", "bonjour"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(service(g, ns, "hello").Finalizers).To(ContainElement(v1alpha1.ServiceFinalizer))

	// A new input: generation 2, reconciled.
	g.Expect(env.client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	cm.Data["spec.inputs.greeting"] = "salut"
	g.Expect(env.client.Update(ctx, cm)).To(Succeed())
	readyAt(t, ns, "hello", 2)
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello-greeting"}, rendered)).To(Succeed())
		g.Expect(rendered.Data).To(HaveKeyWithValue("greeting", "salut"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// An invalid spec: refused with the CR's message, the admitted one stays.
	both := v1alpha1.ServiceSpec{Source: src}
	both.Source.URL = "https://packages.example/p.csar"
	bothText, err := yaml.Marshal(both)
	g.Expect(err).NotTo(HaveOccurred())
	want := crError(t, ns, "hello", refusal{kind: "Service", spec: string(bothText)})
	g.Expect(want).To(ContainSubstring("exactly one of url"))
	g.Expect(env.client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	cm.Data["spec.source.url"] = "https://packages.example/p.csar"
	g.Expect(env.client.Update(ctx, cm)).To(Succeed())
	NewWithT(t).Eventually(func(g Gomega) {
		refused := apimeta.FindStatusCondition(service(g, ns, "hello").Status.Conditions, cmmode.ConditionSpecAccepted)
		g.Expect(refused).NotTo(BeNil())
		g.Expect(refused.Reason).To(Equal(cmmode.ReasonInvalid))
		g.Expect(refused.Message).To(Equal(want))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(companion(g, ns, "hello").Data[cmmode.KeyRefused]).To(Equal(want))
	svc = service(g, ns, "hello")
	g.Expect(svc.Generation).To(Equal(int64(2)))
	g.Expect(svc.Spec.Source.URL).To(BeEmpty())
	NewWithT(t).Eventually(func(g Gomega) {
		events := &corev1.EventList{}
		g.Expect(env.client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		var found bool
		for _, e := range events.Items {
			found = found || (e.InvolvedObject.Kind == "ConfigMap" && e.InvolvedObject.Name == "hello" && e.Reason == cmmode.ReasonInvalid && e.Message == want)
		}
		g.Expect(found).To(BeTrue(), "a Warning event Invalid on the ConfigMap")
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// Deleting the ConfigMap deletes what the Service deployed, then the ConfigMap.
	g.Expect(env.client.Delete(ctx, cm)).To(Succeed())
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello-greeting"}, &corev1.ConfigMap{}))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(env.client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}))).To(BeTrue())
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Expect(calafRequests.Load()).To(BeZero(), "requests for calaf.io custom resources")
}

// An operator with --resources=both serves a Service of each form side by side.
func TestBothAtOnce(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	ns := newNamespace(t)
	startOperator(t, ns, operator.ResourcesBoth)
	src := upload(t, ns, map[string]string{"service.yaml": greetingTemplate})
	cr := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "as-cr"}, Spec: v1alpha1.ServiceSpec{Source: src}}
	g.Expect(env.client.Create(ctx, cr)).To(Succeed())
	spec, err := yaml.Marshal(v1alpha1.ServiceSpec{Source: src})
	g.Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "as-cm",
		Labels: map[string]string{cmmode.LabelKind: "Service", cmmode.LabelVersion: "v1alpha1"}},
		Data: map[string]string{cmmode.KeySpec: string(spec)}}
	g.Expect(env.client.Create(ctx, cm)).To(Succeed())
	readyAt(t, ns, "as-cm", 1)
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.client.Get(ctx, client.ObjectKeyFromObject(cr), cr)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(cr.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
	}).WithTimeout(90 * time.Second).Should(Succeed())
	for _, name := range []string{"as-cr-greeting", "as-cm-greeting"} {
		g.Expect(env.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})).To(Succeed(), name)
	}
}
