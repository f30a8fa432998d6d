// Package vnfpackages makes VNF packages for tests from the project's SOL001 test
// packages (test/etsi): CSARs with a SOL004 manifest, signed or tampered with, and the
// upload ConfigMaps and VnfPackages that hold them.
package vnfpackages

import (
	"context"
	"os"
	"path/filepath"
	"runtime"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/sol004"
)

// HelloVnfdID is the VNFD id of the test package cnf-manifests.
const HelloVnfdID = "6f1d3c2a-5b7e-4c10-9a44-0e2b8d7c1f30"

// Options shape a CSAR.
type Options struct {
	// Manifest names the SOL004 manifest to add (listing every file with its SHA-256);
	// empty adds none.
	Manifest string
	// Signer signs the manifest (SOL004 option 1).
	Signer *sol004.Credentials
	// Replace writes files over the package's after the manifest was made: a file
	// replaced no longer has the digest the manifest says.
	Replace map[string]string
	// Files are written over the package's before the manifest is made.
	Files map[string]string
}

// Dir is the directory of a test package of test/etsi.
func Dir(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "etsi", name)
}

// CSAR packs a test package of test/etsi as a CSAR (zip) shaped by opts.
func CSAR(name string, opts Options) ([]byte, error) {
	dir := Dir(name)
	if len(opts.Files) > 0 {
		copied, err := os.MkdirTemp("", "calaf-vnfpackage-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(copied)
		if err := os.CopyFS(copied, os.DirFS(dir)); err != nil {
			return nil, err
		}
		for path, content := range opts.Files {
			full := filepath.Join(copied, filepath.FromSlash(path))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				return nil, err
			}
		}
		dir = copied
	}
	pkg, err := tosca.Open(dir, tosca.DefaultLimits())
	if err != nil {
		return nil, err
	}
	defer pkg.Close()
	extra := map[string][]byte{}
	if opts.Manifest != "" {
		manifest := pkg.WriteManifest(opts.Manifest, [][2]string{{"vnf_provider_id", "Calaf Test Vendor"}, {"vnf_package_version", "1.0"}})
		if opts.Signer != nil {
			if manifest, err = sol004.SignManifest(manifest, opts.Signer); err != nil {
				return nil, err
			}
		}
		extra[opts.Manifest] = manifest
	}
	for path, content := range opts.Replace {
		extra[path] = []byte(content)
	}
	return source.PackCSARWith(pkg, extra)
}

// Upload stores an archive in an upload ConfigMap of a namespace (as `calaf deploy` and
// the NFV API's content store do for small packages) and returns the source naming it.
func Upload(ctx context.Context, c client.Client, namespace, name string, archive []byte) (v1alpha1.Source, error) {
	sum := source.SHA256(archive)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-" + sum[:8]}, BinaryData: map[string][]byte{source.UploadKey: archive}}
	if err := c.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return v1alpha1.Source{}, err
	}
	return v1alpha1.Source{Upload: &v1alpha1.UploadSource{ConfigMapName: cm.Name, SHA256: sum}}, nil
}

// Create creates a VnfPackage of a namespace whose content is src.
func Create(ctx context.Context, c client.Client, namespace, name string, src v1alpha1.Source, verify *v1alpha1.VerifySpec) (*v1alpha1.VnfPackage, error) {
	pkg := &v1alpha1.VnfPackage{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.VnfPackageSpec{Source: &src, Verify: verify}}
	return pkg, c.Create(ctx, pkg)
}
