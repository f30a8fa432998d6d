package operator

import (
	"net/http"
	"strings"
	"sync"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// newRESTMapper is the manager's REST mapper: controller-runtime's dynamic one, which
// discovers API groups as they are asked for, with its answers for one version of a kind
// remembered (versionMapper).
func newRESTMapper(config *rest.Config, httpClient *http.Client) (apimeta.RESTMapper, error) {
	mapper, err := apiutil.NewDynamicRESTMapper(config, httpClient)
	if err != nil {
		return nil, err
	}
	return &versionMapper{RESTMapper: mapper}, nil
}

// versionMapper remembers the mapping of each kind at one version. The dynamic mapper
// searches a mapper per API group version for every lookup, allocating as it goes, and
// the cache asks it on every read whether the kind read is namespaced: 4.5% of the
// operator's CPU in the fleet bench. What it remembers does not change: a resource's
// name and scope are fixed for a version (a CRD's scope and names are immutable); a kind
// removed since is an error of the API server's. Lookups without a version, or of several,
// and failures are not remembered.
type versionMapper struct {
	apimeta.RESTMapper
	mappings sync.Map // group/kind/version → *apimeta.RESTMapping
}

// RESTMapping is the embedded mapper's, remembered for a single version.
func (m *versionMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*apimeta.RESTMapping, error) {
	if len(versions) != 1 || versions[0] == "" {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	key := strings.Join([]string{gk.Group, gk.Kind, versions[0]}, "/")
	if mapping, ok := m.mappings.Load(key); ok {
		return mapping.(*apimeta.RESTMapping), nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mappings.Store(key, mapping)
	return mapping, nil
}
