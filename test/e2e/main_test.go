//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/internal/operator"
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
	// webhook is the URL of the operator's webhook server (push, alerts); token its token.
	webhook, token string
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

// webhookFlags gives the operator a webhook server on a free local port with a token
// (the alert tests post to it).
func webhookFlags(dir string) ([]string, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := listener.Addr().String()
	listener.Close()
	suite.webhook, suite.token = "http://"+addr, "e2e-webhook-token"
	tokenFile := filepath.Join(dir, "webhook-token")
	if err := os.WriteFile(tokenFile, []byte(suite.token), 0o600); err != nil {
		return nil, err
	}
	return []string{"--webhook-bind-address=" + addr, "--webhook-token-file=" + tokenFile}, nil
}
