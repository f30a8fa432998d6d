package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"calaf.io/calaf/internal/kubeconfig"
	"calaf.io/calaf/tosca"
)

// The package of -multicluster renders, for each Service, objects of its own that are
// healthy as the API server stores them: nothing waits for a node or a controller.
func TestNodelessPackageNeedsNoController(t *testing.T) {
	pkg, err := tosca.Open(nodelessPackageDir(), tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	objects, err := renderAll(context.Background(), pkg, 2, "ns")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	names := map[string]bool{}
	for _, obj := range objects {
		kinds[obj.GetKind()]++
		key := obj.GetKind() + "/" + obj.GetName()
		if names[key] {
			t.Errorf("two Services render %s", key)
		}
		names[key] = true
		result, err := status.Compute(obj)
		if err != nil || result.Status != status.CurrentStatus {
			t.Errorf("%s is %v (%v) as applied, not Current", key, result, err)
		}
	}
	want := map[string]int{"ConfigMap": 2, "ServiceAccount": 2, "Service": 2}
	if len(kinds) != len(want) || kinds["ConfigMap"] != 2 || kinds["ServiceAccount"] != 2 || kinds["Service"] != 2 {
		t.Errorf("kinds rendered for 2 Services: %v, want %v", kinds, want)
	}
}

// The kubeconfig of a target cluster's Secret is one the operator accepts, and through it
// a client reaches the API server behind the TLS proxy, which counts the request.
func TestTargetProxyKubeconfig(t *testing.T) {
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"ConfigMapList","apiVersion":"v1","items":[]}`)
	}))
	defer apiServer.Close()
	certificate, caData, err := selfSignedCertificate()
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := startProxyServing(&rest.Config{Host: apiServer.URL}, &certificate)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	if !strings.HasPrefix(proxy.Host(), "https://127.0.0.1:") {
		t.Fatalf("the proxy serves at %s", proxy.Host())
	}
	data := proxyKubeconfig("remote", proxy.Host(), caData)
	target, err := kubeconfig.Parse(data)
	if err != nil {
		t.Fatalf("the operator refuses the kubeconfig: %v\n%s", err, data)
	}
	if target.Server != proxy.Host() {
		t.Errorf("the kubeconfig's server is %s, want the proxy's %s", target.Server, proxy.Host())
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Get(proxy.Host() + "/api/v1/namespaces/ns/configmaps")
	if err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("through the proxy: %s", resp.Status)
	}
	if counts := proxy.Counts(false); counts["LIST configmaps"] != 1 || len(counts) != 1 {
		t.Errorf("the proxy counted %v, want one LIST configmaps", counts)
	}
}

// Services alternate between the target clusters, and every one is counted in one.
func TestServicesIn(t *testing.T) {
	for _, c := range []struct{ n, clusters, k, want int }{
		{200, 2, 0, 100}, {200, 2, 1, 100}, {7, 2, 0, 4}, {7, 2, 1, 3}, {7, 3, 2, 2},
	} {
		if got := servicesIn(c.n, c.clusters, c.k); got != c.want {
			t.Errorf("servicesIn(%d, %d, %d) = %d, want %d", c.n, c.clusters, c.k, got, c.want)
		}
	}
}

// The section says the medians of each run, B ÷ A as the median of each round's ratio
// (not the ratio of the medians), the requests per Service of each cluster, and no
// target verdict (none is set).
func TestMulticlusterReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	run := func(name string, seconds int, rss int64, local map[string]int64, targets map[string]map[string]int64) result {
		return result{name: name, applied: time.Duration(seconds) * time.Second, duration: time.Duration(seconds+1) * time.Second,
			peakRSS: rss << 20, processRSS: []int64{rss << 20}, requests: local, targetRequests: targets}
	}
	local := map[string]int64{"APPLY configmaps": 20, "PATCH services/status": 10, "POST events": 10}
	remote := func(applies int64) map[string]map[string]int64 {
		return map[string]map[string]int64{
			"remote":  {"APPLY configmaps": applies, "LIST configmaps": 1},
			"remote2": {"APPLY configmaps": applies},
		}
	}
	status := map[string]int64{"PATCH services/status": 10, "POST events": 10, "GET secrets": 10}
	// A's times 10, 20, 40 s; B's 15, 22, 100 s: ratios 1.5, 1.1, 2.5, their median 1.5;
	// the ratio of the medians (22 ÷ 20) would be 1.1.
	rounds := [][]result{
		{run("A", 10, 100, local, nil), run("B", 15, 130, status, remote(15))},
		{run("A", 20, 110, local, nil), run("B", 22, 140, status, remote(15))},
		{run("A", 40, 120, local, nil), run("B", 100, 150, status, remote(15))},
	}
	s := settings{n: 10, workers: 4, rounds: 3, operatorQPS: 200, multicluster: true, seed: 7}
	if err := writeMulticlusterReport(path, s, rounds); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	text := string(data)
	for _, want := range []string{
		"## Operator at scale: 10 Services in 2 target clusters\n",
		"| A | 20.0 s | 1.00× | 21.0 s | 110 MiB |",
		"| B | 22.0 s | 1.10× | 23.0 s | 140 MiB |",
		"Services report Applied 1.50×, the median of the rounds' 1.50×, 1.10×, 2.50×",
		"Peak RSS of the operator 140 MiB in B against 110 MiB in A.",
		"| A | operator's | 10 | 0.00 | 0.00 | 0.00 | 2.00 | 1.00 | 0.00 | 1.00 | 0.00 | 0.00 | 0.00 | 0.00 | 4.00 | 4.00 |",
		"| B | operator's | 10 | 1.00 | 0.00 | 0.00 | 0.00 | 1.00 | 0.00 | 1.00 | 0.00 | 0.00 | 0.00 | 0.00 | 2.00 | 3.00 |",
		"| B | remote | 5 | 0.00 | 0.00 | 0.20 | 3.00 | 0.00 | 0.00 | 0.00 | 0.00 | 0.00 | 0.00 | 0.00 | 3.00 | 3.20 |",
		"| B | remote2 | 5 | 0.00 | 0.00 | 0.00 | 3.00 | 0.00 | 0.00 | 0.00 | 0.00 | 0.00 | 0.00 | 0.00 | 3.00 | 3.00 |",
		"All requests per Service, every cluster together: A 4.00, B 6.10.",
		"(seed 7: `-seed 7` repeats the orders)",
	} {
		if strings.Count(text, want) != 1 {
			t.Errorf("%q is there %d times in:\n%s", want, strings.Count(text, want), text)
		}
	}
	if strings.Contains(text, "**met**") || strings.Contains(text, "**missed**") || strings.Contains(text, "## Targets at a glance") {
		t.Errorf("the section judges a target no one set:\n%s", text)
	}
}
