package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/render"
)

// decisionTTL is how long an access decision of the API server is reused.
const decisionTTL = 30 * time.Second

// decision is a cached answer of a SelfSubjectAccessReview.
type decision struct {
	allowed bool
	at      time.Time
}

// reconcileAccess decides how this reconcile reads and writes the Service's objects: as
// the operator, or as the Service's service account (identity.go), which it must be
// allowed to act as (mayActAs).
func (r *ServiceReconciler) reconcileAccess(ctx context.Context, s *scope) error {
	a, err := r.accessFor(s.Service)
	if err != nil {
		return newPhaseError(v1alpha1.ConditionSourceReady, v1alpha1.ReasonInternalError, retry, err)
	}
	if a.account != "" {
		if err := r.mayActAs(ctx, s.Service, a.account); err != nil {
			return err
		}
	}
	s.access = a
	return nil
}

// mayActAs refuses a Service acting as a service account it may not act as, before
// anything is read or written as it (AccessDenied, stalled until the Service or the
// grant changes): outside lockdown mode, an account its spec names that its namespace's
// admin did not mark usable by Services (the operator could act as any: a tenant must not
// gain an account by naming it); in any mode, one the operator may not impersonate. A
// grant is reused for decisionTTL; a refusal is asked again at the next reconcile, so
// that one the admin lifts holds at once.
func (r *ServiceReconciler) mayActAs(ctx context.Context, svc *v1alpha1.Service, account string) error {
	if !r.lockdown() && svc.Spec.ServiceAccountName != "" {
		marked, err := r.markedUsable(ctx, svc.Namespace, account)
		if err != nil {
			return classifyAPI(v1alpha1.ConditionSourceReady, v1alpha1.ReasonAccessDenied, fmt.Errorf("reading service account %s: %w", account, err))
		}
		if !marked {
			return stalled(v1alpha1.ConditionSourceReady, v1alpha1.ReasonAccessDenied,
				"service account %s is not usable by Services: its namespace's admin offers it with the label %s=true", account, v1alpha1.LabelUsableByServices)
		}
	}
	allowed, err := r.mayImpersonate(ctx, svc.Namespace, account)
	if err != nil {
		return classifyAPI(v1alpha1.ConditionSourceReady, v1alpha1.ReasonAccessDenied, fmt.Errorf("checking impersonation of service account %s: %w", account, err))
	}
	if !allowed {
		return stalled(v1alpha1.ConditionSourceReady, v1alpha1.ReasonAccessDenied,
			"the operator may not act as service account %s of namespace %s: the cluster admin grants it (impersonate on serviceaccounts named %s, deploy/rbac/lockdown)", account, svc.Namespace, account)
	}
	return nil
}

// markedUsable tells whether a service account carries the label that offers it to
// Services (LabelUsableByServices); an account that does not exist carries none. Only
// its metadata is read, from the API server (the cache holds no accounts but Services').
func (r *ServiceReconciler) markedUsable(ctx context.Context, namespace, account string) (bool, error) {
	key := strings.Join([]string{"usable", namespace, account}, "\x00")
	if d, ok := r.Identities.decisions.Get(key); ok && time.Since(d.at) < decisionTTL {
		return d.allowed, nil
	}
	sa := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: account}, sa)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	marked := err == nil && sa.Labels[v1alpha1.LabelUsableByServices] == "true"
	if marked {
		r.Identities.decisions.Put(key, decision{allowed: true, at: time.Now()})
	}
	return marked, nil
}

// mayImpersonate asks the API server whether the operator may impersonate a service
// account (a SelfSubjectAccessReview as the operator).
func (r *ServiceReconciler) mayImpersonate(ctx context.Context, namespace, account string) (bool, error) {
	key := strings.Join([]string{"impersonate", namespace, account}, "\x00")
	if d, ok := r.Identities.decisions.Get(key); ok && time.Since(d.at) < decisionTTL {
		return d.allowed, nil
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "impersonate", Resource: "serviceaccounts", Name: account}}}
	if err := r.Create(ctx, review); err != nil {
		return false, err
	}
	if review.Status.Allowed {
		r.Identities.decisions.Put(key, decision{allowed: true, at: time.Now()})
	}
	return review.Status.Allowed, nil
}

// reference is a Secret or a service account an object uses without creating it.
type reference struct {
	kind, name string
	// at is where the object names it.
	at string
}

// authorize checks, for a Service acting as a service account, what Kubernetes does not
// check when that account creates pods: every Secret a pod mounts or reads (volumes,
// projected volumes, env, envFrom, image pull secrets, CSI secret refs) must be one the
// account may get, and every service account a pod runs as (other than its own and
// "default") one it may create tokens of — running a pod as an account is acting as it.
// In lockdown mode, no object may name another namespace. Secrets and service accounts
// the package renders itself are its own. A refusal stalls the Service (AccessDenied)
// before anything of the render reaches the API server.
func (r *ServiceReconciler) authorize(ctx context.Context, s *scope, result *render.Result) error {
	if s.access == nil || !s.access.restricted() {
		return nil
	}
	namespace := s.Service.Namespace
	own := map[string]bool{}
	for _, obj := range result.Objects {
		if gvk := obj.GroupVersionKind(); gvk.Group == "" && (gvk.Kind == "Secret" || gvk.Kind == "ServiceAccount") {
			own[gvk.Kind+"/"+obj.GetName()] = true
		}
	}
	var refusals []string
	for _, obj := range result.Objects {
		subject := obj.GetKind() + "/" + obj.GetName()
		if r.lockdown() {
			for _, at := range foreignNamespaces(obj, namespace) {
				refusals = append(refusals, fmt.Sprintf("%s %s names another namespace: cross-namespace references are refused in lockdown mode", subject, at))
			}
		}
		for _, ref := range references(obj) {
			if own[ref.kind+"/"+ref.name] || ref.kind == "ServiceAccount" && (ref.name == "default" || ref.name == s.access.account && s.access.cluster == nil) {
				continue
			}
			allowed, err := r.allowed(ctx, s.access, namespace, ref)
			if err != nil {
				return classifyAPI(v1alpha1.ConditionApplied, v1alpha1.ReasonApplyFailed, fmt.Errorf("checking access to %s %q: %w", ref.kind, ref.name, err))
			}
			if !allowed {
				refusals = append(refusals, fmt.Sprintf("%s %s uses %s %q, which %s may not %s", subject, ref.at, ref.kind, ref.name, s.access.identity(), verbOf(ref)))
			}
		}
	}
	if len(refusals) == 0 {
		return nil
	}
	slices.Sort(refusals)
	refusals = slices.Compact(refusals)
	const maxLines = 5
	if len(refusals) > maxLines {
		refusals = append(refusals[:maxLines], fmt.Sprintf("(and %d more refusals)", len(refusals)-maxLines))
	}
	return stalled(v1alpha1.ConditionApplied, v1alpha1.ReasonAccessDenied, "%s", s.Redact.String(strings.Join(refusals, "; ")))
}

// verbOf is what an account must be allowed to do with a reference, in words.
func verbOf(ref reference) string {
	if ref.kind == "ServiceAccount" {
		return "create tokens of (run pods as)"
	}
	return "get"
}

// allowed asks the API server whether the Service's account may use a reference (a
// SelfSubjectAccessReview made as the account; the answer is reused for decisionTTL).
func (r *ServiceReconciler) allowed(ctx context.Context, a *access, namespace string, ref reference) (bool, error) {
	attributes := &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "get", Resource: "secrets", Name: ref.name}
	if ref.kind == "ServiceAccount" {
		attributes.Verb, attributes.Resource, attributes.Subresource = "create", "serviceaccounts", "token"
	}
	key := strings.Join([]string{a.decider(namespace), attributes.Verb, attributes.Resource, attributes.Subresource, ref.name}, "\x00")
	if d, ok := r.Identities.decisions.Get(key); ok && time.Since(d.at) < decisionTTL {
		return d.allowed, nil
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attributes}}
	if err := a.writer.Create(ctx, review); err != nil {
		return false, err
	}
	r.Identities.decisions.Put(key, decision{allowed: review.Status.Allowed, at: time.Now()})
	return review.Status.Allowed, nil
}

// references finds the Secrets and service accounts an object's pods (or any of its
// fields, for custom kinds) use. The data of ConfigMaps and Secrets is never looked at.
func references(obj *unstructured.Unstructured) []reference {
	if gvk := obj.GroupVersionKind(); gvk.Group == "" && (gvk.Kind == "ConfigMap" || gvk.Kind == "Secret") {
		return nil
	}
	var refs []reference
	walkFields(obj.Object, nil, func(m map[string]any, at []string) {
		for key, value := range m {
			where := fieldPath(append(at, key))
			switch {
			case key == "imagePullSecrets":
				items, _ := value.([]any)
				for _, item := range items {
					if name := nameIn(item, "name"); name != "" {
						refs = append(refs, reference{kind: "Secret", name: name, at: where})
					}
				}
			case key == "secret" || key == "secretKeyRef" || key == "secretRef" || strings.HasSuffix(key, "SecretRef"):
				if name := nameIn(value, "secretName", "name"); name != "" {
					refs = append(refs, reference{kind: "Secret", name: name, at: where})
				}
			case (key == "serviceAccountName" || key == "serviceAccount") && m["containers"] != nil:
				if name, _ := value.(string); name != "" {
					refs = append(refs, reference{kind: "ServiceAccount", name: name, at: where})
				}
			}
		}
	})
	return refs
}

// foreignNamespaces returns where an object (outside its metadata) names a namespace
// other than the Service's.
func foreignNamespaces(obj *unstructured.Unstructured, namespace string) []string {
	if gvk := obj.GroupVersionKind(); gvk.Group == "" && (gvk.Kind == "ConfigMap" || gvk.Kind == "Secret") {
		return nil
	}
	var found []string
	walkFields(obj.Object, nil, func(m map[string]any, at []string) {
		if len(at) == 1 && at[0] == "metadata" {
			return
		}
		if ns, ok := m["namespace"].(string); ok && ns != "" && ns != namespace {
			found = append(found, fmt.Sprintf("%s (%q)", fieldPath(append(at, "namespace")), ns))
		}
	})
	slices.Sort(found)
	return found
}

// walkFields calls visit on every map of a JSON-like value with the path to it.
func walkFields(value any, at []string, visit func(map[string]any, []string)) {
	switch v := value.(type) {
	case map[string]any:
		visit(v, at)
		for key, item := range v {
			walkFields(item, append(slices.Clone(at), key), visit)
		}
	case []any:
		for i, item := range v {
			walkFields(item, append(slices.Clone(at), fmt.Sprintf("[%d]", i)), visit)
		}
	}
}

// nameIn returns the first non-empty string among keys of a map value.
func nameIn(value any, keys ...string) string {
	m, _ := value.(map[string]any)
	for _, key := range keys {
		if name, _ := m[key].(string); name != "" {
			return name
		}
	}
	return ""
}

// fieldPath writes a path like spec.template.spec.volumes[0].secret.
func fieldPath(at []string) string {
	var b strings.Builder
	for _, part := range at {
		if b.Len() > 0 && !strings.HasPrefix(part, "[") {
			b.WriteByte('.')
		}
		b.WriteString(part)
	}
	return b.String()
}
