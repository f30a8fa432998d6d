//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/nfvapi/contract"
	"calaf.io/calaf/test/e2e/framework"
)

// nfvAPI is calaf nfv-api run as a process of its own, as its service account with the
// RBAC of deploy/nfv-api, behind a proxy that checks every answer against the OpenAPI
// document.
type nfvAPI struct {
	url       string // the proxy's, what clients use
	exchanges *exchanges
	log       string
	pid       int
	// seen are the occurrences waitOccurrence returned.
	seen map[string]bool
}

// exchanges records what the proxy saw and what broke the contract.
type exchanges struct {
	lock     sync.Mutex
	count    int
	breaches []string
}

func (e *exchanges) add(breach error) {
	e.lock.Lock()
	defer e.lock.Unlock()
	e.count++
	if breach != nil {
		e.breaches = append(e.breaches, breach.Error())
	}
}

// expectConforming fails the test with every answer that broke the contract, and when none
// was seen.
func (e *exchanges) expectConforming(t *testing.T) {
	t.Helper()
	e.lock.Lock()
	defer e.lock.Unlock()
	if e.count == 0 {
		t.Error("the contract proxy saw no exchange: it checked nothing")
	}
	for _, b := range e.breaches {
		t.Errorf("an answer broke the OpenAPI document: %s", b)
	}
	t.Logf("%d exchanges checked against the OpenAPI document", e.count)
}

// startNFVAPI runs calaf nfv-api with args (plain HTTP on a free local port) until the
// test ends.
func startNFVAPI(t *testing.T, args ...string) *nfvAPI {
	t.Helper()
	ctx := context.Background()
	c := framework.Connect(t)
	for _, file := range []string{"deploy/nfv-api/rbac.yaml", "deploy/nfv-api/nfvo-role.yaml"} {
		NewWithT(t).Expect(framework.ApplyFile(ctx, suite.client, filepath.Join(framework.RepoRoot(), file))).To(Succeed())
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: framework.OperatorNamespace, Name: "calaf-nfv-api"}}
	NewWithT(t).Expect(client.IgnoreAlreadyExists(suite.client.Create(ctx, sa))).To(Succeed())
	dir := t.TempDir()
	kubeconfig, err := framework.AccountKubeconfig(ctx, c.Clientset, suite.kubeconfig, dir, framework.OperatorNamespace, "calaf-nfv-api")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	addr := listener.Addr().String()
	listener.Close()
	logPath := filepath.Join(dir, "nfv-api.log")
	logFile, err := os.Create(logPath)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(suite.calaf, append([]string{"nfv-api", "--kubeconfig=" + kubeconfig, "--plain-http", "--listen=" + addr}, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	NewWithT(t).Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_, _ = cmd.Process.Wait()
		logFile.Close()
	})
	NewWithT(t).Eventually(func() error {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed(), "calaf nfv-api did not start: %s", readFile(logPath))

	api := &nfvAPI{exchanges: &exchanges{}, log: logPath, pid: cmd.Process.Pid, seen: map[string]bool{}}
	api.url = contractProxy(t, "http://"+addr, api.exchanges)
	return api
}

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

// contractProxy serves a reverse proxy to target that checks each answer against the
// OpenAPI document, and returns its URL.
func contractProxy(t *testing.T, target string, seen *exchanges) string {
	t.Helper()
	v, err := contract.New()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	to, _ := url.Parse(target)
	proxy := httputil.NewSingleHostReverseProxy(to)
	proxy.ModifyResponse = func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		seen.add(v.Response(resp.Request.Method, resp.Request.URL, resp.Request.Header, resp.StatusCode, resp.Header, body))
		return nil
	}
	server := httptest.NewServer(proxy)
	t.Cleanup(server.Close)
	return server.URL
}

// nfvo is an NFVO: a service account of a namespace with the ClusterRole calaf-nfvo bound
// there, and a token.
type nfvo struct {
	namespace, token string
}

func newNFVO(t *testing.T, namespace string) nfvo {
	t.Helper()
	ctx := context.Background()
	c := framework.Connect(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "nfvo"}}
	NewWithT(t).Expect(client.IgnoreAlreadyExists(suite.client.Create(ctx, sa))).To(Succeed())
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "nfvo"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "calaf-nfvo"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "nfvo", Namespace: namespace}}}
	NewWithT(t).Expect(client.IgnoreAlreadyExists(suite.client.Create(ctx, binding))).To(Succeed())
	token, err := c.Clientset.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, "nfvo",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return nfvo{namespace: namespace, token: token.Status.Token}
}

// openstack runs OpenStack's own client against the NFV API as an NFVO (its token sent as
// X-Auth-Token, as the client does without Keystone) and returns its output and exit code.
func (api *nfvAPI) openstack(t *testing.T, who nfvo, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The client has its VNF package commands (SOL005) under API version 1 only, its
	// vnflcm ones under 2.
	version := "2"
	if len(args) > 1 && args[0] == "vnf" && args[1] == "package" {
		version = "1"
	}
	full := append([]string{"--os-auth-type", "admin_token", "--os-token", who.token, "--os-endpoint", api.url, "--os-tacker-api-version", version}, args...)
	cmd := exec.CommandContext(ctx, "openstack", full...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("openstack %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), code
}

// mustOpenstack runs the client and fails the test unless it exits 0.
func (api *nfvAPI) mustOpenstack(t *testing.T, who nfvo, args ...string) string {
	t.Helper()
	out, code := api.openstack(t, who, args...)
	if code != 0 {
		t.Fatalf("openstack %s exited %d:\n%s\nnfv-api log:\n%s", strings.Join(args, " "), code, out, tail(readFile(api.log), 20))
	}
	return out
}

// openstackJSON runs a client command with -f json and decodes its output.
func (api *nfvAPI) openstackJSON(t *testing.T, who nfvo, v any, args ...string) {
	t.Helper()
	out := api.mustOpenstack(t, who, append(args, "-f", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("openstack %s -f json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// receiver is an NFVO's notification endpoint: it answers the subscription's test GET with
// 204 and records every POSTed notification, checked against the OpenAPI document and
// its credentials.
type receiver struct {
	url      string
	lock     sync.Mutex
	received []map[string]any
	problems []string
	gets     int
}

func newReceiver(t *testing.T, user, password string) *receiver {
	t.Helper()
	v, err := contract.New()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	r := &receiver{}
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.lock.Lock()
		defer r.lock.Unlock()
		if u, p, ok := req.BasicAuth(); !ok || u != user || p != password {
			r.problems = append(r.problems, fmt.Sprintf("%s without the subscription's credentials", req.Method))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if req.Method == http.MethodGet {
			r.gets++
			w.WriteHeader(http.StatusNoContent)
			return
		}
		body, _ := io.ReadAll(req.Body)
		var n map[string]any
		if err := json.Unmarshal(body, &n); err != nil {
			r.problems = append(r.problems, "a notification that is not JSON: "+string(body))
		} else if err := v.Notification(fmt.Sprint(n["notificationType"]), body); err != nil {
			r.problems = append(r.problems, err.Error())
		}
		r.received = append(r.received, n)
		w.WriteHeader(http.StatusNoContent)
	}))
	// On the one loopback address the operator's outbound policy allows.
	listener, err := net.Listen("tcp", net.JoinHostPort(subscriberAddress, "0"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	server.Listener = listener
	server.Start()
	t.Cleanup(server.Close)
	r.url = server.URL
	return r
}

// getCount is how many test GETs the receiver answered.
func (r *receiver) getCount() int {
	r.lock.Lock()
	defer r.lock.Unlock()
	return r.gets
}

// notifications returns what was received so far.
func (r *receiver) notifications() []map[string]any {
	r.lock.Lock()
	defer r.lock.Unlock()
	return append([]map[string]any(nil), r.received...)
}
