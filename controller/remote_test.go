package controller_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"calaf.io/calaf/internal/operator"
)

// remote is a second API server (its own etcd) standing for a cluster Services deploy
// into, reached through a proxy the tests can cut (the cluster unreachable) and restore.
var remote struct {
	once sync.Once
	err  error
	env  *envtest.Environment
	// config is an admin's configuration of the remote cluster (straight).
	config *rest.Config
	// client is an admin's client of the remote cluster (straight, not through the proxy).
	client client.Client
	proxy  *cutProxy
	// kubeconfig reaches the remote cluster through the proxy, as an admin.
	kubeconfig []byte
	server     string
}

// remoteCluster starts the remote cluster once for the package's tests.
func remoteCluster(t *testing.T) {
	t.Helper()
	remote.once.Do(func() { remote.err = startRemote() })
	if remote.err != nil {
		t.Fatalf("starting the remote cluster: %v", remote.err)
	}
}

func startRemote() error {
	// Calaf's resources are known there: a site's operator serves them (delegate_test.go).
	remote.env = &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "deploy", "crd")}, ErrorIfCRDPathMissing: true}
	config, err := remote.env.Start()
	if err != nil {
		return err
	}
	remote.config = config
	if remote.client, err = client.New(config, client.Options{Scheme: operator.NewScheme()}); err != nil {
		return err
	}
	target, err := url.Parse(config.Host)
	if err != nil {
		return err
	}
	if remote.proxy, err = newCutProxy(target.Host); err != nil {
		return err
	}
	user, err := remote.env.AddUser(envtest.User{Name: "site-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return err
	}
	kc, err := clientcmd.Load(data)
	if err != nil {
		return err
	}
	remote.server = "https://" + remote.proxy.address
	for _, cluster := range kc.Clusters {
		cluster.Server = remote.server
	}
	remote.kubeconfig, err = clientcmd.Write(*kc)
	return err
}

// stopRemote stops the remote cluster and the third one (serviceset_test.go), if they
// were started.
func stopRemote() {
	if remote.env != nil {
		remote.proxy.close()
		_ = remote.env.Stop()
	}
	if third.env != nil {
		_ = third.env.Stop()
	}
}

// remoteNamespace creates, in the remote cluster, the namespace of the same name as a
// local one (a Service deploys into the namespace of its own name there).
func remoteNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	NewWithT(t).Expect(remote.client.Create(context.Background(), ns)).To(Succeed())
}

// kubeconfigSecret creates a Secret holding a kubeconfig under key.
func kubeconfigSecret(t *testing.T, namespace, name, key string, kubeconfig []byte) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string][]byte{key: kubeconfig}}
	NewWithT(t).Expect(env.client.Create(context.Background(), secret)).To(Succeed())
}

// cutProxy forwards TCP connections to an address until it is cut: then it refuses new
// connections and breaks those open, until it is restored.
type cutProxy struct {
	address, target string
	mu              sync.Mutex
	listener        net.Listener
	conns           map[net.Conn]bool
}

func newCutProxy(target string) (*cutProxy, error) {
	p := &cutProxy{target: target, conns: map[net.Conn]bool{}}
	if err := p.listen("127.0.0.1:0"); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *cutProxy) listen(address string) error {
	listener, err := net.Listen("tcp", address)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.listener, p.address = listener, listener.Addr().String()
	p.mu.Unlock()
	go p.serve(listener)
	return nil
}

func (p *cutProxy) serve(listener net.Listener) {
	for {
		conn, err := listener.Accept()
		if err != nil {
			return
		}
		go p.forward(conn)
	}
}

func (p *cutProxy) forward(conn net.Conn) {
	upstream, err := net.Dial("tcp", p.target)
	if err != nil {
		conn.Close()
		return
	}
	p.mu.Lock()
	p.conns[conn], p.conns[upstream] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(upstream, conn); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, upstream); done <- struct{}{} }()
	<-done
	conn.Close()
	upstream.Close()
	p.mu.Lock()
	delete(p.conns, conn)
	delete(p.conns, upstream)
	p.mu.Unlock()
}

// cut refuses new connections and breaks the open ones.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.listener.Close()
	for conn := range p.conns {
		conn.Close()
	}
}

// restore listens again on the same address.
func (p *cutProxy) restore(t *testing.T) {
	t.Helper()
	err := p.listen(p.address)
	for i := 0; err != nil && strings.Contains(err.Error(), "address already in use") && i < 50; i++ {
		err = p.listen(p.address)
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatalf("restoring the proxy: %v", err)
	}
}

func (p *cutProxy) close() { p.cut() }
