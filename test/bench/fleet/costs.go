package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/test/benchreport"
)

// requestCost is what one kind of request cost the API server and etcd, per request.
type requestCost struct {
	name    string
	perCall time.Duration
	// baseline: one of the requests the baselines send (a server-side apply).
	baseline bool
}

// runCosts measures, in -rounds rounds, the API server's and etcd's CPU per request of
// each request a Service of the bench package costs: those the baselines send too (one
// server-side apply per object) and those it costs besides (its create, the operator's
// status patch and event), n of each, sent 4 at a time with no operator running.
func (b *bench) runCosts(ctx context.Context, report string) error {
	status, err := b.readyStatus(ctx)
	if err != nil {
		return err
	}
	config := rest.CopyConfig(b.config)
	config.QPS, config.Burst = 2000, 4000 // the client's limiter is not measured
	c, err := client.New(config, client.Options{Scheme: operator.NewScheme()})
	if err != nil {
		return err
	}
	var rounds [][]requestCost
	for i := 0; i < b.rounds; i++ {
		costs, err := b.costRound(ctx, c, status, fmt.Sprintf("fleet-costs-r%d-%s", i, runID))
		if err != nil {
			return err
		}
		for _, cost := range costs {
			fmt.Printf("round %d: %-60s %6.2f ms\n", i+1, cost.name, float64(cost.perCall.Microseconds())/1000)
		}
		rounds = append(rounds, costs)
	}
	if report == "" {
		return nil
	}
	return writeCostsReport(report, b.settings, medianCosts(rounds))
}

// readyStatus runs the operator on one Service of the bench package until it is Ready
// and returns its status as JSON, the Service's name and namespace in it written as
// serviceName(0) and statusNamespace.
func (b *bench) readyStatus(ctx context.Context) ([]byte, error) {
	namespace := "fleet-costs-status-" + runID
	defer func() { _ = clearNamespace(ctx, b.c, namespace) }()
	if _, err := b.measureOperator(ctx, fleet{n: 1, namespace: namespace, selectors: []string{""}}); err != nil {
		return nil, err
	}
	svc := &v1alpha1.Service{}
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: serviceName(0)}, svc); err != nil {
		return nil, err
	}
	data, err := json.Marshal(map[string]any{"status": svc.Status})
	return []byte(strings.ReplaceAll(string(data), namespace, statusNamespace)), err
}

// statusNamespace stands for the namespace in readyStatus's status.
const statusNamespace = "STATUS-NAMESPACE"

// costRound measures each request once, n times, in namespace, then clears it.
func (b *bench) costRound(ctx context.Context, c client.Client, status []byte, namespace string) ([]requestCost, error) {
	if err := createNamespace(ctx, c, namespace); err != nil {
		return nil, err
	}
	sources, err := b.upload(ctx, namespace)
	if err != nil {
		return nil, err
	}
	objects, err := b.objects(ctx, b.n, namespace)
	if err != nil {
		return nil, err
	}
	idle := idleCPU()
	steps := []struct {
		name     string
		baseline bool
		send     func(i int) error
	}{
		{"Service create (as `calaf deploy` creates it)", false, func(i int) error {
			return c.Create(ctx, newService(fleet{namespace: namespace}, i, sources[0]))
		}},
		{"Service status patch (the operator's, Ready, metadata answered)", false, func(i int) error {
			return patchStatus(ctx, c, namespace, i, status)
		}},
		{"Event (the operator's, what was applied)", false, func(i int) error { return postEvent(ctx, c, namespace, i) }},
	}
	for _, kind := range []string{"ServiceAccount", "ConfigMap", "Service", "Deployment"} {
		ofKind := slices.DeleteFunc(slices.Clone(objects), func(obj *unstructured.Unstructured) bool { return obj.GetKind() != kind })
		steps = append(steps, struct {
			name     string
			baseline bool
			send     func(i int) error
		}{"server-side apply of a " + kind + " (the baselines')", true, func(i int) error {
			return c.Patch(ctx, ofKind[i], client.Apply, client.ForceOwnership, client.FieldOwner("baseline"))
		}})
	}
	var costs []requestCost
	for _, step := range steps {
		cpu, err := measureCalls(b.n, b.workers, idle, step.send)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", step.name, err)
		}
		costs = append(costs, requestCost{name: step.name, perCall: cpu / time.Duration(b.n), baseline: step.baseline})
	}
	return costs, clearNamespace(ctx, b.c, namespace)
}

// idleCPU is the API server's and etcd's CPU per second with nothing sent, over 5 s.
func idleCPU() float64 {
	before := sampleCPU()
	time.Sleep(5 * time.Second)
	used := sampleCPU().since(before)
	return (used["API server"] + used["etcd"]).Seconds() / 5
}

// measureCalls sends n calls, workers at once, and returns the CPU the API server and
// etcd used meanwhile (until a second after the last answer: the watch events it sends),
// less their idle use.
func measureCalls(n, workers int, idle float64, send func(i int) error) (time.Duration, error) {
	before, start := sampleCPU(), time.Now()
	group := errgroup.Group{}
	group.SetLimit(workers)
	for i := 0; i < n; i++ {
		group.Go(func() error { return send(i) })
	}
	if err := group.Wait(); err != nil {
		return 0, err
	}
	time.Sleep(time.Second)
	used := sampleCPU().since(before)
	seconds := (used["API server"] + used["etcd"]).Seconds() - idle*time.Since(start).Seconds()
	return time.Duration(max(seconds, 0) * float64(time.Second)), nil
}

// patchStatus sends Service i the status the operator's patch brings it when Ready, as
// the operator sends it (a merge patch, its metadata answered).
func patchStatus(ctx context.Context, c client.Client, namespace string, i int, status []byte) error {
	body := strings.ReplaceAll(strings.ReplaceAll(string(status), statusNamespace, namespace), serviceName(0), serviceName(i))
	meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: serviceName(i)}}
	meta.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Service"))
	return c.Status().Patch(ctx, meta, client.RawPatch(types.MergePatchType, []byte(body)))
}

// postEvent records the operator's event for Service i: what its reconcile applied.
func postEvent(ctx context.Context, c client.Client, namespace string, i int) error {
	name := serviceName(i)
	event := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("%s.%x", name, time.Now().UnixNano())},
		EventTime:  metav1.NowMicro(), ReportingController: "calaf-operator", ReportingInstance: "calaf-operator-bench",
		Action: "Reconcile", Reason: "Succeeded", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Service", Namespace: namespace, Name: name},
		Note:      fmt.Sprintf("3 nodes ready\nServiceAccount/%[1]s-account created\nConfigMap/%[1]s-config created\nService/%[1]s-app created\nDeployment/%[1]s-app created", name),
	}
	return c.Create(ctx, event)
}

// medianCosts returns the median of each request's cost over the rounds.
func medianCosts(rounds [][]requestCost) []requestCost {
	out := slices.Clone(rounds[0])
	for j := range out {
		var costs []time.Duration
		for _, round := range rounds {
			costs = append(costs, round[j].perCall)
		}
		slices.Sort(costs)
		out[j].perCall = (costs[(len(costs)-1)/2] + costs[len(costs)/2]) / 2
	}
	return out
}

// writeCostsReport replaces the request-costs section of benchmarks.md.
func writeCostsReport(path string, s settings, costs []requestCost) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s what a Service's requests cost the API server\n\n", sectionTitle)
	fmt.Fprintf(&b, "Written by `make bench-fleet-costs` (test/bench/fleet `-request-costs`) %s Medians of %d round(s).\n\n", machine(), s.rounds)
	fmt.Fprintf(&b, "Each request a Service of the fleet package costs, sent %d times, %d at a time, with no operator running: the CPU kube-apiserver and etcd used from the first request until a second after the last answer (the watch events they send, to kube-controller-manager among others), less what they use idle, divided by %d. "+
		"The status patch is the one the operator sends when the Service is Ready (its status read from a Service the operator made Ready first), a merge patch answered with the Service's metadata alone; the event is the one it records.\n\n", s.n, s.workers, s.n)
	b.WriteString("| request | API server + etcd CPU per request |\n|---|---:|\n")
	var applies, besides time.Duration
	for _, cost := range costs {
		fmt.Fprintf(&b, "| %s | %.2f ms |\n", cost.name, float64(cost.perCall.Microseconds())/1000)
		if cost.baseline {
			applies += cost.perCall
		} else {
			besides += cost.perCall
		}
	}
	fmt.Fprintf(&b, "\nPer Service: the baselines' four applies %.2f ms; a Calaf Service's own create, status patch and event %.2f ms more (%.2f× the applies), before the watch events the operator itself receives and before any CPU of the operator's own. "+
		"The create is the user's (or the GitOps tool's); the status patch and the event are the operator's, one each on the way to Ready: the status patch costs what the Service's size makes it cost (its status and the managed fields the API server keeps of it).\n",
		float64(applies.Microseconds())/1000, float64(besides.Microseconds())/1000, besides.Seconds()/applies.Seconds())
	return benchreport.WriteBenchmark(path, b.String())
}
