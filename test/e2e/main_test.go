//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/internal/outbound"
	"calaf.io/calaf/test/e2e/framework"
)

// suite is shared by the node-mode tests: the calaf binary, the operator process, and a
// controller-runtime client with Calaf's types.
var suite struct {
	calaf      string
	kubeconfig string
	// operatorKubeconfig acts as the operator's service account (deploy/rbac).
	operatorKubeconfig string
	operator           *framework.Operator
	client             client.WithWatch
	// webhook is the URL of the operator's webhook server (push, alerts), over TLS;
	// token the Alertmanager receiver's token, pushToken the push webhook's;
	// webhookClient trusts its certificate.
	webhook, token, pushToken string
	webhookClient             *http.Client
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
	suite.kubeconfig = framework.KubeconfigPath()
	if suite.client, err = client.NewWithWatch(config, client.Options{Scheme: operator.NewScheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "calaf-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if suite.calaf, err = framework.BuildCalaf(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := framework.InstallCRDs(ctx, suite.client); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The operator runs as its service account, with the RBAC users install from deploy/.
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := framework.InstallOperatorRBAC(ctx, suite.client); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if suite.operatorKubeconfig, err = framework.OperatorKubeconfig(ctx, cs, suite.kubeconfig, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logPath := filepath.Join(os.TempDir(), "calaf-e2e-operator.log")
	os.Remove(logPath)
	webhookArgs, err := webhookFlags(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	suite.operator = &framework.Operator{
		Binary:  suite.calaf,
		LogPath: logPath,
		Args:    append([]string{"--kubeconfig=" + suite.operatorKubeconfig, "--progress-interval=2s", "--package-cache-dir=" + filepath.Join(dir, "packages")}, webhookArgs...),
	}
	if err := suite.operator.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	suite.operator.Stop()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "operator log (last lines of %s):\n%s\n", logPath, suite.operator.Tail(60))
	}
	return code
}

// webhookFlags gives the operator a webhook server on a free local port, over TLS with a
// certificate made for it, the push and the Alertmanager receivers each with its own
// token (the alert tests post to it); and the outbound policy's allowlist: the tests'
// subscribers listen on 127.0.0.2, the rest of loopback stays refused.
func webhookFlags(dir string) ([]string, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := listener.Addr().String()
	listener.Close()
	suite.webhook, suite.token, suite.pushToken = "https://"+addr, "e2e-alert-token", "e2e-webhook-token"
	files := map[string]string{"alert-token": suite.token, "webhook-token": suite.pushToken}
	certPEM, keyPEM, err := framework.SelfSignedCertificate("127.0.0.1")
	if err != nil {
		return nil, err
	}
	files["tls.crt"], files["tls.key"] = string(certPEM), string(keyPEM)
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	suite.webhookClient = &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	return []string{"--webhook-bind-address=" + addr, "--webhook-token-file=" + filepath.Join(dir, "webhook-token"),
		"--alert-token-file=" + filepath.Join(dir, "alert-token"),
		"--webhook-tls-cert-file=" + filepath.Join(dir, "tls.crt"), "--webhook-tls-key-file=" + filepath.Join(dir, "tls.key"),
		"--outbound-allow=" + subscriberAddress + "/32",
		// The clusters Services deploy into (spec.kubeConfig) listen on loopback here: the
		// second control plane (test/ground/remote.sh) and the one-node cluster itself.
		"--target-cluster-allow=127.0.0.1/32",
		"--notification-backoff=" + notifyBackoff.Base.String(), "--notification-backoff-max=" + notifyBackoff.Max.String()}, nil
}

// notifyBackoff is the operator's schedule of retries of a failed notification: short
// enough that an endpoint back up is notified within 20 s.
var notifyBackoff = outbound.Backoff{Base: time.Second, Max: 20 * time.Second}

// subscriberAddress is where the tests' subscribers listen: the one loopback address the
// operator's outbound policy allows.
const subscriberAddress = "127.0.0.2"
