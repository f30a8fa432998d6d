package kubeconfig

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// kubeconfigWith is a kubeconfig of one context whose cluster and user carry the YAML
// lines given (indented under cluster: and user:).
func kubeconfigWith(cluster, user string) []byte {
	return []byte(`apiVersion: v1
kind: Config
clusters:
- name: site
  cluster:
` + indent(cluster) + `
users:
- name: tenant
  user:
` + indent(user) + `
contexts:
- name: site
  context: {cluster: site, user: tenant}
current-context: site
`)
}

func indent(lines string) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		out = append(out, "    "+line)
	}
	return strings.Join(out, "\n")
}

const server = "server: https://site-a.example:6443"

func TestParseKeepsOnlyServerAndWrittenCredentials(t *testing.T) {
	target, err := Parse(kubeconfigWith(server+"\ncertificate-authority-data: Q0E=\ntls-server-name: api.site-a", "token: s3cret\nas: deployer"))
	if err != nil {
		t.Fatal(err)
	}
	c := target.Config
	if c.Host != "https://site-a.example:6443" || string(c.CAData) != "CA" || c.ServerName != "api.site-a" || c.BearerToken != "s3cret" || c.Impersonate.UserName != "deployer" {
		t.Errorf("config = %+v", c)
	}
	if c.ExecProvider != nil || c.AuthProvider != nil || c.Proxy != nil || c.Insecure || c.CAFile != "" || c.BearerTokenFile != "" {
		t.Errorf("config keeps more than the server and credentials: %+v", c)
	}
	other, err := Parse(kubeconfigWith(server+"\ncertificate-authority-data: Q0E=\ntls-server-name: api.site-a", "token: other\nas: deployer"))
	if err != nil {
		t.Fatal(err)
	}
	if target.Digest == other.Digest || strings.Contains(target.Digest, "s3cret") {
		t.Errorf("digests %s and %s: other credentials must give another digest, and none reveals them", target.Digest, other.Digest)
	}
}

func TestParseRefusesWhatRunsReadsOrSkips(t *testing.T) {
	for name, c := range map[string]struct {
		cluster, user, want string
	}{
		"exec plugin":        {server, "exec:\n  apiVersion: client.authentication.k8s.io/v1\n  command: /bin/sh\n  args: [-c, id]", "runs a command (exec)"},
		"auth provider":      {server, "auth-provider:\n  name: oidc\n  config: {idp-issuer-url: https://issuer}", "auth-provider helper"},
		"token file":         {server, "tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token", "tokenFile"},
		"client cert file":   {server, "client-certificate: /etc/calaf/cert\nclient-key: /etc/calaf/key", "client-certificate"},
		"CA file":            {server + "\ncertificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt", "token: t", "certificate-authority-data"},
		"insecure":           {server + "\ninsecure-skip-tls-verify: true", "token: t", "insecure-skip-tls-verify"},
		"proxy":              {server + "\nproxy-url: http://proxy:3128", "token: t", "proxy-url"},
		"plain http":         {"server: http://site-a.example:8080", "token: t", "not an https URL"},
		"no server":          {"certificate-authority-data: Q0E=", "token: t", "has no server"},
		"credentials in URL": {"server: https://admin:pw@site-a.example", "token: t", "must be https://host"},
		"half a key pair":    {server, "client-certificate-data: Q0VSVA==", "without its key"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(kubeconfigWith(c.cluster, c.user))
			if !IsRefused(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse: %v; want a refusal saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), "admin:pw") || strings.Contains(err.Error(), "pw@") {
				t.Errorf("the refusal repeats credentials: %v", err)
			}
		})
	}
}

func TestParseRefusesWhatIsNoKubeconfig(t *testing.T) {
	for name, data := range map[string]string{
		"garbage":          "{{{ not yaml",
		"no context":       "apiVersion: v1\nkind: Config\nclusters: []\n",
		"dangling context": "apiVersion: v1\nkind: Config\ncurrent-context: gone\n",
		"too large":        strings.Repeat("#", MaxBytes+1),
	} {
		if _, err := Parse([]byte(data)); !IsRefused(err) {
			t.Errorf("%s: Parse = %v, want a refusal", name, err)
		}
	}
}

func TestVimConnectionInfoBecomesAKubeconfig(t *testing.T) {
	raw := json.RawMessage(`{
	  "vim2": {"vimId": "b", "vimType": "ETSINFV.KUBERNETES.V_1", "interfaceInfo": {"endpoint": "https://10.0.0.2:6443"}, "accessInfo": {"username": "u", "password": "p"}},
	  "vim1": {"vimId": "a", "vimType": "kubernetes", "interfaceInfo": {"endpoint": "https://10.0.0.1:6443", "ssl_ca_cert": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
	           "accessInfo": {"bearer_token": "tok", "region": "RegionOne"}, "extra": {"k": "v"}}}`)
	vim, err := FromVimConnectionInfo(raw)
	if err != nil {
		t.Fatal(err)
	}
	if vim.Name != "vim1" || vim.VimID != "a" || vim.Server != "https://10.0.0.1:6443" {
		t.Errorf("vim = %+v, want vim1 (the first Kubernetes VIM by name)", vim)
	}
	target, err := Parse(vim.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if target.Config.BearerToken != "tok" || !strings.Contains(string(target.Config.CAData), "BEGIN CERTIFICATE") {
		t.Errorf("kubeconfig config = %+v", target.Config)
	}
	// SOL003 v1 (Tacker's v1 API): a list, each VIM named by its id.
	listed, err := FromVimConnectionInfo(json.RawMessage(`[{"id": "os", "vimType": "openstack"}, {"id": "k8s-east", "vimId": "c", "vimType": "kubernetes",
	  "interfaceInfo": {"endpoint": "https://10.0.0.3:6443"}, "accessInfo": {"bearer_token": "tok3"}}]`))
	if err != nil || listed.Name != "k8s-east" || listed.Server != "https://10.0.0.3:6443" {
		t.Errorf("a v1 list: %+v, %v; want k8s-east", listed, err)
	}
	basic, err := FromVimConnectionInfo(json.RawMessage(`{"v": {"vimType": "ETSINFV.HELM.V_3", "interfaceInfo": {"endpoint": "https://h:6443"}, "accessInfo": {"username": "u", "password": "p"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if target, err := Parse(basic.Kubeconfig); err != nil || target.Config.Username != "u" || target.Config.Password != "p" {
		t.Errorf("basic credentials: %+v, %v", target, err)
	}
}

func TestVimConnectionInfoRefusals(t *testing.T) {
	for name, c := range map[string]struct{ raw, want string }{
		"no endpoint":    {`{"vim1": {"vimId": "a", "vimType": "kubernetes", "accessInfo": {"bearer_token": "t"}}}`, "no interfaceInfo.endpoint"},
		"v1 list member": {`[{"id": "x", "vimType": "kubernetes", "interfaceInfo": {"endpoint": "https://a:6443"}}]`, "vimConnectionInfo.x has no credentials"},
		"list of lists":  {`[["x"]]`, "vimConnectionInfo[0]"},
		"no credentials": {`{"vim1": {"vimType": "kubernetes", "interfaceInfo": {"endpoint": "https://a:6443"}}}`, "no credentials"},
		"plain http":     {`{"vim1": {"vimType": "kubernetes", "interfaceInfo": {"endpoint": "http://a:8080"}, "accessInfo": {"bearer_token": "t"}}}`, "vimConnectionInfo.vim1: cluster"},
		"not a map":      {`"vim"`, "not a map"},
	} {
		_, err := FromVimConnectionInfo(json.RawMessage(c.raw))
		if !IsRefused(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want a refusal saying %q", name, err, c.want)
		}
	}
	for _, raw := range []string{``, `null`, `{}`, `{"vim1": {"vimId": "k8s", "vimType": "ETSINFV.KUBERNETES.V_1"}}`, `[{"id": "x", "vimId": "a", "vimType": "kubernetes"}]`, `[]`, `{"os": {"vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3", "interfaceInfo": {"endpoint": "https://k"}}}`} {
		if _, err := FromVimConnectionInfo(json.RawMessage(raw)); !errors.Is(err, ErrNoVIM) {
			t.Errorf("%q: %v, want ErrNoVIM", raw, err)
		}
	}
}
