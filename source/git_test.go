package source_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/source"
	"calaf.io/calaf/test/gitserver"
	"calaf.io/calaf/tosca"
)

const (
	gitUser     = "calaf"
	gitPassword = "s3cret-git-password"
	testNS      = "tenant"
)

func template(greeting string) string {
	return "tosca_definitions_version: tosca_simple_yaml_1_3\n# " + greeting + "\ntopology_template: {}\n"
}

// newGit starts a git server with one repository holding a package under deploy/.
func newGit(t *testing.T) (*gitserver.Server, *gitserver.Repo) {
	t.Helper()
	server, err := gitserver.Start(t.TempDir(), gitUser, gitPassword)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	repo, err := server.NewRepo("packages")
	if err != nil {
		t.Fatal(err)
	}
	return server, repo
}

func mustCommit(t *testing.T, repo *gitserver.Repo, message string, files map[string]string) string {
	t.Helper()
	commit, err := repo.Commit(message, files)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Push("main"); err != nil {
		t.Fatal(err)
	}
	return commit
}

func secrets(objects ...client.Object) client.Reader {
	return fake.NewClientBuilder().WithScheme(operator.NewScheme()).WithObjects(objects...).Build()
}

func basicAuthSecret(name, user, password string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name}, Data: map[string][]byte{"username": []byte(user), "password": []byte(password)}}
}

func newStore(t *testing.T, maxBytes int64) *source.Store {
	t.Helper()
	store, err := source.NewStore(t.TempDir()+"/store", maxBytes, tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func gitService(url string, ref *v1alpha1.GitRef, path, secret string) *v1alpha1.Service {
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "demo"}}
	svc.Spec.Source.Git = &v1alpha1.GitSource{URL: url, Ref: ref, Path: path}
	if secret != "" {
		svc.Spec.Source.Git.SecretRef = &v1alpha1.LocalObjectReference{Name: secret}
	}
	return svc
}

func readTemplate(g Gomega, artifact *source.Artifact) string {
	data, err := artifact.Package.ReadFile(artifact.Package.Entry)
	g.Expect(err).NotTo(HaveOccurred())
	return string(data)
}

func sourceError(err error) *source.Error {
	var e *source.Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// A branch is followed, a tag (lightweight or annotated) and a commit stay put; the
// revision names the ref and the commit; only the package path is stored, without .git.
func TestGitRefs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	server, repo := newGit(t)
	first := mustCommit(t, repo, "first", map[string]string{"deploy/service.yaml": template("one"), "README.md": "not part of the package"})
	g.Expect(repo.Tag("v1", true)).To(Succeed())
	g.Expect(repo.Tag("light", false)).To(Succeed())
	g.Expect(repo.Push("main")).To(Succeed())
	second := mustCommit(t, repo, "second", map[string]string{"deploy/service.yaml": template("two")})

	fetcher := &source.Git{Store: newStore(t, 1<<30), Reader: secrets(basicAuthSecret("git", gitUser, gitPassword))}
	url := server.RepoURL("packages")
	cases := []struct {
		name     string
		ref      *v1alpha1.GitRef
		revision string
		greeting string
	}{
		{"default branch", nil, "main@sha1:" + second, "two"},
		{"branch", &v1alpha1.GitRef{Branch: "main"}, "main@sha1:" + second, "two"},
		{"annotated tag", &v1alpha1.GitRef{Tag: "v1"}, "v1@sha1:" + first, "one"},
		{"lightweight tag", &v1alpha1.GitRef{Tag: "light"}, "light@sha1:" + first, "one"},
		{"commit (not a branch tip)", &v1alpha1.GitRef{Commit: first}, "sha1:" + first, "one"},
		{"commit (a branch tip)", &v1alpha1.GitRef{Commit: second}, "sha1:" + second, "two"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			artifact, err := fetcher.Fetch(ctx, gitService(url, c.ref, "deploy", "git"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(artifact.Revision).To(Equal(c.revision))
			g.Expect(readTemplate(g, artifact)).To(ContainSubstring(c.greeting))
			var paths []string
			for _, f := range artifact.Package.Files {
				paths = append(paths, f.Path)
			}
			g.Expect(paths).To(Equal([]string{"service.yaml"}))
		})
	}

	// A new commit on the branch is seen at the next fetch; the tag and the commit are not.
	third := mustCommit(t, repo, "third", map[string]string{"deploy/service.yaml": template("three")})
	artifact, err := fetcher.Fetch(ctx, gitService(url, &v1alpha1.GitRef{Branch: "main"}, "deploy", "git"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(artifact.Revision).To(Equal("main@sha1:" + third))
	g.Expect(readTemplate(g, artifact)).To(ContainSubstring("three"))
	fetches := server.Fetches("packages")
	for _, ref := range []*v1alpha1.GitRef{{Tag: "v1"}, {Commit: first}} {
		artifact, err := fetcher.Fetch(ctx, gitService(url, ref, "deploy", "git"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(readTemplate(g, artifact)).To(ContainSubstring("one"))
	}
	g.Expect(server.Fetches("packages")).To(Equal(fetches), "known revisions are served from the store")
}

// A pinned commit already stored needs no request at all; a branch needs one ls-remote.
func TestGitKnownRevisionCostsOneLsRemote(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	server, repo := newGit(t)
	commit := mustCommit(t, repo, "first", map[string]string{"service.yaml": template("one")})
	fetcher := &source.Git{Store: newStore(t, 1<<30), Reader: secrets(basicAuthSecret("git", gitUser, gitPassword))}
	url := server.RepoURL("packages")

	for i := 0; i < 3; i++ {
		_, err := fetcher.Fetch(ctx, gitService(url, nil, "", "git"))
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(server.Fetches("packages")).To(BeEquivalentTo(1))
	g.Expect(server.LsRemotes("packages")).To(BeEquivalentTo(1 + 3))

	before := server.LsRemotes("packages")
	for i := 0; i < 3; i++ {
		_, err := fetcher.Fetch(ctx, gitService(url, &v1alpha1.GitRef{Commit: commit}, "", "git"))
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(server.Fetches("packages")).To(BeEquivalentTo(1), "the pinned commit is the one already stored")
	g.Expect(server.LsRemotes("packages")).To(Equal(before), "a stored pinned commit needs no request")
}

// Concurrent fetches of one repository and revision share one download.
func TestGitConcurrentFetchesShareOneDownload(t *testing.T) {
	g := NewWithT(t)
	server, repo := newGit(t)
	mustCommit(t, repo, "first", map[string]string{"service.yaml": template("one")})
	server.SetDelay(100 * time.Millisecond)
	fetcher := &source.Git{Store: newStore(t, 1<<30), Reader: secrets(basicAuthSecret("git", gitUser, gitPassword))}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := fetcher.Fetch(context.Background(), gitService(server.RepoURL("packages"), nil, "", "git"))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(server.Fetches("packages")).To(BeEquivalentTo(1))
}

// A .csar file in the repository is a package too.
func TestGitCSARPath(t *testing.T) {
	g := NewWithT(t)
	server, repo := newGit(t)
	dir := t.TempDir()
	g.Expect(writeFiles(dir, map[string]string{"service.yaml": template("zipped")})).To(Succeed())
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	csar, err := source.PackCSAR(pkg)
	g.Expect(err).NotTo(HaveOccurred())
	mustCommit(t, repo, "csar", map[string]string{"dist/app.csar": string(csar)})
	fetcher := &source.Git{Store: newStore(t, 1<<30), Reader: secrets(basicAuthSecret("git", gitUser, gitPassword))}
	artifact, err := fetcher.Fetch(context.Background(), gitService(server.RepoURL("packages"), nil, "dist/app.csar", "git"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readTemplate(g, artifact)).To(ContainSubstring("zipped"))
	g.Expect(artifact.Package.Meta).To(HaveKeyWithValue("Entry-Definitions", "service.yaml"))
}

// Failures say what is wrong and whether retrying can help.
func TestGitFailures(t *testing.T) {
	server, repo := newGit(t)
	mustCommit(t, repo, "first", map[string]string{"deploy/service.yaml": template("one"), "deploy/link": "x"})
	empty, err := server.NewRepo("empty")
	if err != nil {
		t.Fatal(err)
	}
	_ = empty
	refused, err := gitserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	reader := secrets(basicAuthSecret("git", gitUser, gitPassword), basicAuthSecret("wrong", gitUser, "not-the-password"))
	url := server.RepoURL("packages")
	cases := []struct {
		name      string
		svc       *v1alpha1.Service
		reason    string
		transient bool
		message   string
	}{
		{"wrong password", gitService(url, nil, "deploy", "wrong"), v1alpha1.ReasonAuthenticationFailed, false, `refused the credentials of Secret "wrong"`},
		{"no credentials", gitService(url, nil, "deploy", ""), v1alpha1.ReasonAuthenticationFailed, false, "requires credentials"},
		{"missing Secret", gitService(url, nil, "deploy", "nope"), v1alpha1.ReasonFetchFailed, true, `Secret "nope" not found`},
		{"missing branch", gitService(url, &v1alpha1.GitRef{Branch: "nope"}, "deploy", "git"), v1alpha1.ReasonInvalidSource, false, "branch nope not found"},
		{"missing tag", gitService(url, &v1alpha1.GitRef{Tag: "v9"}, "deploy", "git"), v1alpha1.ReasonInvalidSource, false, "tag v9 not found"},
		{"missing commit", gitService(url, &v1alpha1.GitRef{Commit: strings.Repeat("ab", 20)}, "deploy", "git"), v1alpha1.ReasonInvalidSource, false, "not found"},
		{"missing path", gitService(url, nil, "nowhere", "git"), v1alpha1.ReasonInvalidSource, false, `path "nowhere" not found`},
		{"path is not a package", gitService(url, nil, "deploy/link", "git"), v1alpha1.ReasonInvalidPackage, false, ""},
		{"empty repository", gitService(server.RepoURL("empty"), nil, "", "git"), v1alpha1.ReasonInvalidSource, false, "empty"},
		{"missing repository", gitService(server.RepoURL("nope"), nil, "", "git"), v1alpha1.ReasonInvalidSource, false, "repository not found"},
		{"unreachable", gitService("http://"+refused+"/x.git", nil, "", ""), v1alpha1.ReasonFetchFailed, true, "connection refused"},
	}
	fetcher := &source.Git{Store: newStore(t, 1<<30), Reader: reader, Timeout: 10 * time.Second}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := fetcher.Fetch(context.Background(), c.svc)
			g.Expect(err).To(HaveOccurred())
			e := sourceError(err)
			g.Expect(e).NotTo(BeNil(), "%v", err)
			g.Expect(e.Reason).To(Equal(c.reason), "%v", err)
			g.Expect(e.Transient).To(Equal(c.transient), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(c.message))
			g.Expect(err.Error()).NotTo(ContainSubstring(gitPassword))
			g.Expect(err.Error()).NotTo(ContainSubstring("not-the-password"))
		})
	}

	// A server that fails is transient.
	server.SetDown(true)
	_, err = fetcher.Fetch(context.Background(), gitService(url, nil, "deploy", "git"))
	e := sourceError(err)
	if e == nil || !e.Transient || e.Reason != v1alpha1.ReasonFetchFailed {
		t.Fatalf("a failing server: %v", err)
	}
}

func writeFiles(dir string, files map[string]string) error {
	for path, content := range files {
		full := dir + "/" + path
		if err := mkdirAll(full); err != nil {
			return err
		}
		if err := writeFile(full, content); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// Token credentials, as git forges issue them: a "password" alone (an access token, with
// the user "git"), or a "bearerToken"; a wrong token is refused for good, and no token ever
// reaches an error message.
func TestGitTokenAuth(t *testing.T) {
	g := NewWithT(t)
	server, err := gitserver.Start(t.TempDir(), "git", "glpat-access-token")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(server.Close)
	server.Token = "bearer-token-of-the-ci"
	repo, err := server.NewRepo("packages")
	g.Expect(err).NotTo(HaveOccurred())
	mustCommit(t, repo, "first", map[string]string{"deploy/service.yaml": template("over a token")})
	secret := func(name, key, value string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name}, Data: map[string][]byte{key: []byte(value)}}
	}
	fetcher := &source.Git{Store: newStore(t, 1<<30), Timeout: 10 * time.Second, Reader: secrets(
		secret("access-token", "password", "glpat-access-token"),
		secret("bearer", "bearerToken", "bearer-token-of-the-ci"),
		secret("wrong-bearer", "bearerToken", "an-expired-token"),
	)}
	url := server.RepoURL("packages")
	for _, name := range []string{"access-token", "bearer"} {
		artifact, err := fetcher.Fetch(context.Background(), gitService(url, nil, "deploy", name))
		g.Expect(err).NotTo(HaveOccurred(), name)
		g.Expect(readTemplate(g, artifact)).To(ContainSubstring("over a token"))
	}
	_, err = fetcher.Fetch(context.Background(), gitService(url, nil, "deploy", "wrong-bearer"))
	g.Expect(sourceError(err)).NotTo(BeNil(), "%v", err)
	g.Expect(sourceError(err).Reason).To(Equal(v1alpha1.ReasonAuthenticationFailed))
	g.Expect(sourceError(err).Transient).To(BeFalse())
	g.Expect(err.Error()).NotTo(ContainSubstring("an-expired-token"))
}
