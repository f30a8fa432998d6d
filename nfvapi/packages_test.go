package nfvapi_test

import (
	"archive/zip"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/outbound"
	"calaf.io/calaf/nfvapi"
	"calaf.io/calaf/nfvapi/content"
	"calaf.io/calaf/source"
	"calaf.io/calaf/test/vnfpackages"
)

// helloCSAR is the test package cnf-manifests as a CSAR with a manifest.
func helloCSAR(t *testing.T) []byte {
	t.Helper()
	archive, err := vnfpackages.CSAR("cnf-manifests", vnfpackages.Options{Manifest: "hello.mf"})
	must(t, err)
	return archive
}

// markOnboarded writes the status the operator's onboarding writes for a package whose
// content was uploaded (the operator does not run in this suite).
func markOnboarded(t *testing.T, namespace, id string, usage v1alpha1.PackageUsageState) {
	t.Helper()
	ctx := context.Background()
	pkg := &v1alpha1.VnfPackage{}
	must(t, env.admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: id}, pkg))
	pkg.Status = v1alpha1.VnfPackageStatus{OnboardingState: v1alpha1.OnboardingOnboarded, UsageState: usage,
		OnboardedSource: pkg.Spec.Source, Revision: "sha256:" + pkg.Spec.Source.Upload.SHA256,
		Checksum: &v1alpha1.PackageChecksum{Algorithm: "SHA-256", Hash: pkg.Spec.Source.Upload.SHA256},
		VnfdID:   vnfpackages.HelloVnfdID, VnfProvider: "Calaf Test Vendor", VnfProductName: "Hello CNF", VnfSoftwareVersion: "1.0", VnfdVersion: "1.0",
		SoftwareImages:      []v1alpha1.PackageSoftwareImage{{ID: "front", Name: "busybox", Version: "1.36", ImagePath: "busybox"}},
		AdditionalArtifacts: []v1alpha1.PackageArtifact{{ArtifactPath: "Files/kubernetes/front.yaml", Checksum: &v1alpha1.PackageChecksum{Algorithm: "SHA-256", Hash: "ab"}}}}
	must(t, env.admin.Status().Update(ctx, pkg))
}

// The package's life over REST, as OpenStack's client drives it: create (CREATED,
// DISABLED), upload its content (202; kept in a ConfigMap written as the caller), only
// once (409); once onboarded: show, list, read the content (and a range of it), the VNFD
// (a zip; text/plain refused for a VNFD of several files), an artifact; enable, disable;
// delete only DISABLED and NOT_IN_USE.
func TestPackageLifecycleOverREST(t *testing.T) {
	ctx := context.Background()
	tn := newTenant(t, "nfvo-pkg", "nfvo", nil)
	var versions struct {
		URIPrefix   string `json:"uriPrefix"`
		APIVersions []struct{ Version string }
	}
	call(t, &tn, "GET", "/vnfpkgm/v1/api_versions", nil).expect(t, http.StatusOK).decode(t, &versions)
	if versions.URIPrefix != "/vnfpkgm/v1" || len(versions.APIVersions) != 1 {
		t.Errorf("api_versions: %+v", versions)
	}
	created := call(t, &tn, "POST", "/vnfpkgm/v1/vnf_packages", map[string]any{"userDefinedData": map[string]any{"owner": "core"}}).expect(t, http.StatusCreated)
	var info nfvapi.VnfPkgInfo
	created.decode(t, &info)
	if info.OnboardingState != "CREATED" || info.OperationalState != "DISABLED" || info.UsageState != "NOT_IN_USE" || info.UserDefinedData["owner"] != "core" {
		t.Errorf("created: %+v", info)
	}
	path := location(t, created)
	call(t, &tn, "GET", path+"/package_content", nil).expect(t, http.StatusConflict, "CREATED, not ONBOARDED")
	call(t, &tn, "PATCH", path, map[string]any{"operationalState": "ENABLED"}).expect(t, http.StatusConflict, "only an ONBOARDED package")

	archive := helloCSAR(t)
	call(t, &tn, "PUT", path+"/package_content", archive, "Content-Type", "text/yaml").expect(t, http.StatusUnsupportedMediaType)
	call(t, &tn, "PUT", path+"/package_content", archive, "Content-Type", "application/zip").expect(t, http.StatusAccepted)
	call(t, &tn, "PUT", path+"/package_content", archive, "Content-Type", "application/zip").expect(t, http.StatusConflict, "has its content already")
	pkg := &v1alpha1.VnfPackage{}
	must(t, env.admin.Get(ctx, client.ObjectKey{Namespace: tn.namespace, Name: info.ID}, pkg))
	if pkg.Spec.Source == nil || pkg.Spec.Source.Upload == nil {
		t.Fatalf("the package's source: %+v", pkg.Spec.Source)
	}
	call(t, &tn, "GET", path, nil).expect(t, http.StatusOK).decode(t, &info)
	if info.OnboardingState != "UPLOADING" {
		t.Errorf("before the operator looks at it: %s", info.OnboardingState)
	}

	markOnboarded(t, tn.namespace, info.ID, v1alpha1.PackageNotInUse)
	shown := call(t, &tn, "GET", path, nil).expect(t, http.StatusOK)
	shown.decode(t, &info)
	if info.OnboardingState != "ONBOARDED" || info.OperationalState != "ENABLED" || info.VnfdID != vnfpackages.HelloVnfdID || info.Links.Vnfd == nil {
		t.Errorf("onboarded: %+v", info)
	}
	if shown.header.Get("ETag") == "" {
		t.Error("no ETag")
	}
	var list []map[string]any
	call(t, &tn, "GET", "/vnfpkgm/v1/vnf_packages?filter=(eq,vnfdId,"+vnfpackages.HelloVnfdID+")", nil).expect(t, http.StatusOK).decode(t, &list)
	if len(list) != 1 || list[0]["softwareImages"] != nil || list[0]["vnfProductName"] != "Hello CNF" {
		t.Errorf("list (complex attributes left out by default): %v", list)
	}
	call(t, &tn, "GET", "/vnfpkgm/v1/vnf_packages?all_fields", nil).expect(t, http.StatusOK).decode(t, &list)
	if len(list) != 1 || list[0]["softwareImages"] == nil {
		t.Errorf("list with all_fields: %v", list)
	}

	got := call(t, &tn, "GET", path+"/package_content", nil, "Accept", "application/zip").expect(t, http.StatusOK)
	if !bytes.Equal(got.body, archive) || got.header.Get("Content-Type") != "application/zip" {
		t.Errorf("the content read back: %d bytes (%s), uploaded %d", len(got.body), got.header.Get("Content-Type"), len(archive))
	}
	ranged := call(t, &tn, "GET", path+"/package_content", nil, "Range", "bytes=0-3")
	if ranged.status != http.StatusPartialContent || string(ranged.body) != "PK\x03\x04" {
		t.Errorf("a range: %d %q", ranged.status, ranged.body)
	}
	vnfd := call(t, &tn, "GET", path+"/vnfd", nil, "Accept", "application/zip").expect(t, http.StatusOK)
	names := zipNames(t, vnfd.body)
	if !strings.Contains(names, "Definitions/hello_top.vnfd.yaml") || strings.Contains(names, "Files/") {
		t.Errorf("the VNFD's files: %s", names)
	}
	call(t, &tn, "GET", path+"/vnfd", nil, "Accept", "text/plain").expect(t, http.StatusNotAcceptable, "application/zip")
	if both := call(t, &tn, "GET", path+"/vnfd", nil, "Accept", "text/plain,application/zip").expect(t, http.StatusOK); both.header.Get("Content-Type") != "application/zip" {
		t.Errorf("the VNFD of several files, text or zip accepted: %s", both.header.Get("Content-Type"))
	}
	// An artifact's path is one parameter: its slashes escaped (the server takes them
	// unescaped too, as OpenStack's client sends them).
	artifact := call(t, &tn, "GET", path+"/artifacts/Files%2Fkubernetes%2Ffront.yaml", nil).expect(t, http.StatusOK)
	if !strings.Contains(string(artifact.body), "kind: ReplicaSet") {
		t.Errorf("the artifact: %s", artifact.body)
	}
	call(t, &tn, "GET", path+"/artifacts/Files%2Fnothing.yaml", nil).expect(t, http.StatusNotFound)
	call(t, &tn, "GET", path+"/artifacts/..%2F..%2Fetc%2Fpasswd", nil).expect(t, http.StatusNotFound)

	call(t, &tn, "DELETE", path, nil).expect(t, http.StatusConflict, "ENABLED: disable it first")
	call(t, &tn, "PATCH", path, map[string]any{"operationalState": "DISABLED"}, "If-Match", `"stale"`).expect(t, http.StatusPreconditionFailed)
	etag := call(t, &tn, "GET", path, nil).expect(t, http.StatusOK).header.Get("ETag")
	var modified map[string]any
	call(t, &tn, "PATCH", path, map[string]any{"operationalState": "DISABLED", "userDefinedData": map[string]any{"owner": nil, "team": "edge"}},
		"If-Match", etag).expect(t, http.StatusOK).decode(t, &modified)
	if modified["operationalState"] != "DISABLED" {
		t.Errorf("modifications: %v", modified)
	}
	call(t, &tn, "PATCH", path, map[string]any{"operationalState": "DISABLED"}).expect(t, http.StatusConflict, "DISABLED already")
	info = nfvapi.VnfPkgInfo{}
	call(t, &tn, "GET", path, nil).expect(t, http.StatusOK).decode(t, &info)
	if _, kept := info.UserDefinedData["owner"]; info.OperationalState != "DISABLED" || kept || info.UserDefinedData["team"] != "edge" {
		t.Errorf("modified: %+v", info)
	}

	markOnboarded(t, tn.namespace, info.ID, v1alpha1.PackageInUse)
	call(t, &tn, "DELETE", path, nil).expect(t, http.StatusConflict, "IN_USE")
	markOnboarded(t, tn.namespace, info.ID, v1alpha1.PackageNotInUse)
	call(t, &tn, "DELETE", path, nil).expect(t, http.StatusNoContent)
	call(t, &tn, "GET", path, nil).expect(t, http.StatusNotFound)
}

func zipNames(t *testing.T, data []byte) string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	return strings.Join(names, ",")
}

// Uploads are bounded (413) and checked (400) before anything is kept.
func TestPackageContentRefused(t *testing.T) {
	ctx := context.Background()
	tn := newTenant(t, "nfvo-pkg-bad", "nfvo", nil)
	store, err := content.New(content.Config{MaxBytes: 4096})
	must(t, err)
	small := serverWith(t, nfvapi.Config{Content: store})
	create := func() string {
		var info nfvapi.VnfPkgInfo
		callAt(t, small, &tn, "POST", "/vnfpkgm/v1/vnf_packages", map[string]any{}).expect(t, http.StatusCreated).decode(t, &info)
		return "/vnfpkgm/v1/vnf_packages/" + info.ID
	}
	path := create()
	callAt(t, small, &tn, "PUT", path+"/package_content", helloCSAR(t), "Content-Type", "application/zip").expect(t, http.StatusRequestEntityTooLarge, "larger than 4096 bytes")
	callAt(t, small, &tn, "PUT", path+"/package_content", "not a zip", "Content-Type", "application/zip").expect(t, http.StatusBadRequest, "neither a zip")
	callAt(t, small, &tn, "PUT", path+"/package_content", []byte("PK\x03\x04broken"), "Content-Type", "application/zip").expect(t, http.StatusBadRequest, "cannot be read")
	list := &corev1.ConfigMapList{}
	must(t, env.admin.List(ctx, list, client.InNamespace(tn.namespace)))
	for _, cm := range list.Items {
		if _, ok := cm.BinaryData["package.tar.gz"]; ok {
			t.Errorf("ConfigMap %s was kept", cm.Name)
		}
	}

	callAt(t, small, &tn, "POST", path+"/package_content/upload_from_uri", map[string]any{"addressInformation": "file:///etc/passwd"}).expect(t, http.StatusBadRequest, "http(s) URL")
}

// upload_from_uri fetches the content through the outbound client, under the admin's
// outbound policy, with the credentials given, into the content store; what cannot be
// fetched (refused address, refused credentials, too large) is refused at once.
func TestPackageUploadFromURI(t *testing.T) {
	ctx := context.Background()
	tn := newTenant(t, "nfvo-pkg-uri", "nfvo", nil)
	archive := helloCSAR(t)
	vendor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, password, ok := r.BasicAuth(); !ok || user != "nfvo" || password != "vendor-password" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write(archive)
	}))
	t.Cleanup(vendor.Close)
	loopback := outbound.New(outbound.Options{Policy: outbound.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}})
	allowed := serverWith(t, nfvapi.Config{Downloads: loopback})
	small, err := content.New(content.Config{MaxBytes: 4096})
	must(t, err)
	tooSmall := serverWith(t, nfvapi.Config{Downloads: loopback, Content: small})
	create := func(server *httptest.Server) string {
		var info nfvapi.VnfPkgInfo
		callAt(t, server, &tn, "POST", "/vnfpkgm/v1/vnf_packages", map[string]any{}).expect(t, http.StatusCreated).decode(t, &info)
		return "/vnfpkgm/v1/vnf_packages/" + info.ID
	}
	from := func(password string) map[string]any {
		return map[string]any{"addressInformation": vendor.URL + "/hello.zip", "userName": "nfvo", "password": password}
	}

	path := create(env.server)
	call(t, &tn, "POST", path+"/package_content/upload_from_uri", from("vendor-password")).expect(t, http.StatusUnprocessableEntity, "refused")
	callAt(t, allowed, &tn, "POST", path+"/package_content/upload_from_uri", from("wrong")).expect(t, http.StatusUnprocessableEntity, "401 Unauthorized")
	callAt(t, tooSmall, &tn, "POST", path+"/package_content/upload_from_uri", from("vendor-password")).expect(t, http.StatusRequestEntityTooLarge)
	callAt(t, allowed, &tn, "POST", path+"/package_content/upload_from_uri", from("vendor-password")).expect(t, http.StatusAccepted)
	pkg := &v1alpha1.VnfPackage{}
	must(t, env.admin.Get(ctx, client.ObjectKey{Namespace: tn.namespace, Name: strings.TrimPrefix(path, "/vnfpkgm/v1/vnf_packages/")}, pkg))
	if pkg.Spec.Source == nil || pkg.Spec.Source.Upload == nil || pkg.Spec.Source.Upload.SHA256 != source.SHA256(archive) {
		t.Fatalf("source: %+v", pkg.Spec.Source)
	}
	if shown := callAt(t, allowed, &tn, "GET", path, nil).expect(t, http.StatusOK); strings.Contains(string(shown.body), "vendor-password") {
		t.Errorf("the password shows: %s", shown.body)
	}
	callAt(t, allowed, &tn, "POST", path+"/package_content/upload_from_uri", from("vendor-password")).expect(t, http.StatusConflict, "has its content already")
}

// Two NFVOs see only their own packages.
func TestPackageTenancy(t *testing.T) {
	a := newTenant(t, "nfvo-pkg-a", "nfvo", nil)
	b := newTenant(t, "nfvo-pkg-b", "nfvo", nil)
	var info nfvapi.VnfPkgInfo
	call(t, &a, "POST", "/vnfpkgm/v1/vnf_packages", map[string]any{}).expect(t, http.StatusCreated).decode(t, &info)
	call(t, &b, "GET", "/vnfpkgm/v1/vnf_packages/"+info.ID, nil).expect(t, http.StatusNotFound)
	call(t, &b, "DELETE", "/vnfpkgm/v1/vnf_packages/"+info.ID, nil).expect(t, http.StatusNotFound)
	var list []map[string]any
	call(t, &b, "GET", "/vnfpkgm/v1/vnf_packages", nil).expect(t, http.StatusOK).decode(t, &list)
	if len(list) != 0 {
		t.Errorf("b sees %v", list)
	}
}
