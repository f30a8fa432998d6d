package kubeconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// SecretKey is the key of the kubeconfig in the Secrets made from a vimConnectionInfo
// (Flux's and Cluster API's layout: "value").
const SecretKey = "value"

// kubernetesVIMTypes are the vimType values of a Kubernetes VIM: SOL003's and Tacker's.
var kubernetesVIMTypes = []string{"ETSINFV.KUBERNETES.V_1", "ETSINFV.HELM.V_3", "kubernetes"}

// VIM is the Kubernetes VIM of a SOL003 vimConnectionInfo, made a kubeconfig.
type VIM struct {
	// Name is its key in the vimConnectionInfo map ("vim1").
	Name string
	// VimID is its vimId.
	VimID string
	// Kubeconfig holds its endpoint and credentials (Parse accepts it).
	Kubeconfig []byte
	// Server is its endpoint.
	Server string
}

// vimConnection is one member of a vimConnectionInfo, as SOL003 and Tacker write it.
type vimConnection struct {
	VimID         string `json:"vimId"`
	VimType       string `json:"vimType"`
	InterfaceInfo struct {
		Endpoint  string `json:"endpoint"`
		SSLCACert string `json:"ssl_ca_cert"`
	} `json:"interfaceInfo"`
	AccessInfo vimAccess `json:"accessInfo"`
}

// vimsByName reads a vimConnectionInfo: SOL003 v2's map of VIMs by name, or v1's list of
// them, each named by its id (or "vim<index>" without one).
func vimsByName(raw []byte) (map[string]json.RawMessage, error) {
	if raw[0] != '[' {
		var vims map[string]json.RawMessage
		if err := json.Unmarshal(raw, &vims); err != nil {
			return nil, refused("vimConnectionInfo is not a map of VIMs: %s", firstLine(err.Error()))
		}
		return vims, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, refused("vimConnectionInfo is not a list of VIMs: %s", firstLine(err.Error()))
	}
	vims := make(map[string]json.RawMessage, len(list))
	for i, member := range list {
		var named struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(member, &named); err != nil {
			return nil, refused("vimConnectionInfo[%d]: %s", i, firstLine(err.Error()))
		}
		name := named.ID
		if _, taken := vims[name]; name == "" || taken {
			name = fmt.Sprintf("vim%d", i)
		}
		vims[name] = member
	}
	return vims, nil
}

// vimAccess is a VIM's accessInfo.
type vimAccess struct {
	BearerToken string `json:"bearer_token"`
	Username    string `json:"username"`
	Password    string `json:"password"`
}

// ErrNoVIM says that a vimConnectionInfo holds no Kubernetes VIM with its endpoint and
// credentials.
var ErrNoVIM = errors.New("vimConnectionInfo holds no Kubernetes VIM")

// FromVimConnectionInfo makes a kubeconfig of the Kubernetes VIM of a SOL003
// vimConnectionInfo (v2's map of VIMs by name, or v1's list of them by id): interfaceInfo.endpoint (the API server),
// interfaceInfo.ssl_ca_cert (its CA, PEM; without it the system's roots are trusted),
// accessInfo.bearer_token, or accessInfo.username and password — as Tacker reads them. With
// several Kubernetes VIMs the first by name is taken. It returns ErrNoVIM when there is
// none (a null or empty map, or VIMs of other types), and a *RefusedError for one that
// cannot be used: an endpoint without credentials or credentials without an
// endpoint, or what Parse refuses. A Kubernetes VIM known by its id alone is the VIM of
// the VNFM itself (the operator's own cluster), as Tacker's default VIM is: ErrNoVIM.
func FromVimConnectionInfo(raw json.RawMessage) (*VIM, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil, ErrNoVIM
	}
	vims, err := vimsByName(trimmed)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(vims))
	for name := range vims {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		var vim vimConnection
		if err := json.Unmarshal(vims[name], &vim); err != nil {
			return nil, refused("vimConnectionInfo.%s: %s", name, firstLine(err.Error()))
		}
		if !slices.ContainsFunc(kubernetesVIMTypes, func(t string) bool { return strings.EqualFold(t, vim.VimType) }) {
			continue
		}
		if vim.InterfaceInfo.Endpoint == "" && vim.AccessInfo == (vimAccess{}) {
			continue // known by its id alone: the VIM of the VNFM itself
		}
		return vimKubeconfig(name, vim)
	}
	return nil, ErrNoVIM
}

// vimKubeconfig writes the kubeconfig of one Kubernetes VIM and checks it with Parse.
func vimKubeconfig(name string, vim vimConnection) (*VIM, error) {
	at := "vimConnectionInfo." + name
	access := vim.AccessInfo
	switch {
	case vim.InterfaceInfo.Endpoint == "":
		return nil, refused("%s has credentials but no interfaceInfo.endpoint", at)
	case access.BearerToken == "" && (access.Username == "" || access.Password == ""):
		return nil, refused("%s has no credentials: accessInfo.bearer_token, or accessInfo.username and password", at)
	}
	user := &clientcmdapi.AuthInfo{Token: access.BearerToken}
	if access.BearerToken == "" {
		user.Username, user.Password = access.Username, access.Password
	}
	cluster := &clientcmdapi.Cluster{Server: vim.InterfaceInfo.Endpoint}
	if vim.InterfaceInfo.SSLCACert != "" {
		cluster.CertificateAuthorityData = []byte(vim.InterfaceInfo.SSLCACert)
	}
	config := clientcmdapi.NewConfig()
	config.Clusters["vim"] = cluster
	config.AuthInfos["vim"] = user
	config.Contexts["vim"] = &clientcmdapi.Context{Cluster: "vim", AuthInfo: "vim"}
	config.CurrentContext = "vim"
	data, err := clientcmd.Write(*config)
	if err != nil {
		return nil, fmt.Errorf("%s: writing its kubeconfig: %w", at, err)
	}
	target, err := Parse(data)
	if err != nil {
		var r *RefusedError
		if errors.As(err, &r) {
			return nil, refused("%s: %s", at, r.Reason)
		}
		return nil, err
	}
	return &VIM{Name: name, VimID: vim.VimID, Kubeconfig: data, Server: target.Server}, nil
}

// SecretName is the name of the Secret that holds the kubeconfig of a Service's VIM.
func SecretName(service string) string { return service + "-vim" }

// Secret returns the Secret (SecretName, in the Service's namespace) that holds the VIM's
// kubeconfig under SecretKey — what a Service's spec.kubeConfig.secretRef names. Its
// owner (the Service) is for the caller to set once the Service exists.
func (v *VIM) Secret(namespace, service string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: SecretName(service),
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "calaf"},
			Annotations: map[string]string{"calaf.io/vim-id": v.VimID}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{SecretKey: v.Kubeconfig},
	}
}
