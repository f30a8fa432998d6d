//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/test/benchreport"
	"calaf.io/calaf/test/e2e/framework"
)

var nfvReport = flag.String("nfv-report", "", "write the \"NFV interface\" section of this Markdown file (make bench: docs/benchmarks.md)")

const nfvSection = "## NFV interface"

// nfvRounds of the instantiation, interleaved; nfvListInstances the instances listed.
const (
	nfvRounds        = 5
	nfvListInstances = 1000
	nfvListRequests  = 20
)

// TestNFVBench measures the NFV interface on the one-node cluster against a same-run
// baseline: an instantiation through REST (POST vnf_instances, POST instantiate, the
// occurrence polled until COMPLETED, as an NFVO does) against creating the same Service
// directly (kubectl's way: spec.instantiate, waited for Ready), in interleaved rounds; and
// GET /vnf_instances with 1,000 instances (a page of 100 and the whole list, latency per
// request and the server's memory). It writes the "NFV interface" section of -nfv-report.
func TestNFVBench(t *testing.T) {
	if *nfvReport == "" {
		t.Skip("writes docs/benchmarks.md when run by make bench (-nfv-report)")
	}
	g := NewWithT(t)
	c := framework.Connect(t)
	ns := c.Namespace(t, "e2e-bench-nfv")
	api := startNFVAPI(t, "--rate=1000", "--page-size=100")
	nfvo := newNFVO(t, ns)
	pkg := api.onboard(t, nfvo, packageZip(t, "v1", nil))
	request := map[string]any{}
	data, err := os.ReadFile(framework.RepoRoot() + "/test/etsi/nfv-cnf.instantiate.json")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(json.Unmarshal(data, &request)).To(Succeed())

	rest := sample{name: "through REST: create, instantiate, poll the occurrence until COMPLETED"}
	direct := sample{name: "the same Service created directly (spec.instantiate), until Ready (the baseline)"}
	for round := range nfvRounds {
		first, second := &rest, &direct
		if round%2 == 1 {
			first, second = second, first
		}
		for _, s := range []*sample{first, second} {
			name := fmt.Sprintf("r%d-%d", round, len(s.values))
			if s == &rest {
				s.values = append(s.values, instantiateREST(t, api, nfvo, pkg, request))
			} else {
				s.values = append(s.values, instantiateDirect(t, ns, name, pkg, request))
			}
			clearNamespace(t, ns)
		}
	}

	created := time.Now()
	for i := range nfvListInstances {
		svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("idle-%04d", i)},
			Spec: v1alpha1.ServiceSpec{Source: v1alpha1.Source{VnfPackage: &v1alpha1.VnfPackageSource{VnfdID: pkg.vnfdID}},
				InstantiationState: v1alpha1.NotInstantiated}}
		g.Expect(suite.client.Create(context.Background(), svc)).To(Succeed())
	}
	t.Logf("%d instances made in %v", nfvListInstances, time.Since(created))
	page := sample{name: fmt.Sprintf("GET /vnf_instances, first page (100 of %d)", nfvListInstances)}
	all := sample{name: fmt.Sprintf("GET /vnf_instances, every page (%d instances, %d requests)", nfvListInstances, nfvListInstances/100)}
	for range nfvListRequests {
		start := time.Now()
		n := listPages(t, api, nfvo, 1)
		page.values = append(page.values, time.Since(start))
		g.Expect(n).To(Equal(100))
		start = time.Now()
		n = listPages(t, api, nfvo, 0)
		all.values = append(all.values, time.Since(start))
		g.Expect(n).To(Equal(nfvListInstances))
	}
	rss := processRSS(t, api)

	section := nfvMarkdown(rest, direct, page, all, rss)
	g.Expect(benchreport.WriteBenchmark(*nfvReport, section)).To(Succeed())
	t.Log("\n" + section)
}

// instantiateREST instantiates a new instance the way an NFVO does, and returns the time
// until the occurrence said COMPLETED.
func instantiateREST(t *testing.T, api *nfvAPI, who nfvo, pkg onboarded, request map[string]any) time.Duration {
	t.Helper()
	start := time.Now()
	var inst map[string]any
	restCall(t, api, who, "POST", "/vnflcm/v2/vnf_instances", map[string]any{"vnfdId": pkg.vnfdID}, http.StatusCreated, &inst)
	loc := restCall(t, api, who, "POST", "/vnflcm/v2/vnf_instances/"+inst["id"].(string)+"/instantiate", request, http.StatusAccepted, nil)
	occ := strings.TrimPrefix(loc, api.url)
	for {
		var o map[string]any
		restCall(t, api, who, "GET", occ, nil, http.StatusOK, &o)
		switch o["operationState"] {
		case "COMPLETED":
			return time.Since(start)
		case "FAILED_TEMP", "FAILED", "ROLLED_BACK":
			t.Fatalf("the instantiation failed: %v", o["error"])
		}
		time.Sleep(20 * time.Millisecond) // polling, as an NFVO does
	}
}

// instantiateDirect creates the same Service with spec.instantiate and returns the time
// until it reported Ready.
func instantiateDirect(t *testing.T, ns, name string, pkg onboarded, request map[string]any) time.Duration {
	t.Helper()
	data, _ := json.Marshal(request)
	var spec v1alpha1.InstantiateRequest
	NewWithT(t).Expect(json.Unmarshal(data, &spec)).To(Succeed())
	start := time.Now()
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ServiceSpec{Source: v1alpha1.Source{VnfPackage: &v1alpha1.VnfPackageSource{VnfdID: pkg.vnfdID}}, Instantiate: &spec}}
	NewWithT(t).Expect(suite.client.Create(context.Background(), svc)).To(Succeed())
	for {
		got := &v1alpha1.Service{}
		if err := suite.client.Get(context.Background(), client.ObjectKeyFromObject(svc), got); err == nil {
			if ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); ready != nil && ready.Status == metav1.ConditionTrue && got.Status.ObservedGeneration == got.Generation {
				return time.Since(start)
			}
		}
		time.Sleep(20 * time.Millisecond) // polling, as kubectl wait does
	}
}

// clearNamespace deletes the namespace's Services and waits until they are gone.
func clearNamespace(t *testing.T, ns string) {
	t.Helper()
	NewWithT(t).Expect(suite.client.DeleteAllOf(context.Background(), &v1alpha1.Service{}, client.InNamespace(ns))).To(Succeed())
	NewWithT(t).Eventually(func() int {
		list := &v1alpha1.ServiceList{}
		_ = suite.client.List(context.Background(), list, client.InNamespace(ns))
		return len(list.Items)
	}, 3*time.Minute, 100*time.Millisecond).Should(BeZero())
}

// restCall makes one request of the NFV API as an NFVO, expects a status, decodes the
// body into v, and returns the Location header.
func restCall(t *testing.T, api *nfvAPI, who nfvo, method, path string, body any, status int, v any) string {
	t.Helper()
	var reader io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		reader = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, api.url+path, reader)
	req.Header.Set("Authorization", "Bearer "+who.token)
	req.Header.Set("Version", "2.0.0")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, status, data)
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatal(err)
		}
	}
	return resp.Header.Get("Location")
}

// listPages lists instances, following the Link header for at most pages pages (0: all),
// and returns how many it got.
func listPages(t *testing.T, api *nfvAPI, who nfvo, pages int) int {
	t.Helper()
	path, n := "/vnflcm/v2/vnf_instances", 0
	for i := 0; path != "" && (pages == 0 || i < pages); i++ {
		req, _ := http.NewRequest("GET", api.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+who.token)
		req.Header.Set("Version", "2.0.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var items []json.RawMessage
		err = json.NewDecoder(resp.Body).Decode(&items)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d, %v", path, resp.StatusCode, err)
		}
		n += len(items)
		path = ""
		if link := resp.Header.Get("Link"); link != "" {
			path = strings.TrimPrefix(link[strings.Index(link, "<")+1:strings.Index(link, ">")], api.url)
		}
	}
	return n
}

// processRSS is the peak resident memory of calaf nfv-api (VmHWM), in MiB.
func processRSS(t *testing.T, api *nfvAPI) float64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", api.pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

func nfvMarkdown(rest, direct, page, all sample, rss float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", nfvSection)
	fmt.Fprintf(&b, "Written by `make bench` (test/e2e, TestNFVBench) on %s: the test ground's one-node cluster, %s/%s, %d CPUs, %s; load average at the end %s.\n\n",
		time.Now().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), benchreport.LoadAverage())
	fmt.Fprintf(&b, "What an NFVO waits for, through `calaf nfv-api` (a process of its own, authenticating each request by TokenReview and acting as the caller) against the same work done directly on the Kubernetes API. The web CNF of test/etsi/nfv-cnf (one Deployment pod), %d interleaved rounds; median, min and max.\n\n", nfvRounds)
	b.WriteString("| measure | median | min | max | × baseline (median) |\n|---|---:|---:|---:|---:|\n")
	for _, s := range []sample{direct, rest} {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f× |\n", s.name, ms(s.median()), ms(s.min()), ms(s.max()), float64(s.median())/float64(direct.median()))
	}
	fmt.Fprintf(&b, "\nListing, %d requests each, with %d instances in the namespace:\n\n| request | median | min | max |\n|---|---:|---:|---:|\n", nfvListRequests, nfvListInstances)
	for _, s := range []sample{page, all} {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", s.name, ms(s.median()), ms(s.min()), ms(s.max()))
	}
	fmt.Fprintf(&b, "\nPeak memory of the `calaf nfv-api` process over the run: %.0f MiB.\n", rss)
	return b.String()
}
