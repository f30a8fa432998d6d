package nfvapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/nfvapi"
	"calaf.io/calaf/nfvapi/contract"
)

// env is a real kube-apiserver and etcd (RBAC, service-account tokens), the NFV API
// server in front of it, and the contract every response is checked against.
var env struct {
	admin    client.Client
	kube     *kubernetes.Clientset
	config   *rest.Config
	server   *httptest.Server
	contract *contract.Validator
	now      time.Time
	clock    sync.Mutex
}

func TestMain(m *testing.M) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: these tests need a kube-apiserver and etcd (make test-unit sets it)")
		os.Exit(1)
	}
	testEnv := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "deploy", "crd")}, ErrorIfCRDPathMissing: true}
	config, err := testEnv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := run(m, config)
	_ = testEnv.Stop()
	os.Exit(code)
}

func run(m *testing.M, config *rest.Config) int {
	scheme := operator.NewScheme()
	var err error
	if env.admin, err = client.New(config, client.Options{Scheme: scheme}); err != nil {
		panic(err)
	}
	env.kube = kubernetes.NewForConfigOrDie(config)
	env.config = config
	if env.contract, err = contract.New(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	httpClient, _ := rest.HTTPClientFor(config)
	mapper, err := apiutil.NewDynamicRESTMapper(config, httpClient)
	if err != nil {
		panic(err)
	}
	env.now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	server, err := nfvapi.New(nfvapi.Config{PageSize: 2, Rate: 1000, Burst: 2000, Now: now,
		Tenancy: nfvapi.Tenancy{Users: map[string]string{"cert-user": "nfvo-a"}}}, config, scheme, mapper)
	if err != nil {
		panic(err)
	}
	env.server = httptest.NewServer(server)
	defer env.server.Close()
	return m.Run()
}

func now() time.Time {
	env.clock.Lock()
	defer env.clock.Unlock()
	return env.now
}

// tenant is an NFVO: a service account of a namespace, its token, and what RBAC lets it do.
type tenant struct {
	namespace, name, token string
}

// newTenant makes a namespace and an NFVO account in it, allowed the given verbs on the
// NFV resources (nil: the role an NFVO gets, docs/nfv-api.md).
func newTenant(t *testing.T, namespace, name string, rules []rbacv1.PolicyRule) tenant {
	t.Helper()
	ctx := context.Background()
	_ = env.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	must(t, client.IgnoreAlreadyExists(env.admin.Create(ctx, sa)))
	if rules == nil {
		rules = nfvoRules()
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Rules: rules}
	must(t, client.IgnoreAlreadyExists(env.admin.Create(ctx, role)))
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: namespace}}}
	must(t, client.IgnoreAlreadyExists(env.admin.Create(ctx, binding)))
	expiry := int64(3600)
	tr, err := env.kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	must(t, err)
	return tenant{namespace: namespace, name: name, token: tr.Status.Token}
}

// nfvoRules is the Role deploy/nfv-api gives an NFVO in its namespace.
func nfvoRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"calaf.io"}, Resources: []string{"services", "operations", "lifecyclesubscriptions", "vnfpackages"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "get"}},
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// answer is a response of the NFV API, checked against the contract.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// serverWith serves another NFV API server with cfg (the suite's clock and bounds), until
// the test ends.
func serverWith(t *testing.T, cfg nfvapi.Config) *httptest.Server {
	t.Helper()
	httpClient, _ := rest.HTTPClientFor(env.config)
	mapper, err := apiutil.NewDynamicRESTMapper(env.config, httpClient)
	must(t, err)
	cfg.Now, cfg.Rate, cfg.Burst = now, 1000, 2000
	server, err := nfvapi.New(cfg, env.config, operator.NewScheme(), mapper)
	must(t, err)
	s := httptest.NewServer(server)
	t.Cleanup(s.Close)
	return s
}

// call sends a request as a tenant (no token when tn is nil) and checks the answer
// against the OpenAPI document.
func call(t *testing.T, tn *tenant, method, path string, body any, headers ...string) answer {
	t.Helper()
	return callAt(t, env.server, tn, method, path, body, headers...)
}

// callAt is call to another server.
func callAt(t *testing.T, server *httptest.Server, tn *tenant, method, path string, body any, headers ...string) answer {
	t.Helper()
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		reader = strings.NewReader(b)
	case []byte:
		reader = bytes.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, server.URL+path, reader)
	must(t, err)
	if reader != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if strings.HasPrefix(path, "/vnflcm/v2/") {
		req.Header.Set("Version", "2.0.0")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	if tn != nil {
		req.Header.Set("Authorization", "Bearer "+tn.token)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, body: data}
	if err := env.contract.Response(method, req.URL, req.Header, resp.StatusCode, resp.Header, data); err != nil {
		t.Errorf("the answer breaks the contract: %v\n%s", err, data)
	}
	return a
}

// expect fails unless the answer has the status; a ProblemDetails must say want.
func (a answer) expect(t *testing.T, status int, want ...string) answer {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.body)
	}
	if status >= 400 {
		if ct := a.header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("a %d answered as %s", status, ct)
		}
		for _, w := range want {
			if !strings.Contains(string(a.body), w) {
				t.Errorf("the problem does not say %q: %s", w, a.body)
			}
		}
	}
	return a
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("%v: %s", err, a.body)
	}
}

// onboarded makes a VnfPackage whose onboarding found a VNFD id (the status the
// operator's onboarding writes).
func onboarded(t *testing.T, namespace, vnfdID string, state v1alpha1.PackageOperationalState) *v1alpha1.VnfPackage {
	t.Helper()
	ctx := context.Background()
	pkg := &v1alpha1.VnfPackage{ObjectMeta: metav1.ObjectMeta{GenerateName: "pkg-", Namespace: namespace},
		Spec: v1alpha1.VnfPackageSpec{OperationalState: state}}
	must(t, env.admin.Create(ctx, pkg))
	pkg.Status = v1alpha1.VnfPackageStatus{OnboardingState: v1alpha1.OnboardingOnboarded, UsageState: v1alpha1.PackageNotInUse,
		VnfdID: vnfdID, VnfProvider: "Acme", VnfProductName: "Sample CNF", VnfSoftwareVersion: "1.0", VnfdVersion: "1.0"}
	must(t, env.admin.Status().Update(ctx, pkg))
	return pkg
}

// location is the path of a Location header.
func location(t *testing.T, a answer) string {
	t.Helper()
	loc := a.header.Get("Location")
	if !strings.HasPrefix(loc, env.server.URL+"/") {
		t.Fatalf("Location %q is not an absolute URL of the server", loc)
	}
	return strings.TrimPrefix(loc, env.server.URL)
}
