package nfvapi

import (
	"net/http"
	"sort"
	"strings"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/nfvapi/sol013"
)

// routePackages registers VNF package management (SOL005 /vnfpkgm/v1, as Tacker serves
// it), and returns the methods of its paths.
func (s *Server) routePackages() map[string][]string {
	const one = packagesPath + "/{id}"
	s.route("GET /vnfpkgm/v1/api_versions", s.packageAPIVersions)
	s.route("GET "+packagesPath, s.listPackages)
	s.route("POST "+packagesPath, s.createPackage)
	s.route("GET "+one, s.showPackage)
	s.route("PATCH "+one, s.modifyPackage)
	s.route("DELETE "+one, s.deletePackage)
	s.routeBounded("PUT "+one+"/package_content", s.cfg.Content.MaxBytes(), s.uploadContent)
	s.route("POST "+one+"/package_content/upload_from_uri", s.uploadFromURI)
	s.route("GET "+one+"/package_content", s.readContent)
	s.route("GET "+one+"/vnfd", s.readVNFD)
	s.route("GET "+one+"/artifacts/{path...}", s.readArtifact)
	return map[string][]string{
		"/vnfpkgm/v1/api_versions": {"GET"}, packagesPath: {"GET", "POST"}, one: {"GET", "PATCH", "DELETE"},
		one + "/package_content": {"GET", "PUT"}, one + "/package_content/upload_from_uri": {"POST"},
		one + "/vnfd": {"GET"}, one + "/artifacts/{path...}": {"GET"},
	}
}

// packageVersion is the version of the VNF package management interface served at
// /vnfpkgm/v1 (SOL005 2.x, as Tacker's v1 package management).
const packageVersion = "2.6.1"

func (s *Server) packageAPIVersions(*request) (int, any, error) {
	return http.StatusOK, apiVersionInformation{URIPrefix: "/vnfpkgm/v1", APIVersions: []apiVersion{{Version: packageVersion}}}, nil
}

// vnfPackage reads a package of the caller's namespace, as the caller; one being deleted
// is gone.
func (r *request) vnfPackage(id string) (*v1alpha1.VnfPackage, error) {
	pkg := &v1alpha1.VnfPackage{}
	err := r.client.Get(r.Context(), client.ObjectKey{Namespace: r.caller.Namespace, Name: id}, pkg)
	if apierrors.IsNotFound(err) || err == nil && !pkg.DeletionTimestamp.IsZero() {
		return nil, sol013.Errorf(http.StatusNotFound, "there is no VNF package %q in namespace %s", id, r.caller.Namespace)
	}
	return pkg, err
}

// createVnfPkgInfoRequest is SOL005's CreateVnfPkgInfoRequest.
type createVnfPkgInfoRequest struct {
	UserDefinedData map[string]any `json:"userDefinedData,omitempty"`
}

// createPackage makes a VnfPackage named by a fresh UUID, CREATED: its content comes by
// PUT package_content or upload_from_uri.
func (s *Server) createPackage(r *request) (int, any, error) {
	var req createVnfPkgInfoRequest
	if err := r.decode(&req); err != nil {
		return 0, nil, err
	}
	data, err := userData(nil, req.UserDefinedData)
	if err != nil {
		return 0, nil, err
	}
	pkg := &v1alpha1.VnfPackage{ObjectMeta: metav1.ObjectMeta{Name: uuid.NewString(), Namespace: r.caller.Namespace},
		Spec: v1alpha1.VnfPackageSpec{UserDefinedData: data}}
	if err := r.client.Create(r.Context(), pkg); err != nil {
		return 0, nil, err
	}
	base := r.base(s)
	r.header.Set("Location", base+packagesPath+"/"+pkg.Name)
	return http.StatusCreated, packageView(base, pkg), nil
}

// userData merges a request's userDefinedData into data: string values set a key, null
// removes it; other values are refused (the package keeps strings).
func userData(data map[string]string, changes map[string]any) (map[string]string, error) {
	merged := map[string]string{}
	for k, v := range data {
		merged[k] = v
	}
	for k, v := range changes {
		switch v := v.(type) {
		case nil:
			delete(merged, k)
		case string:
			merged[k] = v
		default:
			return nil, sol013.Errorf(http.StatusBadRequest, "userDefinedData %q: values are strings here", k)
		}
	}
	if len(merged) == 0 {
		return nil, nil
	}
	return merged, nil
}

// listPackages answers the namespace's packages: filtered, selected, paged.
func (s *Server) listPackages(r *request) (int, any, error) {
	q, err := parseQuery(r, packageShape)
	if err != nil {
		return 0, nil, err
	}
	list := &v1alpha1.VnfPackageList{}
	if err := r.client.List(r.Context(), list, client.InNamespace(r.caller.Namespace)); err != nil {
		return 0, nil, err
	}
	items := list.Items[:0]
	for _, pkg := range list.Items {
		if pkg.DeletionTimestamp.IsZero() {
			items = append(items, pkg)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	base := r.base(s)
	return q.page(r, s, len(items), func(i int) (string, any) {
		return items[i].Name, packageView(base, &items[i])
	})
}

// showPackage answers one package, with an ETag.
func (s *Server) showPackage(r *request) (int, any, error) {
	pkg, err := r.vnfPackage(r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	view := packageView(r.base(s), pkg)
	r.header.Set("ETag", etagOf(view))
	return http.StatusOK, view, nil
}

// vnfPkgInfoModifications is SOL005's VnfPkgInfoModifications.
type vnfPkgInfoModifications struct {
	OperationalState v1alpha1.PackageOperationalState `json:"operationalState,omitempty"`
	UserDefinedData  map[string]any                   `json:"userDefinedData,omitempty"`
}

// modifyPackage enables or disables an onboarded package and changes its user data
// (merged: null removes a key), honouring If-Match; it answers what it changed.
func (s *Server) modifyPackage(r *request) (int, any, error) {
	var req vnfPkgInfoModifications
	if err := r.decode(&req); err != nil {
		return 0, nil, err
	}
	if req.OperationalState == "" && req.UserDefinedData == nil {
		return 0, nil, sol013.Errorf(http.StatusBadRequest, "a modification changes operationalState or userDefinedData")
	}
	base := r.base(s)
	err := r.updatePackage(r.PathValue("id"), func(pkg *v1alpha1.VnfPackage) error {
		if match := r.Header.Get("If-Match"); match != "" {
			if etag := etagOf(packageView(base, pkg)); match != "*" && !strings.Contains(match, etag) {
				return sol013.Errorf(http.StatusPreconditionFailed, "the VNF package %s changed since it was read (If-Match %s, now %s)", pkg.Name, match, etag)
			}
		}
		if err := changeOperationalState(pkg, req.OperationalState); err != nil {
			return err
		}
		if req.UserDefinedData != nil {
			data, err := userData(pkg.Spec.UserDefinedData, req.UserDefinedData)
			if err != nil {
				return err
			}
			pkg.Spec.UserDefinedData = data
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	answer := map[string]any{}
	if req.OperationalState != "" {
		answer["operationalState"] = req.OperationalState
	}
	if req.UserDefinedData != nil {
		answer["userDefinedData"] = req.UserDefinedData
	}
	return http.StatusOK, answer, nil
}

// updatePackage reads a package as the caller, changes it with change and writes it at
// the version it read; when the package was written meanwhile (the operator's status, a
// label), it is read and changed again — change decides anew whether the change holds.
func (r *request) updatePackage(id string, change func(*v1alpha1.VnfPackage) error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pkg, err := r.vnfPackage(id)
		if err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(pkg.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if err := change(pkg); err != nil {
			return err
		}
		return r.client.Patch(r.Context(), pkg, patch)
	})
}

// changeOperationalState enables or disables a package: only an onboarded one, and only
// to another state (409 otherwise, as Tacker answers).
func changeOperationalState(pkg *v1alpha1.VnfPackage, state v1alpha1.PackageOperationalState) error {
	switch {
	case state == "":
		return nil
	case state != v1alpha1.PackageEnabled && state != v1alpha1.PackageDisabled:
		return sol013.Errorf(http.StatusBadRequest, "operationalState must be ENABLED or DISABLED, not %q", state)
	case pkg.Status.OnboardingState != v1alpha1.OnboardingOnboarded:
		return sol013.Errorf(http.StatusConflict, "the VNF package %s is %s: only an ONBOARDED package is enabled or disabled", pkg.Name, onboardingState(pkg))
	case operationalState(pkg) == state:
		return sol013.Errorf(http.StatusConflict, "the VNF package %s is %s already", pkg.Name, state)
	}
	pkg.Spec.OperationalState = state
	return nil
}

// deletePackage deletes a package that is DISABLED and NOT_IN_USE (409 otherwise); its
// upload ConfigMap goes with it (owned by it).
func (s *Server) deletePackage(r *request) (int, any, error) {
	pkg, err := r.vnfPackage(r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	switch {
	case operationalState(pkg) != v1alpha1.PackageDisabled:
		return 0, nil, sol013.Errorf(http.StatusConflict, "the VNF package %s is ENABLED: disable it first", pkg.Name)
	case pkg.Status.UsageState == v1alpha1.PackageInUse:
		return 0, nil, sol013.Errorf(http.StatusConflict, "the VNF package %s is IN_USE: VNF instances of namespace %s use its VNFD", pkg.Name, pkg.Namespace)
	}
	uid := pkg.UID
	if err := r.client.Delete(r.Context(), pkg, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}
