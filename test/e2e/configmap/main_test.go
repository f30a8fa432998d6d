//go:build e2e

// Package configmap runs Calaf in ConfigMap mode on the one-node cluster as a tenant
// without cluster rights would: Calaf's CRDs are not installed (TestMain refuses to run
// when they are: make test-e2e runs this package before the suite that installs them),
// the operator holds the Role of deploy/rbac/configmap in one namespace only, and every
// request it sends goes through a proxy of the test's, which shows that none was for
// calaf.io.
package configmap

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/cmmode"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/test/e2e/framework"
)

// tenant is the namespace of the tenant: its operator, its Role, its Services.
const tenant = "e2e-cm-tenant"

var suite struct {
	calaf      string
	kubeconfig string // the admin's (the tests act as the tenant's user would, with kubectl)
	client     client.Client
	// cm reads Services and Operations from their ConfigMaps, as the operator does.
	cm       *cmmode.Client
	operator *framework.Operator
	proxy    *requestLog
}

// requestLog records the paths of the requests the operator sent.
type requestLog struct {
	mu    sync.Mutex
	paths map[string]int
}

func (l *requestLog) add(path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.paths[path]++
}

// calafPaths returns the paths asked of calaf.io, and how many requests were logged.
func (l *requestLog) calafPaths() ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	total := 0
	for path, n := range l.paths {
		total += n
		if strings.Contains(path, "calaf.io") {
			out = append(out, path)
		}
	}
	return out, total
}

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	config, err := framework.LoadConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	suite.kubeconfig = framework.KubeconfigPath()
	scheme := operator.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if suite.client, err = client.New(config, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := noCalafCRDs(ctx, suite.client); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	schemas, err := cmmode.NewSchemas()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	suite.cm = cmmode.NewClient(suite.client, suite.client, &cmmode.Store{Schemas: schemas, Client: suite.client})
	dir, err := os.MkdirTemp("", "calaf-e2e-cm-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if suite.calaf, err = framework.BuildCalaf(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	operatorKubeconfig, err := tenantOperator(ctx, config, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logPath := filepath.Join(os.TempDir(), "calaf-e2e-cm-operator.log")
	os.Remove(logPath)
	suite.operator = &framework.Operator{Binary: suite.calaf, LogPath: logPath, Args: []string{
		"--kubeconfig=" + operatorKubeconfig, "--resources=configmap", "--watch-namespace=" + tenant,
		"--progress-interval=2s", "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--package-cache-dir=" + filepath.Join(dir, "packages")}}
	if err := suite.operator.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	suite.operator.Stop()
	// The suites that run next on this cluster find nothing of the tenant's.
	if err := suite.client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}}); err != nil {
		fmt.Fprintln(os.Stderr, "deleting the tenant's namespace:", err)
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "operator log (last lines of %s):\n%s\n", logPath, suite.operator.Tail(60))
	}
	asked, total := suite.proxy.calafPaths()
	if len(asked) > 0 || total == 0 {
		fmt.Fprintf(os.Stderr, "the operator sent %d requests, %d of them for calaf.io: %v\n", total, len(asked), asked)
		return 1
	}
	fmt.Fprintf(os.Stderr, "the operator sent %d requests, none for calaf.io\n", total)
	return code
}

// noCalafCRDs fails when any of Calaf's CRDs is installed: this package proves that a
// tenant needs none.
func noCalafCRDs(ctx context.Context, c client.Client) error {
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, list); err != nil {
		return err
	}
	for _, crd := range list.Items {
		if crd.Spec.Group == "calaf.io" {
			return fmt.Errorf("CRD %s is installed: ConfigMap mode's end-to-end tests run on a cluster without Calaf's CRDs (make test-e2e runs them first)", crd.Name)
		}
	}
	return nil
}

// tenantOperator makes the tenant's namespace, the operator's service account and the
// Role and RoleBinding of deploy/rbac/configmap there, and a kubeconfig acting as that
// account through the recording proxy.
func tenantOperator(ctx context.Context, config *rest.Config, dir string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "calaf-operator"}}
	for _, obj := range []client.Object{ns, sa} {
		if err := suite.client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", err
		}
	}
	for _, file := range []string{"role.yaml", "binding.yaml"} {
		path := filepath.Join(framework.RepoRoot(), "deploy", "rbac", "configmap", file)
		err := framework.ForEachObject(path, func(obj *unstructured.Unstructured) error {
			obj.SetNamespace(tenant)
			if obj.GetKind() == "RoleBinding" {
				subjects := []any{map[string]any{"kind": "ServiceAccount", "name": "calaf-operator", "namespace": tenant}}
				if err := unstructured.SetNestedSlice(obj.Object, subjects, "subjects"); err != nil {
					return err
				}
			}
			return suite.client.Patch(ctx, obj, client.Apply, client.FieldOwner("calaf-e2e"), client.ForceOwnership)
		})
		if err != nil {
			return "", err
		}
	}
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return "", err
	}
	direct, err := framework.AccountKubeconfig(ctx, cs, suite.kubeconfig, dir, tenant, "calaf-operator")
	if err != nil {
		return "", err
	}
	return proxiedKubeconfig(config, direct, dir)
}

// proxiedKubeconfig serves a reverse proxy to the API server on loopback that records
// every request's path, and writes a kubeconfig of the account of kubeconfig through it.
func proxiedKubeconfig(config *rest.Config, kubeconfig, dir string) (string, error) {
	account, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", err
	}
	target, err := url.Parse(config.Host)
	if err != nil {
		return "", err
	}
	tlsConfig, err := rest.TLSConfigFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: config.CAData, CAFile: config.CAFile, ServerName: config.ServerName}})
	if err != nil {
		return "", err
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	suite.proxy = &requestLog{paths: map[string]int{}}
	upstream := &http.Transport{TLSClientConfig: tlsConfig, DisableCompression: true, Proxy: nil}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			resp, err := upstream.RoundTrip(r)
			if err == nil && resp.StatusCode >= 400 && resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusConflict {
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
				resp.Body.Close()
				resp.Body = io.NopCloser(bytes.NewReader(body))
				fmt.Fprintf(os.Stderr, "proxy: %s %s (authorization %t): %d %s %s: %q\n", r.Method, r.URL.Path, r.Header.Get("Authorization") != "",
					resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding"), body)
			}
			return resp, err
		}),
		FlushInterval: -1, // watches stream
	}
	// Over TLS: a kubeconfig's credentials are used only with an https server.
	certPEM, keyPEM, err := framework.SelfSignedCertificate("127.0.0.1")
	if err != nil {
		return "", err
	}
	certificate, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return "", err
	}
	listener, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{certificate}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return "", err
	}
	server := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		suite.proxy.add(r.URL.Path)
		proxy.ServeHTTP(w, r)
	})}
	go server.Serve(listener) //nolint:errcheck // ends with the test process
	proxied := clientcmdapi.NewConfig()
	proxied.Clusters["proxy"] = &clientcmdapi.Cluster{Server: "https://" + listener.Addr().String(), CertificateAuthorityData: certPEM}
	proxied.AuthInfos["operator"] = account.AuthInfos[account.Contexts[account.CurrentContext].AuthInfo]
	proxied.Contexts["operator"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "operator", Namespace: tenant}
	proxied.CurrentContext = "operator"
	path := filepath.Join(dir, "operator-proxied.kubeconfig")
	if err := clientcmd.WriteToFile(*proxied, path); err != nil {
		return "", err
	}
	return path, checkProxied(path)
}

// checkProxied makes sure the proxied kubeconfig reaches the API server as the operator:
// discovery answers, and the operator may list its namespace's ConfigMaps.
func checkProxied(kubeconfig string) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	if _, err := cs.Discovery().ServerGroups(); err != nil {
		return fmt.Errorf("discovery through the proxy: %w", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(tenant).List(context.Background(), metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("the operator's account lists ConfigMaps through the proxy: %w", err)
	}
	return nil
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
