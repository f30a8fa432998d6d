package sources

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// A commit pushed to the tracked branch is applied within the interval plus a few
// seconds, and the status names the branch and the commit.
func TestGitPushedCommitIsApplied(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	createSecret(t, gitSecret(ns, "git", gitPassword))
	repo, first := newRepo(t)
	const interval = 5 * time.Second
	key := createService(t, ns, "demo", gitSource(repo, nil, "git"), interval)
	svc := waitReady(t, key, "main@sha1:"+first)
	g.Expect(svc.Status.Package.Revision).To(Equal("main@sha1:" + first))
	g.Expect(getConfigMap(g, ns, "demo-config").Data).To(HaveKeyWithValue("version", "v1"))

	second := pushVersion(t, repo, "v2")
	took := waitVersion(t, ns, "demo", "v2", interval+interval/10+5*time.Second)
	t.Logf("pushed commit applied after %v (interval %v)", took.Round(time.Millisecond), interval)
	svc = waitReady(t, key, "main@sha1:"+second)
	g.Expect(svc.Status.Package.TemplateVersion).To(Equal("v2"))
}

// Services pinned to a tag or a commit ignore new commits on the branch.
func TestGitPinnedRefsIgnoreNewCommits(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	createSecret(t, gitSecret(ns, "git", gitPassword))
	repo, first := newRepo(t)
	g.Expect(repo.Tag("v1.0.0", true)).To(Succeed())
	g.Expect(repo.Push("main")).To(Succeed())
	const interval = 2 * time.Second
	byTag := createService(t, ns, "by-tag", gitSource(repo, &v1alpha1.GitRef{Tag: "v1.0.0"}, "git"), interval)
	byCommit := createService(t, ns, "by-commit", gitSource(repo, &v1alpha1.GitRef{Commit: first}, "git"), interval)
	following := createService(t, ns, "following", gitSource(repo, &v1alpha1.GitRef{Branch: "main"}, "git"), interval)
	waitReady(t, byTag, "v1.0.0@sha1:"+first)
	waitReady(t, byCommit, "sha1:"+first)
	waitReady(t, following, "main@sha1:"+first)
	tagged, pinned := getConfigMap(g, ns, "by-tag-config"), getConfigMap(g, ns, "by-commit-config")

	second := pushVersion(t, repo, "v2")
	waitVersion(t, ns, "following", "v2", 20*time.Second)
	waitReady(t, following, "main@sha1:"+second)
	handledReconcile(t, byTag) // each pinned Service reconciled after the push
	handledReconcile(t, byCommit)
	for name, before := range map[string]*corev1.ConfigMap{"by-tag-config": tagged, "by-commit-config": pinned} {
		now := getConfigMap(g, ns, name)
		g.Expect(now.Data).To(HaveKeyWithValue("version", "v1"), name)
		g.Expect(now.ResourceVersion).To(Equal(before.ResourceVersion), name)
	}
	g.Expect(getService(g, byTag).Status.LastAppliedRevision).To(Equal("v1.0.0@sha1:" + first))
	g.Expect(getService(g, byCommit).Status.LastAppliedRevision).To(Equal("sha1:" + first))

	// Moving the tag is a new revision for the Service that follows it.
	g.Expect(repo.Tag("v1.0.0", true)).To(Succeed())
	g.Expect(repo.Push("main")).To(Succeed())
	waitVersion(t, ns, "by-tag", "v2", 20*time.Second)
	waitReady(t, byTag, "v1.0.0@sha1:"+second)
}

// Wrong credentials stall the Service with a clear message; what runs stays; fixing the
// Secret recovers.
func TestGitWrongCredentialsStall(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createSecret(t, gitSecret(ns, "git", gitPassword))
	repo, first := newRepo(t)
	key := createService(t, ns, "demo", gitSource(repo, nil, "git"), 2*time.Second)
	waitReady(t, key, "main@sha1:"+first)
	running := getConfigMap(g, ns, "demo-config")

	secret := gitSecret(ns, "git", "a-wrong-password")
	g.Expect(env.client.Update(ctx, secret)).To(Succeed())
	pushVersion(t, repo, "v2")
	svc := waitStalled(t, key, v1alpha1.ReasonAuthenticationFailed)
	ready := condition(svc, v1alpha1.ConditionReady)
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Message).To(ContainSubstring(`the server refused the credentials of Secret "git"`))
	g.Expect(ready.Message).To(ContainSubstring(env.git.RepoURL(repo.Name)))
	g.Expect(ready.Message).NotTo(ContainSubstring("a-wrong-password"))
	g.Expect(condition(svc, v1alpha1.ConditionSourceReady).Reason).To(Equal(v1alpha1.ReasonAuthenticationFailed))
	g.Expect(svc.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))

	handledReconcile(t, key) // another attempt with the wrong credentials, over and done
	still := getConfigMap(g, ns, "demo-config")
	g.Expect(still.UID).To(Equal(running.UID))
	g.Expect(still.ResourceVersion).To(Equal(running.ResourceVersion))

	g.Expect(env.client.Update(ctx, gitSecret(ns, "git", gitPassword))).To(Succeed())
	waitVersion(t, ns, "demo", "v2", 20*time.Second)
}

// Resyncs of an unchanged commit list the refs (polling) but compile nothing and send
// no write request.
func TestGitUnchangedCommitAppliesNothing(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	createSecret(t, gitSecret(ns, "git", gitPassword))
	repo, first := newRepo(t)
	key := createService(t, ns, "demo", gitSource(repo, nil, "git"), time.Second)
	waitReady(t, key, "main@sha1:"+first)
	// Let the first resyncs settle: two polls of the repository.
	polled := func() int64 { return env.git.LsRemotes(repo.Name) }
	lsRemotes := polled()
	g.Eventually(polled, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", lsRemotes+2))

	writes, compiles := writesIn(ns), env.compiles.Load()
	lsRemotes, fetches := polled(), env.git.Fetches(repo.Name)
	g.Eventually(polled, 30*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", lsRemotes+4), "the repository is polled")
	g.Expect(env.git.Fetches(repo.Name)-fetches).To(BeZero(), "an unchanged commit is not fetched")
	g.Expect(env.compiles.Load()-compiles).To(BeZero(), "compiles of an unchanged commit")
	g.Expect(writesIn(ns)-writes).To(BeZero(), "write requests for an unchanged commit")
}

// The webhook reconciles at once: a push is applied within seconds although the
// interval is an hour. A request without the token is refused and triggers nothing.
func TestWebhookTriggersApply(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	createSecret(t, gitSecret(ns, "git", gitPassword))
	repo, first := newRepo(t)
	key := createService(t, ns, "demo", gitSource(repo, nil, "git"), time.Hour)
	waitReady(t, key, "main@sha1:"+first)
	pushVersion(t, repo, "v2")

	payload := []byte(fmt.Sprintf(`{"ref":"refs/heads/main","repository":{"clone_url":%q}}`, env.git.RepoURL(repo.Name)))
	triggered := env.triggers.Sent()
	g.Expect(postWebhook(t, payload, "not-the-token")).To(Equal(http.StatusUnauthorized))
	g.Expect(env.triggers.Sent()).To(Equal(triggered), "a refused webhook asks for no reconcile (the answer comes after the trigger would)")
	g.Expect(getConfigMap(g, ns, "demo-config").Data).To(HaveKeyWithValue("version", "v1"), "a refused webhook triggers nothing")

	start := time.Now()
	g.Expect(postWebhook(t, payload, webhookToken)).To(Equal(http.StatusAccepted))
	waitVersion(t, ns, "demo", "v2", 10*time.Second)
	t.Logf("push applied %v after the webhook", time.Since(start).Round(time.Millisecond))
}

// postWebhook posts a push payload signed as GitHub does (HMAC-SHA256 with the token).
func postWebhook(t *testing.T, payload []byte, token string) int {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write(payload)
	req, err := http.NewRequest(http.MethodPost, env.webhook, bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// An unreachable repository makes the Service not Ready with the reason, retried with
// backoff (no hot loop); what runs stays.
func TestGitUnreachableBacksOff(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	createSecret(t, gitSecret(ns, "git", gitPassword))
	repo, first := newRepo(t)
	key := createService(t, ns, "demo", gitSource(repo, nil, "git"), time.Hour)
	waitReady(t, key, "main@sha1:"+first)
	running := getConfigMap(g, ns, "demo-config")

	// A host that accepts connections and drops them at once, counting attempts.
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer listener.Close()
	var attempts atomic.Int64
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			attempts.Add(1)
			conn.Close()
		}
	}()
	updateService(t, key, func(svc *v1alpha1.Service) {
		svc.Spec.Source.Git.URL = "http://" + listener.Addr().String() + "/gone.git"
	})
	var svc *v1alpha1.Service
	g.Eventually(func(g Gomega) {
		svc = getService(g, key)
		ready := condition(svc, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonFetchFailed))
		g.Expect(ready.ObservedGeneration).To(Equal(svc.Generation))
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(condition(svc, v1alpha1.ConditionReady).Message).To(ContainSubstring("listing refs of http://" + listener.Addr().String()))
	g.Expect(condition(svc, v1alpha1.ConditionReconciling).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(condition(svc, v1alpha1.ConditionStalled)).To(BeNil(), "unreachable is not a stall: it is retried")

	// Retried, each time after a backoff twice the last: the operator's rate limiter was
	// asked for a delay before every attempt but the first, and gave one that doubles.
	g.Eventually(attempts.Load, 30*time.Second, 50*time.Millisecond).Should(BeNumerically(">=", 4), "retried")
	delays := env.retries.of(key)
	tried := attempts.Load()
	t.Logf("%d connection attempts, retried after %v", tried, delays)
	g.Expect(len(delays)).To(BeNumerically(">=", 3))
	g.Expect(tried).To(BeNumerically("<=", len(delays)+2), "an attempt that no backoff preceded: a hot loop")
	for i := 1; i < len(delays); i++ {
		g.Expect(delays[i]).To(BeNumerically(">=", 2*delays[i-1]), "retry %d after %v, the one before after %v: no backoff", i, delays[i], delays[i-1])
	}
	still := getConfigMap(g, ns, "demo-config")
	g.Expect(still.ResourceVersion).To(Equal(running.ResourceVersion), "running objects untouched")
}

// N Services on one repository and revision cause one fetch.
func TestGitServicesShareOneFetch(t *testing.T) {
	const n = 10
	ns := newNamespace(t)
	createSecret(t, gitSecret(ns, "git", gitPassword))
	repo, first := newRepo(t)
	var keys []client.ObjectKey
	for i := 0; i < n; i++ {
		keys = append(keys, createService(t, ns, fmt.Sprintf("svc-%d", i), gitSource(repo, nil, "git"), time.Hour))
	}
	for _, key := range keys {
		waitReady(t, key, "main@sha1:"+first)
	}
	NewWithT(t).Expect(env.git.Fetches(repo.Name)).To(BeEquivalentTo(1), "one fetch for %d Services", n)
	t.Logf("%d Services: %d fetch, %d ref listings", n, env.git.Fetches(repo.Name), env.git.LsRemotes(repo.Name))
}

// A package whose SOL004 manifest does not match is refused with a clear condition.
func TestGitTamperedPackageIsRefused(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	createSecret(t, gitSecret(ns, "git", gitPassword))
	repo, first := newRepo(t)
	key := createService(t, ns, "demo", gitSource(repo, nil, "git"), 2*time.Second)
	waitReady(t, key, "main@sha1:"+first)

	files := packageFiles("v2")
	sum := sha256.Sum256([]byte(files["service.yaml"]))
	manifest := "metadata:\n  ns_product_name: sources-test\n\nSource: service.yaml\nAlgorithm: SHA-256\nHash: " + hex.EncodeToString(sum[:]) + "\n"
	tampered := packageFiles("v3") // not what the manifest hashes
	_, err := repo.Commit("tampered", map[string]string{"deploy/service.yaml": tampered["service.yaml"], "deploy/service.mf": manifest})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Push("main")).To(Succeed())
	svc := waitStalled(t, key, v1alpha1.ReasonIntegrityFailed)
	msg := condition(svc, v1alpha1.ConditionReady).Message
	g.Expect(msg).To(ContainSubstring("service.mf:4: service.yaml: SHA-256 mismatch"))
	g.Expect(condition(svc, v1alpha1.ConditionSourceReady).Reason).To(Equal(v1alpha1.ReasonIntegrityFailed))
	g.Expect(getConfigMap(g, ns, "demo-config").Data).To(HaveKeyWithValue("version", "v1"), "the running version stays")

	// The matching content passes.
	fixed, err := repo.Commit("fixed", map[string]string{"deploy/service.yaml": files["service.yaml"]})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Push("main")).To(Succeed())
	waitReady(t, key, "main@sha1:"+fixed)
	g.Expect(getConfigMap(g, ns, "demo-config").Data).To(HaveKeyWithValue("version", "v2"))
}
