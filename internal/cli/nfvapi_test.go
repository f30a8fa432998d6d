package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// calaf nfv-api's connection to the API server has the rate of --kube-api-qps and
// --kube-api-burst (each caller's client gets a limiter of its own at these), not
// client-go's default of 5 per second.
func TestNFVAPIClientRate(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		qps   float32
		burst int
	}{
		{nil, 100, 300},
		{[]string{"--kube-api-qps", "40", "--kube-api-burst", "80"}, 40, 80},
	} {
		f := &nfvAPIFlags{}
		if err := nfvAPICommand(f).ParseFlags(append([]string{"--kubeconfig", kubeconfig}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		config, err := f.restConfig()
		if err != nil {
			t.Fatal(err)
		}
		if config.QPS != tc.qps || config.Burst != tc.burst || config.UserAgent != "calaf-nfv-api" {
			t.Errorf("%v: QPS %v, burst %d, user agent %q; want %v, %d, calaf-nfv-api", tc.args, config.QPS, config.Burst, config.UserAgent, tc.qps, tc.burst)
		}
	}
}
