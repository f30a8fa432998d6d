package controller

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/clusters"
	"calaf.io/calaf/internal/lru"
	"calaf.io/calaf/orchestration"
	"calaf.io/calaf/render"
	sourcepkg "calaf.io/calaf/source"
)

// DefaultIdentityCacheSize bounds the clients kept per impersonated identity.
const DefaultIdentityCacheSize = 1024

// Identities makes and keeps the clients that act as service accounts. They share the
// operator's HTTP connections and REST mapper: an identity costs one header per request
// and a small client, kept in a bounded LRU (a client evicted is made again on demand).
type Identities struct {
	config  *rest.Config
	base    *http.Client
	scheme  *runtime.Scheme
	mapper  apimeta.RESTMapper
	clients *lru.Cache[client.Client]
	// decisions are recent answers of access reviews, by identity and question.
	decisions *lru.Cache[decision]
}

// NewIdentities returns the clients of impersonated identities on the operator's config
// and HTTP client (whose credentials impersonate), keeping at most size of them.
func NewIdentities(config *rest.Config, base *http.Client, scheme *runtime.Scheme, mapper apimeta.RESTMapper, size int) *Identities {
	if size <= 0 {
		size = DefaultIdentityCacheSize
	}
	return &Identities{config: config, base: base, scheme: scheme, mapper: mapper, clients: lru.New[client.Client](size), decisions: lru.New[decision](16 * size)}
}

// ServiceAccountUser is the user name of a service account, as impersonation names it.
func ServiceAccountUser(namespace, name string) string {
	return fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name)
}

// Client returns a client (uncached) whose every request acts as user.
func (ids *Identities) Client(user string) (client.Client, error) {
	if c, ok := ids.clients.Get(user); ok {
		return c, nil
	}
	hc := &http.Client{
		Transport: transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{UserName: user}, ids.base.Transport),
		Timeout:   ids.base.Timeout,
	}
	c, err := client.New(ids.config, client.Options{HTTPClient: hc, Scheme: ids.scheme, Mapper: ids.mapper})
	if err != nil {
		return nil, err
	}
	ids.clients.Put(user, c)
	return c, nil
}

// access is how one reconcile reads and writes a Service's objects: as the operator
// (cached reads for the watched kinds) or, for a Service with a service account (its own
// or, in lockdown mode, the operator's default), every read and write as that account.
type access struct {
	// account is the service account acted as in the operator's cluster; empty for the
	// operator itself.
	account string
	// local reads the operator's cluster as the Service acts there (its inputs, its
	// kubeconfig Secret), whichever cluster its objects are in.
	local client.Reader
	// cluster is the cluster the Service's objects are in (spec.kubeConfig), acted in as
	// its kubeconfig's identity; nil for the operator's own.
	cluster *clusters.Cluster
	// kubeconfig names the Secret of spec.kubeConfig, for messages.
	kubeconfig string
	// cached reads objects, from the operator's cache when it is the operator's, from
	// the target cluster's cache for a target cluster.
	cached client.Reader
	// direct reads from the API server.
	direct client.Reader
	writer client.Client
	// manager applies staged objects (and waits) with writer.
	manager *ssa.ResourceManager
	// home is the access of the operator's cluster, as the Service acts there, when its
	// objects are in a target cluster: where its child Services are (route).
	home *access
	// delegating: the Service is handed to its target cluster's operator, its one Service
	// object applied there (route keeps it there).
	delegating bool
}

// route is the access of the objects of a kind: the Services made of substituted nodes
// are in the operator's cluster beside their parent, whatever cluster the parent's other
// objects are in.
func (a *access) route(gvk schema.GroupVersionKind) *access {
	if a.home != nil && !a.delegating && isCalafService(gvk) {
		return a.home
	}
	return a
}

// user is the impersonated user name, empty for the operator, and for a target cluster
// (acted in as its kubeconfig's identity).
func (a *access) user(namespace string) string {
	if a.account == "" || a.cluster != nil {
		return ""
	}
	return ServiceAccountUser(namespace, a.account)
}

// execCluster is the cluster the Service's pods run in, for the orchestrator's exec
// streams; nil for the operator's own.
func (a *access) execCluster() *orchestration.Cluster {
	if a.cluster == nil {
		return nil
	}
	return &orchestration.Cluster{Key: a.cluster.Key(), Config: a.cluster.Config}
}

// decider identifies who the access reviews of authorize are asked as, for the reuse of
// their answers.
func (a *access) decider(namespace string) string {
	if a.cluster != nil {
		return "cluster:" + a.cluster.Key()
	}
	return a.user(namespace)
}

// identity says, for messages, who acts on the Service's objects.
func (a *access) identity() string {
	if a.cluster != nil {
		return "the identity of kubeconfig Secret " + a.kubeconfig
	}
	return "service account " + a.account
}

// restricted tells whether the Service acts as an identity of its own (a service account,
// or a target cluster's kubeconfig) rather than the operator: what its pods use is then
// checked (authorize).
func (a *access) restricted() bool { return a.account != "" || a.cluster != nil }

// watchedByOperator tells whether the Service's objects are in the operator's own cluster,
// whose watches bring their changes (and the echoes of its applies).
func (a *access) watchedByOperator() bool { return a.cluster == nil }

// AccountOf is the service account a Service acts as: its own, else the operator's
// default (lockdown mode), else none (the operator's identity).
func AccountOf(svc *v1alpha1.Service, defaultAccount string) string {
	if svc.Spec.ServiceAccountName != "" {
		return svc.Spec.ServiceAccountName
	}
	return defaultAccount
}

// SourceReader returns how the package source of a Service reads the Secrets and
// ConfigMaps it names (uploads, credentials, trust anchors): as the account the Service
// acts as (see AccountOf), or, answering nil, with the fetcher's own reader.
func (ids *Identities) SourceReader(defaultAccount string) sourcepkg.ReaderFunc {
	return func(svc *v1alpha1.Service) (client.Reader, error) {
		account := AccountOf(svc, defaultAccount)
		if account == "" {
			return nil, nil
		}
		return ids.Client(ServiceAccountUser(svc.Namespace, account))
	}
}

// accessFor returns how a Service's objects are read and written: as its service account
// when it has one (see AccountOf), else as the operator.
func (r *ServiceReconciler) accessFor(svc *v1alpha1.Service) (*access, error) {
	account := AccountOf(svc, r.DefaultServiceAccount)
	if account == "" {
		return &access{local: r.APIReader, cached: r.Client, direct: r.APIReader, writer: r.Client,
			manager: ssa.NewResourceManager(r.Client, r.poller, ssa.Owner{Field: fieldManager, Group: "calaf.io"})}, nil
	}
	if r.Identities == nil {
		return nil, fmt.Errorf("no impersonation set up for service account %s", account)
	}
	c, err := r.Identities.Client(ServiceAccountUser(svc.Namespace, account))
	if err != nil {
		return nil, err
	}
	poller := polling.NewStatusPoller(c, r.RESTMapper(), polling.Options{})
	return &access{account: account, local: c, cached: c, direct: c, writer: c,
		manager: ssa.NewResourceManager(c, poller, ssa.Owner{Field: fieldManager, Group: "calaf.io"})}, nil
}

// isNoMatch tells whether err says the kind is not served by the API.
func isNoMatch(err error) bool {
	return err != nil && (apimeta.IsNoMatchError(err) || strings.Contains(err.Error(), "no matches for kind"))
}

// forNode is the access of a node's objects (route of its first).
func (a *access) forNode(node *render.Node) *access {
	if len(node.Objects) == 0 {
		return a
	}
	return a.route(node.Objects[0].GroupVersionKind())
}
