package nfvapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/nfvapi"
)

// TestCredentials: no token, a forged token and an unmapped certificate-less caller are
// refused before anything is read.
func TestCredentials(t *testing.T) {
	call(t, nil, "GET", "/vnflcm/v2/vnf_instances", nil).expect(t, http.StatusUnauthorized, "no credentials")
	forged := tenant{token: "eyJhbGciOiJSUzI1NiJ9.e30.forged"}
	call(t, &forged, "GET", "/vnflcm/v2/vnf_instances", nil).expect(t, http.StatusUnauthorized, "not valid")
	a := call(t, nil, "GET", "/vnflcm/v2/vnf_instances", nil)
	if a.header.Get("WWW-Authenticate") == "" {
		t.Error("a 401 without WWW-Authenticate")
	}
	// OpenStack's clients send their token as X-Auth-Token.
	tn := newTenant(t, "nfvo-x-auth", "nfvo", nil)
	call(t, nil, "GET", "/vnflcm/v2/vnf_instances", nil, "X-Auth-Token", tn.token).expect(t, http.StatusOK)
	call(t, nil, "GET", "/vnflcm/v2/vnf_instances", nil, "X-Auth-Token", "notused").expect(t, http.StatusUnauthorized)
}

// TestVersionsAndRouting: the Version header, unknown paths and methods.
func TestVersionsAndRouting(t *testing.T) {
	tn := newTenant(t, "nfvo-routing", "nfvo", nil)
	var versions struct {
		URIPrefix   string `json:"uriPrefix"`
		APIVersions []struct{ Version string }
	}
	call(t, &tn, "GET", "/vnflcm/v2/api_versions", nil, "Version", "").expect(t, 200).decode(t, &versions)
	if versions.URIPrefix != "/vnflcm/v2" || len(versions.APIVersions) != 1 || versions.APIVersions[0].Version != "2.0.0" {
		t.Errorf("api_versions: %+v", versions)
	}
	call(t, &tn, "GET", "/vnflcm/v2/vnf_instances", nil, "Version", "").expect(t, http.StatusBadRequest, "Version header is missing")
	call(t, &tn, "GET", "/vnflcm/v2/vnf_instances", nil, "Version", "1.3.0").expect(t, http.StatusNotAcceptable, "not served")
	a := call(t, &tn, "PUT", "/vnflcm/v2/vnf_instances", "{}").expect(t, http.StatusMethodNotAllowed)
	if a.header.Get("Allow") != "GET, POST" {
		t.Errorf("Allow: %q", a.header.Get("Allow"))
	}
	call(t, &tn, "GET", "/vnflcm/v2/nothing", nil).expect(t, http.StatusNotFound)
}

// TestInstanceLifecycleOverREST: create (by vnfdId), read, the tasks a NOT_INSTANTIATED
// instance allows, occurrences, one task at a time (409), delete only NOT_INSTANTIATED.
func TestInstanceLifecycleOverREST(t *testing.T) {
	tn := newTenant(t, "nfvo-life", "nfvo", nil)
	onboarded(t, tn.namespace, "vnfd-life", v1alpha1.PackageEnabled)
	onboarded(t, tn.namespace, "vnfd-off", v1alpha1.PackageDisabled)

	call(t, &tn, "POST", "/vnflcm/v2/vnf_instances", map[string]any{"vnfdId": "nosuch"}).expect(t, http.StatusUnprocessableEntity, `nosuch`)
	call(t, &tn, "POST", "/vnflcm/v2/vnf_instances", map[string]any{"vnfdId": "vnfd-off"}).expect(t, http.StatusUnprocessableEntity, "DISABLED")
	call(t, &tn, "POST", "/vnflcm/v2/vnf_instances", map[string]any{}).expect(t, http.StatusBadRequest, "vnfdId is required")
	call(t, &tn, "POST", "/vnflcm/v2/vnf_instances", `{"vnfdId": `).expect(t, http.StatusBadRequest, "ends too early")
	call(t, &tn, "POST", "/vnflcm/v2/vnf_instances", `{"vnfdId": 7}`).expect(t, http.StatusBadRequest, "vnfdId must be a string")

	created := call(t, &tn, "POST", "/vnflcm/v2/vnf_instances", map[string]any{"vnfdId": "vnfd-life", "vnfInstanceName": "core-1",
		"vnfInstanceDescription": "the core", "metadata": map[string]any{"tenant": "blue"}}).expect(t, http.StatusCreated)
	var inst nfvapi.VnfInstance
	created.decode(t, &inst)
	if inst.InstantiationState != "NOT_INSTANTIATED" || inst.VnfProvider != "Acme" || inst.VnfInstanceName != "core-1" || inst.Links.Instantiate == nil || inst.Links.Scale != nil {
		t.Errorf("created: %+v", inst)
	}
	path := location(t, created)
	svc := &v1alpha1.Service{}
	must(t, env.admin.Get(context.Background(), client.ObjectKey{Namespace: tn.namespace, Name: inst.ID}, svc))
	if svc.Spec.Source.VnfPackage == nil || svc.Spec.Source.VnfPackage.VnfdID != "vnfd-life" || svc.Spec.InstantiationState != v1alpha1.NotInstantiated {
		t.Errorf("the Service: %+v", svc.Spec)
	}

	call(t, &tn, "POST", path+"/scale", map[string]any{"type": "SCALE_OUT", "aspectId": "a"}).expect(t, http.StatusConflict, "NOT_INSTANTIATED")
	call(t, &tn, "POST", path+"/terminate", map[string]any{"terminationType": "FORCEFUL"}).expect(t, http.StatusConflict, "NOT_INSTANTIATED")
	accepted := call(t, &tn, "POST", path+"/instantiate", map[string]any{"flavourId": "simple", "additionalParams": map[string]any{"lcm-kubernetes-def-files": []string{"Files/kubernetes/a.yaml"}}}).expect(t, http.StatusAccepted)
	if len(accepted.body) != 0 {
		t.Errorf("a 202 with a body: %s", accepted.body)
	}
	occPath := location(t, accepted)
	call(t, &tn, "POST", path+"/instantiate", map[string]any{"flavourId": "simple"}).expect(t, http.StatusConflict, "in progress")

	var occ nfvapi.VnfLcmOpOcc
	call(t, &tn, "GET", occPath, nil).expect(t, 200).decode(t, &occ)
	if occ.Operation != "INSTANTIATE" || occ.OperationState != "STARTING" || occ.VnfInstanceID != inst.ID || occ.Links.Cancel == nil {
		t.Errorf("occurrence: %+v", occ)
	}
	op := &v1alpha1.Operation{}
	must(t, env.admin.Get(context.Background(), client.ObjectKey{Namespace: tn.namespace, Name: occ.ID}, op))
	if op.Spec.Instantiate == nil || op.Spec.Instantiate.FlavourID != "simple" || op.Spec.Instantiate.AdditionalParams["lcm-kubernetes-def-files"].Raw == nil {
		t.Errorf("the Operation: %+v", op.Spec)
	}

	// The occurrence fails: FAILED_TEMP allows retry and fail, not cancel.
	call(t, &tn, "POST", occPath+"/retry", nil).expect(t, http.StatusConflict, "FAILED_TEMP")
	op.Status.OperationState = v1alpha1.StateFailedTemp
	op.Status.Message = "hook Vnflcm.instantiate_end failed"
	must(t, env.admin.Status().Update(context.Background(), op))
	occ = nfvapi.VnfLcmOpOcc{}
	call(t, &tn, "GET", occPath, nil).expect(t, 200).decode(t, &occ)
	if occ.Error == nil || !strings.Contains(occ.Error.Detail, "instantiate_end") || occ.Links.Retry == nil || occ.Links.Cancel != nil {
		t.Errorf("FAILED_TEMP: %+v", occ)
	}
	call(t, &tn, "POST", occPath+"/cancel", map[string]any{"cancelMode": "GRACEFUL"}).expect(t, http.StatusConflict)
	call(t, &tn, "POST", occPath+"/retry", nil).expect(t, http.StatusAccepted)
	must(t, env.admin.Get(context.Background(), client.ObjectKey{Namespace: tn.namespace, Name: occ.ID}, op))
	if op.Spec.Retries != 1 {
		t.Errorf("retries %d after a retry", op.Spec.Retries)
	}
	call(t, &tn, "POST", occPath+"/retry", nil).expect(t, http.StatusConflict, "already asked for")

	call(t, &tn, "DELETE", path, nil).expect(t, http.StatusConflict, "in progress")
	op.Status.OperationState = v1alpha1.StateFailed
	must(t, env.admin.Status().Update(context.Background(), op))
	call(t, &tn, "DELETE", path, nil).expect(t, http.StatusNoContent)
	call(t, &tn, "GET", path, nil).expect(t, http.StatusNotFound, inst.ID)
}

// TestTenancy: two NFVOs in two namespaces see only their own; an identity that may
// read instances but not create occurrences cannot scale.
func TestTenancy(t *testing.T) {
	a := newTenant(t, "nfvo-a", "nfvo", nil)
	b := newTenant(t, "nfvo-b", "nfvo", nil)
	onboarded(t, a.namespace, "vnfd-a", v1alpha1.PackageEnabled)
	var inst nfvapi.VnfInstance
	call(t, &a, "POST", "/vnflcm/v2/vnf_instances", map[string]any{"vnfdId": "vnfd-a"}).expect(t, 201).decode(t, &inst)
	call(t, &b, "GET", "/vnflcm/v2/vnf_instances/"+inst.ID, nil).expect(t, http.StatusNotFound)
	call(t, &b, "POST", "/vnflcm/v2/vnf_instances", map[string]any{"vnfdId": "vnfd-a"}).expect(t, http.StatusUnprocessableEntity)
	var list []nfvapi.VnfInstance
	call(t, &b, "GET", "/vnflcm/v2/vnf_instances", nil).expect(t, 200).decode(t, &list)
	if len(list) != 0 {
		t.Errorf("NFVO b sees %d instances of a", len(list))
	}
	call(t, &a, "GET", "/vnflcm/v2/vnf_instances", nil).expect(t, 200).decode(t, &list)
	if len(list) != 1 || list[0].ID != inst.ID {
		t.Errorf("NFVO a sees %+v", list)
	}

	reader := newTenant(t, a.namespace, "reader", []rbacv1.PolicyRule{{APIGroups: []string{"calaf.io"}, Resources: []string{"services", "operations"}, Verbs: []string{"get", "list"}}})
	svc := &v1alpha1.Service{}
	must(t, env.admin.Get(context.Background(), client.ObjectKey{Namespace: a.namespace, Name: inst.ID}, svc))
	svc.Status.InstantiationState = v1alpha1.Instantiated
	must(t, env.admin.Status().Update(context.Background(), svc))
	call(t, &reader, "GET", "/vnflcm/v2/vnf_instances/"+inst.ID, nil).expect(t, 200)
	call(t, &reader, "POST", "/vnflcm/v2/vnf_instances/"+inst.ID+"/scale", map[string]any{"type": "SCALE_OUT", "aspectId": "a"}).expect(t, http.StatusForbidden, "reader")
	ops := &v1alpha1.OperationList{}
	must(t, env.admin.List(context.Background(), ops, client.InNamespace(a.namespace)))
	if len(ops.Items) != 0 {
		t.Errorf("a forbidden scale made %d Operations", len(ops.Items))
	}
}

// TestListsFilteredSelectedPaged: SOL013 filters, selectors and paging over instances.
func TestListsFilteredSelectedPaged(t *testing.T) {
	tn := newTenant(t, "nfvo-list", "nfvo", nil)
	onboarded(t, tn.namespace, "vnfd-list", v1alpha1.PackageEnabled)
	names := []string{"alpha", "beta", "gamma", "delta", "epsilon"}
	for _, n := range names {
		call(t, &tn, "POST", "/vnflcm/v2/vnf_instances", map[string]any{"vnfdId": "vnfd-list", "vnfInstanceName": n, "metadata": map[string]any{"n": n}}).expect(t, 201)
	}
	// The Service of a node a service template of the package substitutes belongs to its
	// parent: it is no VNF instance of the NFVO's.
	var parent map[string]any
	call(t, &tn, "GET", "/vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName,alpha)", nil).expect(t, 200).decode(t, &[]any{&parent})
	child := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: tn.namespace, Name: "alpha-db",
		Labels: map[string]string{v1alpha1.LabelParent: parent["id"].(string)}}}
	child.Spec.Source.Upload = &v1alpha1.UploadSource{ConfigMapName: "db", SHA256: strings.Repeat("0", 64)}
	if err := env.admin.Create(context.Background(), child); err != nil {
		t.Fatal(err)
	}
	call(t, &tn, "GET", "/vnflcm/v2/vnf_instances/alpha-db", nil).expect(t, http.StatusNotFound)
	var seen []string
	path := "/vnflcm/v2/vnf_instances"
	for pages := 0; path != ""; pages++ {
		if pages > 5 {
			t.Fatal("the pages do not end")
		}
		a := call(t, &tn, "GET", path, nil).expect(t, 200)
		var page []map[string]any
		a.decode(t, &page)
		if len(page) > 2 {
			t.Errorf("a page of %d, the page size is 2", len(page))
		}
		for _, item := range page {
			seen = append(seen, item["vnfInstanceName"].(string))
			if _, ok := item["metadata"]; ok {
				t.Error("metadata shown by default (exclude_default)")
			}
		}
		path = nextLink(t, a)
	}
	if len(seen) != len(names) {
		t.Errorf("paging showed %v", seen)
	}
	var filtered []map[string]any
	call(t, &tn, "GET", "/vnflcm/v2/vnf_instances?filter=(in,vnfInstanceName,beta,delta)&fields=metadata", nil).expect(t, 200).decode(t, &filtered)
	if len(filtered) != 2 || filtered[0]["metadata"] == nil || filtered[0]["vnfInstanceName"] != nil {
		t.Errorf("filtered and selected: %v", filtered)
	}
	call(t, &tn, "GET", "/vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName", nil).expect(t, http.StatusBadRequest, "filter")
	call(t, &tn, "GET", "/vnflcm/v2/vnf_instances?filter=(eq,nosuch,x)", nil).expect(t, http.StatusBadRequest, "nosuch")
	call(t, &tn, "GET", "/vnflcm/v2/vnf_instances?all_fields&fields=metadata", nil).expect(t, http.StatusBadRequest, "all_fields")
	call(t, &tn, "GET", "/vnflcm/v2/vnf_instances?nextpage_opaque_marker=!!", nil).expect(t, http.StatusBadRequest, "marker")
}

func nextLink(t *testing.T, a answer) string {
	t.Helper()
	link := a.header.Get("Link")
	if link == "" {
		return ""
	}
	start, end := strings.Index(link, "<"), strings.Index(link, ">")
	if start < 0 || end < start || !strings.HasSuffix(link, `rel="next"`) {
		t.Fatalf("Link %q", link)
	}
	return strings.TrimPrefix(link[start+1:end], env.server.URL)
}

// TestBounds: an oversized body is 413, a modification with a stale ETag 412.
func TestBounds(t *testing.T) {
	tn := newTenant(t, "nfvo-bounds", "nfvo", nil)
	onboarded(t, tn.namespace, "vnfd-bounds", v1alpha1.PackageEnabled)
	huge := `{"vnfdId": "vnfd-bounds", "vnfInstanceDescription": "` + strings.Repeat("x", 2<<20) + `"}`
	call(t, &tn, "POST", "/vnflcm/v2/vnf_instances", huge).expect(t, http.StatusRequestEntityTooLarge)
	var inst nfvapi.VnfInstance
	call(t, &tn, "POST", "/vnflcm/v2/vnf_instances", map[string]any{"vnfdId": "vnfd-bounds"}).expect(t, 201).decode(t, &inst)
	path := "/vnflcm/v2/vnf_instances/" + inst.ID
	etag := call(t, &tn, "GET", path, nil).expect(t, 200).header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	call(t, &tn, "PATCH", path, map[string]any{"vnfInstanceName": "x"}, "If-Match", `"stale"`).expect(t, http.StatusPreconditionFailed)
	call(t, &tn, "PATCH", path, map[string]any{"vimConnectionInfo": map[string]any{"v": map[string]any{}}}).expect(t, http.StatusUnprocessableEntity, "vimConnectionInfo")
	occ := location(t, call(t, &tn, "PATCH", path, map[string]any{"vnfInstanceName": "renamed", "metadata": map[string]any{"k": "v"}}, "If-Match", etag).expect(t, http.StatusAccepted))
	var o nfvapi.VnfLcmOpOcc
	call(t, &tn, "GET", occ+"?", nil).expect(t, 200).decode(t, &o)
	if o.Operation != "MODIFY_INFO" {
		t.Errorf("PATCH made %s", o.Operation)
	}
}

// TestInstantiateIntoTheRequestsVIM: an instantiate request's Kubernetes VIM
// (vimConnectionInfo, as Tacker's NFVO sends it) becomes a Secret of the instance, owned
// by it, written as the caller who may only create Secrets, and the instance's
// spec.kubeConfig names it; a VIM that cannot be used is a 422 that says why and never
// shows its token, and changes nothing; a VIM known by its id alone is the VNFM's own
// cluster.
func TestInstantiateIntoTheRequestsVIM(t *testing.T) {
	ctx := context.Background()
	tn := newTenant(t, "nfvo-vim", "nfvo", nil)
	onboarded(t, tn.namespace, "vnfd-vim", v1alpha1.PackageEnabled)
	instance := func() (string, client.ObjectKey) {
		var inst nfvapi.VnfInstance
		created := call(t, &tn, "POST", "/vnflcm/v2/vnf_instances", map[string]any{"vnfdId": "vnfd-vim"}).expect(t, http.StatusCreated)
		created.decode(t, &inst)
		return location(t, created), client.ObjectKey{Namespace: tn.namespace, Name: inst.ID}
	}
	vim := func(endpoint string, access map[string]any) map[string]any {
		return map[string]any{"vim1": map[string]any{"vimId": "site-a", "vimType": "ETSINFV.KUBERNETES.V_1",
			"interfaceInfo": map[string]any{"endpoint": endpoint, "ssl_ca_cert": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
			"accessInfo":    access}}
	}

	path, key := instance()
	refused := call(t, &tn, "POST", path+"/instantiate", map[string]any{"flavourId": "simple",
		"vimConnectionInfo": vim("http://10.20.0.10:6443", map[string]any{"bearer_token": "tok-never-shown"})}).expect(t, http.StatusUnprocessableEntity, "vimConnectionInfo.vim1")
	if strings.Contains(string(refused.body), "tok-never-shown") {
		t.Errorf("the refusal shows the token: %s", refused.body)
	}
	call(t, &tn, "POST", path+"/instantiate", map[string]any{"flavourId": "simple",
		"vimConnectionInfo": vim("https://10.20.0.10:6443", map[string]any{})}).expect(t, http.StatusUnprocessableEntity, "no credentials")
	svc := &v1alpha1.Service{}
	must(t, env.admin.Get(ctx, key, svc))
	if svc.Spec.KubeConfig != nil {
		t.Errorf("a refused VIM changed spec.kubeConfig: %+v", svc.Spec.KubeConfig)
	}

	call(t, &tn, "POST", path+"/instantiate", map[string]any{"flavourId": "simple",
		"vimConnectionInfo": vim("https://10.20.0.10:6443", map[string]any{"bearer_token": "tok-site-a"})}).expect(t, http.StatusAccepted)
	must(t, env.admin.Get(ctx, key, svc))
	if svc.Spec.KubeConfig == nil || !strings.HasPrefix(svc.Spec.KubeConfig.SecretRef.Name, key.Name+"-vim-") || svc.Spec.KubeConfig.SecretRef.Key != "value" {
		t.Fatalf("spec.kubeConfig: %+v", svc.Spec.KubeConfig)
	}
	secret := &corev1.Secret{}
	must(t, env.admin.Get(ctx, client.ObjectKey{Namespace: tn.namespace, Name: svc.Spec.KubeConfig.SecretRef.Name}, secret))
	if owners := secret.OwnerReferences; len(owners) != 1 || owners[0].UID != svc.UID {
		t.Errorf("the VIM's Secret is not the instance's: %+v", owners)
	}
	if kc := string(secret.Data["value"]); !strings.Contains(kc, "https://10.20.0.10:6443") || !strings.Contains(kc, "tok-site-a") {
		t.Errorf("the VIM's kubeconfig: %s", kc)
	}

	path, key = instance()
	call(t, &tn, "POST", path+"/instantiate", map[string]any{"flavourId": "simple",
		"vimConnectionInfo": map[string]any{"default": map[string]any{"vimId": "default", "vimType": "kubernetes"}}}).expect(t, http.StatusAccepted)
	must(t, env.admin.Get(ctx, key, svc))
	if svc.Spec.KubeConfig != nil {
		t.Errorf("a VIM known by its id alone moved the instance: %+v", svc.Spec.KubeConfig)
	}
}
