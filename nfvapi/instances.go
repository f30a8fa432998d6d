package nfvapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/nfvapi/sol013"
)

// maxMetadataBytes bounds a VNF instance's metadata (an annotation of its Service).
const maxMetadataBytes = 16 << 10

// createVnfRequest is SOL003's CreateVnfRequest.
type createVnfRequest struct {
	VnfdID                 string         `json:"vnfdId"`
	VnfInstanceName        *string        `json:"vnfInstanceName"`
	VnfInstanceDescription *string        `json:"vnfInstanceDescription"`
	Metadata               map[string]any `json:"metadata"`
}

// createInstance makes a NOT_INSTANTIATED Service of an onboarded, enabled package.
func (s *Server) createInstance(r *request) (int, any, error) {
	var req createVnfRequest
	if err := r.decode(&req); err != nil {
		return 0, nil, err
	}
	if req.VnfdID == "" {
		return 0, nil, sol013.Errorf(http.StatusBadRequest, "vnfdId is required")
	}
	pkg, err := usablePackage(r.Context(), r.client, r.caller.Namespace, req.VnfdID)
	if err != nil {
		return 0, nil, err
	}
	svc := &v1alpha1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: uuid.NewString(), Namespace: r.caller.Namespace,
			Labels:      map[string]string{v1alpha1.LabelVnfInstance: "true"},
			Annotations: map[string]string{}, Finalizers: []string{v1alpha1.FinalizerVnfIdentifier}},
		Spec: v1alpha1.ServiceSpec{Source: v1alpha1.Source{VnfPackage: &v1alpha1.VnfPackageSource{VnfdID: req.VnfdID}},
			InstantiationState: v1alpha1.NotInstantiated},
	}
	if req.VnfInstanceName != nil {
		svc.Annotations[v1alpha1.AnnotationVnfInstanceName] = *req.VnfInstanceName
	}
	if req.VnfInstanceDescription != nil {
		svc.Annotations[v1alpha1.AnnotationVnfInstanceDescription] = *req.VnfInstanceDescription
	}
	if len(req.Metadata) > 0 {
		data, _ := json.Marshal(req.Metadata)
		if len(data) > maxMetadataBytes {
			return 0, nil, sol013.Errorf(http.StatusRequestEntityTooLarge, "metadata is %d bytes; at most %d are kept", len(data), maxMetadataBytes)
		}
		svc.Annotations[v1alpha1.AnnotationVnfMetadata] = string(data)
	}
	if err := r.client.Create(r.Context(), svc); err != nil {
		return 0, nil, err
	}
	base := r.base(s)
	r.header.Set("Location", base+"/vnflcm/v2/vnf_instances/"+svc.Name)
	return http.StatusCreated, instanceView(base, svc, pkg, nil), nil
}

// usablePackage finds the namespace's VnfPackage of a VNFD id, and refuses (422) one
// that is not onboarded or not enabled.
func usablePackage(ctx context.Context, c client.Client, namespace, vnfdID string) (*v1alpha1.VnfPackage, error) {
	pkg, err := packageOf(ctx, c, namespace, vnfdID)
	if err != nil {
		return nil, err
	}
	switch {
	case pkg == nil:
		return nil, sol013.Errorf(http.StatusUnprocessableEntity, "no VNF package with vnfdId %q is onboarded in namespace %s", vnfdID, namespace)
	case pkg.Status.OnboardingState != v1alpha1.OnboardingOnboarded:
		return nil, sol013.Errorf(http.StatusUnprocessableEntity, "the VNF package %s of vnfdId %q is %s, not ONBOARDED", pkg.Name, vnfdID, pkg.Status.OnboardingState)
	case pkg.Spec.OperationalState == v1alpha1.PackageDisabled:
		return nil, sol013.Errorf(http.StatusUnprocessableEntity, "the VNF package %s of vnfdId %q is DISABLED", pkg.Name, vnfdID)
	}
	return pkg, nil
}

// packageOf returns the namespace's VnfPackage of a VNFD id (nil when none).
func packageOf(ctx context.Context, c client.Client, namespace, vnfdID string) (*v1alpha1.VnfPackage, error) {
	pkgs, err := packagesByVnfd(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	return pkgs[vnfdID], nil
}

// packagesByVnfd lists the namespace's onboarded packages by VNFD id. A caller who may
// not list packages gets none (instances then show what their Services know).
func packagesByVnfd(ctx context.Context, c client.Client, namespace string) (map[string]*v1alpha1.VnfPackage, error) {
	list := &v1alpha1.VnfPackageList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			return map[string]*v1alpha1.VnfPackage{}, nil
		}
		return nil, err
	}
	byID := map[string]*v1alpha1.VnfPackage{}
	for i := range list.Items {
		if id := list.Items[i].Status.VnfdID; id != "" && byID[id] == nil {
			byID[id] = &list.Items[i]
		}
	}
	return byID, nil
}

// servicePackage is the VnfPackage a Service names, if any.
func servicePackage(svc *v1alpha1.Service, pkgs map[string]*v1alpha1.VnfPackage) *v1alpha1.VnfPackage {
	if ref := svc.Spec.Source.VnfPackage; ref != nil {
		return pkgs[ref.VnfdID]
	}
	return nil
}

// podsOf lists the namespace's pods of Services, by Service; nil when the caller may not
// list pods.
func podsOf(ctx context.Context, c client.Client, namespace string, service string) (map[string][]corev1.Pod, error) {
	list := &corev1.PodList{}
	opts := []client.ListOption{client.InNamespace(namespace), client.HasLabels{v1alpha1.LabelService}}
	if service != "" {
		opts = []client.ListOption{client.InNamespace(namespace), client.MatchingLabels{v1alpha1.LabelService: service}}
	}
	if err := c.List(ctx, list, opts...); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, nil
		}
		return nil, err
	}
	byService := map[string][]corev1.Pod{}
	for _, pod := range list.Items {
		name := pod.Labels[v1alpha1.LabelService]
		byService[name] = append(byService[name], pod)
	}
	return byService, nil
}

// showInstance answers one VNF instance, with an ETag.
func (s *Server) showInstance(r *request) (int, any, error) {
	svc, err := r.service(r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	view, err := r.fullView(s, svc)
	if err != nil {
		return 0, nil, err
	}
	r.header.Set("ETag", etagOf(view))
	return http.StatusOK, view, nil
}

// fullView is a Service's VnfInstance with its package and pods.
func (r *request) fullView(s *Server, svc *v1alpha1.Service) (VnfInstance, error) {
	pkgs, err := packagesByVnfd(r.Context(), r.client, svc.Namespace)
	if err != nil {
		return VnfInstance{}, err
	}
	pods, err := podsOf(r.Context(), r.client, svc.Namespace, svc.Name)
	if err != nil {
		return VnfInstance{}, err
	}
	return instanceView(r.base(s), svc, servicePackage(svc, pkgs), pods[svc.Name]), nil
}

// service reads a Service of the caller's namespace: a 404 names the instance.
func (r *request) service(id string) (*v1alpha1.Service, error) {
	svc := &v1alpha1.Service{}
	err := r.client.Get(r.Context(), client.ObjectKey{Namespace: r.caller.Namespace, Name: id}, svc)
	if apierrors.IsNotFound(err) || err == nil && (!svc.DeletionTimestamp.IsZero() || isNested(svc)) {
		return nil, sol013.Errorf(http.StatusNotFound, "there is no VNF instance %q in namespace %s", id, r.caller.Namespace)
	}
	return svc, err
}

// isNested tells a Service made of a node template a service template of its parent's
// package substitutes: it belongs to its parent, and is no VNF instance of its own.
func isNested(svc *v1alpha1.Service) bool {
	return svc.Labels[v1alpha1.LabelParent] != ""
}

// etagOf is a strong ETag of a representation.
func etagOf(view any) string {
	data, _ := json.Marshal(view)
	sum := sha256.Sum256(data)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// listInstances answers the namespace's VNF instances: filtered, selected, paged.
func (s *Server) listInstances(r *request) (int, any, error) {
	q, err := parseQuery(r, instanceShape)
	if err != nil {
		return 0, nil, err
	}
	list := &v1alpha1.ServiceList{}
	if err := r.client.List(r.Context(), list, client.InNamespace(r.caller.Namespace)); err != nil {
		return 0, nil, err
	}
	pkgs, err := packagesByVnfd(r.Context(), r.client, r.caller.Namespace)
	if err != nil {
		return 0, nil, err
	}
	var pods map[string][]corev1.Pod
	if q.touches("instantiatedVnfInfo") {
		if pods, err = podsOf(r.Context(), r.client, r.caller.Namespace, ""); err != nil {
			return 0, nil, err
		}
	}
	items := list.Items[:0]
	for _, svc := range list.Items {
		if svc.DeletionTimestamp.IsZero() && !isNested(&svc) {
			items = append(items, svc)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	base := r.base(s)
	return q.page(r, s, len(items), func(i int) (string, any) {
		svc := &items[i]
		return svc.Name, instanceView(base, svc, servicePackage(svc, pkgs), pods[svc.Name])
	})
}

// deleteInstance deletes a NOT_INSTANTIATED instance with no occurrence in progress.
func (s *Server) deleteInstance(r *request) (int, any, error) {
	svc, err := r.service(r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if state := instantiationState(svc); state != v1alpha1.NotInstantiated {
		return 0, nil, sol013.Errorf(http.StatusConflict, "the VNF instance %s is %s: terminate it first", svc.Name, state)
	}
	if busy, err := r.activeOccurrence(s, svc); err != nil || busy != "" {
		return 0, nil, orConflict(err, svc, busy)
	}
	uid := svc.UID
	if err := r.client.Delete(r.Context(), svc, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

func orConflict(err error, svc *v1alpha1.Service, busy string) error {
	if err != nil {
		return err
	}
	return sol013.Errorf(http.StatusConflict, "the operation occurrence %s of VNF instance %s is in progress", busy, svc.Name)
}

// vnfInfoModificationRequest is SOL003's VnfInfoModificationRequest.
type vnfInfoModificationRequest struct {
	VnfInstanceName           *string                    `json:"vnfInstanceName"`
	VnfInstanceDescription    *string                    `json:"vnfInstanceDescription"`
	VnfdID                    *string                    `json:"vnfdId"`
	VnfConfigurableProperties map[string]json.RawMessage `json:"vnfConfigurableProperties"`
	Metadata                  map[string]json.RawMessage `json:"metadata"`
	Extensions                json.RawMessage            `json:"extensions"`
	VimConnectionInfo         json.RawMessage            `json:"vimConnectionInfo"`
	VnfcInfoModifications     json.RawMessage            `json:"vnfcInfoModifications"`
}

// modifyInstance starts a MODIFY occurrence (PATCH, a JSON merge patch of the instance's
// modifiable attributes), honouring If-Match.
func (s *Server) modifyInstance(r *request) (int, any, error) {
	if ct := r.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/merge-patch+json") {
		r.Header.Set("Content-Type", "application/json")
	}
	var req vnfInfoModificationRequest
	if err := r.decode(&req); err != nil {
		return 0, nil, err
	}
	for name, raw := range map[string]json.RawMessage{"extensions": req.Extensions, "vimConnectionInfo": req.VimConnectionInfo, "vnfcInfoModifications": req.VnfcInfoModifications} {
		if len(raw) > 0 && string(raw) != "null" {
			return 0, nil, sol013.Errorf(http.StatusUnprocessableEntity, "%s cannot be modified on this VNFM (docs/nfv-api.md)", name)
		}
	}
	svc, err := r.service(r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if match := r.Header.Get("If-Match"); match != "" {
		view, err := r.fullView(s, svc)
		if err != nil {
			return 0, nil, err
		}
		if etag := etagOf(view); match != "*" && !strings.Contains(match, etag) {
			return 0, nil, sol013.Errorf(http.StatusPreconditionFailed, "the VNF instance %s changed since it was read (If-Match %s, now %s)", svc.Name, match, etag)
		}
	}
	modify, err := modifyRequest(r.Context(), r.client, svc, req)
	if err != nil {
		return 0, nil, err
	}
	return r.startOccurrence(s, svc, v1alpha1.OperationSpec{Type: v1alpha1.OperationModify, Modify: modify})
}

// modifyRequest turns a VnfInfoModificationRequest into a MODIFY request.
func modifyRequest(ctx context.Context, c client.Client, svc *v1alpha1.Service, req vnfInfoModificationRequest) (*v1alpha1.ModifyRequest, error) {
	m := &v1alpha1.ModifyRequest{VnfInstanceName: req.VnfInstanceName, VnfInstanceDescription: req.VnfInstanceDescription}
	if len(req.VnfConfigurableProperties) > 0 {
		m.Inputs = rawMap(req.VnfConfigurableProperties)
	}
	if len(req.Metadata) > 0 {
		m.Metadata = rawMap(req.Metadata)
	}
	if req.VnfdID != nil {
		if svc.Spec.Source.VnfPackage == nil {
			return nil, sol013.Errorf(http.StatusUnprocessableEntity, "the VNF instance %s was not made of a VNF package, so its vnfdId cannot change", svc.Name)
		}
		if _, err := usablePackage(ctx, c, svc.Namespace, *req.VnfdID); err != nil {
			return nil, err
		}
		m.VnfdID = *req.VnfdID
	}
	if m.Inputs == nil && m.Metadata == nil && m.VnfInstanceName == nil && m.VnfInstanceDescription == nil && m.VnfdID == "" {
		return nil, sol013.Errorf(http.StatusBadRequest, "the modification changes nothing")
	}
	return m, nil
}
