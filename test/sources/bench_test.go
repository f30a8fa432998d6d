package sources

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
	"calaf.io/calaf/test/benchreport"
	"calaf.io/calaf/test/gitserver"
	"calaf.io/calaf/tosca"
)

var report = flag.String("report", "", "write the \"Sources\" section of this Markdown file (make bench: docs/benchmarks.md)")

const sourcesTitle = "## Sources"

// Targets of the sources benchmark.
const (
	maxFetchRatio   = 2.0             // cold fetch vs git clone --depth 1
	maxWebhookDelay = 5 * time.Second // push → applied through the webhook
)

// TestBenchSources measures, on the test ground of this package, what the issue asks:
// the cost of a cold git fetch against a plain `git clone --depth 1` of the same repository
// (interleaved rounds, best of each), the time from a push to the applied objects through
// the webhook and through polling (from the moment the push completed), each against a same-run baseline (clone + one
// server-side apply of the same ConfigMap), and how many fetches N Services on one
// repository and revision cause. It writes the "Sources" section of -report.
func TestBenchSources(t *testing.T) {
	if *report == "" {
		t.Skip("writes docs/benchmarks.md when run by make bench (-report)")
	}
	g := NewWithT(t)
	const rounds = 5
	repo, _ := newRepo(t)
	// A repository with some history and files besides the package, as real ones have.
	for i := 0; i < 20; i++ {
		files := map[string]string{fmt.Sprintf("docs/page-%d.md", i): strings.Repeat(fmt.Sprintf("line %d\n", i), 2000)}
		if _, err := repo.Commit(fmt.Sprintf("docs %d", i), files); err != nil {
			t.Fatal(err)
		}
	}
	pushVersion(t, repo, "v1")

	// 1. Cold fetch vs git clone --depth 1.
	var clones, fetches []time.Duration
	for r := 0; r < rounds; r++ {
		clone := func() { clones = append(clones, timeClone(t, repo)) }
		fetch := func() { fetches = append(fetches, timeColdFetch(t, repo)) }
		if r%2 == 0 {
			clone()
			fetch()
		} else {
			fetch()
			clone()
		}
	}
	clone, fetch := best(clones), best(fetches)
	t.Logf("git clone --depth 1: %v; Calaf cold fetch: %v", clones, fetches)

	// 2. Baseline of push → applied: clone + one server-side apply of the ConfigMap.
	ns := newNamespace(t)
	createSecret(t, gitSecret(ns, "git", gitPassword))
	var baselines []time.Duration
	for r := 0; r < rounds; r++ {
		start := time.Now()
		timeClone(t, repo)
		applyConfigMap(t, ns, fmt.Sprintf("baseline-%d", r))
		baselines = append(baselines, time.Since(start))
	}
	baseline := best(baselines)

	// 3. Push → applied through the webhook (interval one hour).
	hooked := createService(t, ns, "hooked", gitSource(repo, nil, "git"), time.Hour)
	waitReady(t, hooked, "")
	var webhooks []time.Duration
	payload := []byte(fmt.Sprintf(`{"repository":{"clone_url":%q}}`, env.git.RepoURL(repo.Name)))
	for r := 0; r < rounds; r++ {
		version := fmt.Sprintf("hook-%d", r)
		pushVersion(t, repo, version)
		start := time.Now()
		g.Expect(postWebhook(t, payload, webhookToken)).To(Equal(202))
		waitVersion(t, ns, "hooked", version, 30*time.Second)
		webhooks = append(webhooks, time.Since(start))
	}
	g.Expect(env.client.Delete(context.Background(), &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hooked"}})).To(Succeed())

	// 4. Push → applied by polling, pushes at random phases of the interval.
	const interval = 5 * time.Second
	polled := createService(t, ns, "polled", gitSource(repo, nil, "git"), interval)
	waitReady(t, polled, "")
	var polls []time.Duration
	for r := 0; r < rounds; r++ {
		time.Sleep(time.Duration(r) * interval / rounds) // spread the push over the interval
		version := fmt.Sprintf("poll-%d", r)
		pushVersion(t, repo, version)
		start := time.Now()
		waitVersion(t, ns, "polled", version, 3*interval)
		polls = append(polls, time.Since(start))
	}

	// 5. N Services on one repository and revision.
	const n = 20
	shared, sharedCommit := newRepo(t)
	many := newNamespace(t)
	createSecret(t, gitSecret(many, "git", gitPassword))
	start := time.Now()
	var keys []client.ObjectKey
	for i := 0; i < n; i++ {
		keys = append(keys, createService(t, many, fmt.Sprintf("svc-%02d", i), gitSource(shared, nil, "git"), time.Hour))
	}
	for _, key := range keys {
		waitReady(t, key, "main@sha1:"+sharedCommit)
	}
	allReady := time.Since(start)
	nFetches, nListings := env.git.Fetches(shared.Name), env.git.LsRemotes(shared.Name)
	g.Expect(nFetches).To(BeEquivalentTo(1))

	section := sourcesMarkdown(benchResults{
		clone: clone, fetch: fetch, clones: clones, fetches: fetches,
		baseline: baseline, webhooks: webhooks, polls: polls, interval: interval,
		n: n, allReady: allReady, nFetches: nFetches, nListings: nListings,
	})
	if err := benchreport.WriteBenchmark(*report, section); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s:\n%s", *report, section)
	if ratio := float64(fetch) / float64(clone); ratio > maxFetchRatio {
		t.Errorf("cold fetch is %.2f× git clone --depth 1, more than %.1f×", ratio, maxFetchRatio)
	}
	if m := median(webhooks); m > maxWebhookDelay {
		t.Errorf("push → applied through the webhook takes %v (median), more than %v", m, maxWebhookDelay)
	}
}

// timeClone runs the baseline: git clone --depth 1 --single-branch of the repository.
func timeClone(t *testing.T, repo *gitserver.Repo) time.Duration {
	t.Helper()
	u, err := url.Parse(env.git.RepoURL(repo.Name))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(gitUser, gitPassword)
	dir := filepath.Join(t.TempDir(), "clone")
	start := time.Now()
	if _, err := gitserver.Git("", "clone", "--quiet", "--depth", "1", "--single-branch", "--branch", "main", u.String(), dir); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// timeColdFetch runs what the operator does for a commit it has not stored: ls-remote,
// shallow fetch, extraction of the package path, store (with integrity check).
func timeColdFetch(t *testing.T, repo *gitserver.Repo) time.Duration {
	t.Helper()
	store, err := source.NewStore(filepath.Join(t.TempDir(), "store"), 1<<30, tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	secret := gitSecret("bench", "git", gitPassword)
	fetcher := &source.Git{Store: store, Reader: staticReader{secret}}
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "bench"}}
	svc.Spec.Source = gitSource(repo, nil, "git")
	start := time.Now()
	if _, err := fetcher.Fetch(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// staticReader serves one Secret.
type staticReader struct{ secret *corev1.Secret }

func (r staticReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	secret, ok := obj.(*corev1.Secret)
	if !ok || key.Name != r.secret.Name {
		return fmt.Errorf("not found")
	}
	r.secret.DeepCopyInto(secret)
	return nil
}

func (r staticReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("not supported")
}

// applyConfigMap server-side applies the ConfigMap the package renders.
func applyConfigMap(t *testing.T, namespace, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Data: map[string]string{"greeting": "hello", "version": "v1"}}
	if err := env.client.Patch(context.Background(), cm, client.Apply, client.FieldOwner("bench"), client.ForceOwnership); err != nil { //nolint:staticcheck // the plain SSA call is the baseline
		t.Fatal(err)
	}
}

type benchResults struct {
	clone, fetch    time.Duration
	clones, fetches []time.Duration
	baseline        time.Duration
	webhooks, polls []time.Duration
	interval        time.Duration
	n               int
	allReady        time.Duration
	nFetches        int64
	nListings       int64
}

func sourcesMarkdown(r benchResults) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", sourcesTitle)
	fmt.Fprintf(&b, "Written by `make bench` (test/sources, TestBenchSources) on %s: %s, %s/%s, %d CPUs, %s; load average at the end %s. "+
		"A real git server (Debian's git http-backend behind net/http/cgi, basic auth) and a real kube-apiserver (envtest) on loopback; the operator in-process.\n\n",
		time.Now().UTC().Format("2006-01-02"), benchreport.CPUModel(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), benchreport.LoadAverage())
	b.WriteString("| measure | Calaf | same-run baseline | ratio |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| cold git fetch of a 22-commit repository (ls-remote, shallow fetch, package path extracted, stored, manifest checked) — best of %d, interleaved | %v | `git clone --depth 1 --single-branch`: %v | %.2f× |\n",
		len(r.fetches), round(r.fetch), round(r.clone), float64(r.fetch)/float64(r.clone))
	fmt.Fprintf(&b, "| push → objects applied, through the webhook (interval 1 h) — median of %d (min %v, max %v) | %v | clone + one server-side apply of the ConfigMap: %v | %.2f× |\n",
		len(r.webhooks), round(minOf(r.webhooks)), round(maxOf(r.webhooks)), round(median(r.webhooks)), round(r.baseline), float64(median(r.webhooks))/float64(r.baseline))
	fmt.Fprintf(&b, "| push → objects applied, by polling (interval %v, pushes spread over it) — median of %d (max %v) | %v | the interval: %v | %.2f× |\n",
		r.interval, len(r.polls), round(maxOf(r.polls)), round(median(r.polls)), r.interval, float64(median(r.polls))/float64(r.interval))
	fmt.Fprintf(&b, "| %d Services on one repository and revision, created at once: fetches (git-upload-pack requests at the server) | **%d** | %d (one per Service) | %.2f× |\n",
		r.n, r.nFetches, r.n, float64(r.nFetches)/float64(r.n))
	fmt.Fprintf(&b, "| the same %d Services: all Ready; ref listings (ls-remote) | %v; %d listings | — | — |\n", r.n, round(r.allReady), r.nListings)
	fmt.Fprintf(&b, "\nPolling latency is bounded by the interval (plus up to 10%% jitter) and the same apply work; use the webhook for seconds.\n")
	fmt.Fprintf(&b, "\nTargets:\n\n- cold fetch ≤ %.1f× `git clone --depth 1` — %s (%.2f×).\n- push → applied through the webhook ≤ %v — %s (median %v).\n- N Services on one revision → one fetch — %s (%d fetches for %d Services).\n",
		maxFetchRatio, benchreport.Verdict(float64(r.fetch)/float64(r.clone) <= maxFetchRatio), float64(r.fetch)/float64(r.clone), maxWebhookDelay, benchreport.Verdict(median(r.webhooks) <= maxWebhookDelay), round(median(r.webhooks)), benchreport.Verdict(r.nFetches == 1), r.nFetches, r.n)
	return b.String()
}

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

func best(ds []time.Duration) time.Duration { return minOf(ds) }

func minOf(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds[1:] {
		m = min(m, d)
	}
	return m
}

func maxOf(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds[1:] {
		m = max(m, d)
	}
	return m
}

func median(ds []time.Duration) time.Duration {
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[len(sorted)/2]
}
