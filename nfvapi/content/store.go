// Package content keeps the content of the VNF packages uploaded through the NFV API
// (SOL005 package_content) where it fits, never in etcd beyond a small bound: a package of
// at most Config.InlineBytes in an upload ConfigMap of its namespace, written as the
// caller; a larger one in the OCI registry the admin configures, as the artifact `calaf
// package push` writes, named by digest. Uploads are streamed to a file and bounded; the
// content is read back for the package_content, vnfd and artifacts endpoints.
package content

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/sol004"
)

// MaxInlineBytes bounds Config.InlineBytes: a ConfigMap's data may hold 1 MiB, and etcd
// keeps objects of 1.5 MiB at most.
const MaxInlineBytes = 768 << 10

// LabelVnfPackage names, on an upload ConfigMap the store wrote, the VnfPackage it holds
// the content of.
const LabelVnfPackage = "calaf.io/vnf-package"

// Config says where content goes.
type Config struct {
	// Registry is where packages larger than InlineBytes go: oci://host[/path]; each
	// namespace's packages in the repository <Registry>/<namespace>. Empty: only packages
	// of at most InlineBytes are taken.
	Registry string
	// Insecure allows a plain-HTTP registry.
	Insecure bool
	// Keychain has the credentials the store pushes and pulls with (nil: anonymous).
	Keychain authn.Keychain
	// CABundle is PEM certificates to trust for the registry besides the system's.
	CABundle []byte
	// PullSecret names the dockerconfigjson Secret, present in each namespace, with which
	// the operator pulls what the store pushed; empty when the registry needs none.
	PullSecret string
	// MaxBytes bounds an upload (the operator's package limit by default: a larger one
	// could not be onboarded).
	MaxBytes int64
	// InlineBytes: content of at most this size is kept in an upload ConfigMap (512 KiB by
	// default; MaxInlineBytes at most).
	InlineBytes int64
	// TempDir is where uploads are spooled (os.TempDir by default).
	TempDir string
	// Limits bound the package read from an upload (tosca.DefaultLimits by default).
	Limits tosca.Limits
}

// Store keeps and reads back the content of VNF packages. Safe for concurrent use.
type Store struct {
	cfg Config
	// reading bounds the packages read (a whole archive in memory, then extracted) at
	// once.
	reading chan struct{}
}

// maxReading is how many packages the store reads at once.
const maxReading = 2

// New returns a store with cfg's settings, defaults filled in.
func New(cfg Config) (*Store, error) {
	if cfg.Limits == (tosca.Limits{}) {
		cfg.Limits = tosca.DefaultLimits()
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = cfg.Limits.MaxTotalBytes
	}
	if cfg.InlineBytes <= 0 {
		cfg.InlineBytes = 512 << 10
	}
	if cfg.InlineBytes > MaxInlineBytes {
		return nil, fmt.Errorf("content kept in ConfigMaps is bounded by %d bytes, not %d", MaxInlineBytes, cfg.InlineBytes)
	}
	if cfg.Registry != "" {
		if _, err := source.ParseOCIRepository(cfg.Registry, cfg.Insecure); err != nil {
			return nil, fmt.Errorf("content registry: %w", err)
		}
	}
	return &Store{cfg: cfg, reading: make(chan struct{}, maxReading)}, nil
}

// MaxBytes is the bound of an upload.
func (s *Store) MaxBytes() int64 { return s.cfg.MaxBytes }

// TooLargeError is content beyond what the store takes (HTTP 413).
type TooLargeError struct {
	Limit  int64
	Reason string
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the package is larger than %d bytes%s", e.Limit, e.Reason)
}

// InvalidError is content that is no package the store takes (HTTP 400): not a zip, a
// hostile archive. Message is one line naming what is wrong.
type InvalidError struct {
	Message string
}

func (e *InvalidError) Error() string { return e.Message }

// Put reads a package's content from body (at most MaxBytes), checks that it is a sane
// CSAR (or SOL004 option 2 zip), keeps it — in an upload ConfigMap of the package's
// namespace written with c (the caller's client) and owned by the package, or pushed to
// the registry — and returns the source that names it. Nothing is kept of content that is
// refused. The VnfPackage is not changed: the caller sets the source.
func (s *Store) Put(ctx context.Context, c client.Client, pkg *v1alpha1.VnfPackage, body io.Reader) (v1alpha1.Source, error) {
	spooled, err := s.spool(body)
	if err != nil {
		return v1alpha1.Source{}, err
	}
	defer os.Remove(spooled.path)
	opened, err := s.check(ctx, spooled)
	if err != nil {
		return v1alpha1.Source{}, err
	}
	defer opened.Close()
	if spooled.size <= s.cfg.InlineBytes {
		return s.putConfigMap(ctx, c, pkg, spooled)
	}
	if s.cfg.Registry == "" {
		return v1alpha1.Source{}, &TooLargeError{Limit: s.cfg.InlineBytes, Reason: " and no registry is configured for larger ones"}
	}
	return s.push(ctx, pkg, spooled, opened)
}

// spooled is an upload written to a file.
type spooled struct {
	path   string
	size   int64
	sha256 string
}

// spool copies body into a temporary file, hashing it, and refuses it past MaxBytes.
func (s *Store) spool(body io.Reader) (*spooled, error) {
	f, err := os.CreateTemp(s.cfg.TempDir, "calaf-upload-")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hash := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, hash), io.LimitReader(body, s.cfg.MaxBytes+1))
	switch {
	case err != nil:
		os.Remove(f.Name())
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, &TooLargeError{Limit: min(tooLarge.Limit, s.cfg.MaxBytes)}
		}
		return nil, fmt.Errorf("reading the upload: %w", err)
	case n > s.cfg.MaxBytes:
		os.Remove(f.Name())
		return nil, &TooLargeError{Limit: s.cfg.MaxBytes}
	case n == 0:
		os.Remove(f.Name())
		return nil, &InvalidError{Message: "the package is empty"}
	}
	return &spooled{path: f.Name(), size: n, sha256: hex.EncodeToString(hash.Sum(nil))}, nil
}

// check opens an upload as the operator will (a SOL004 option 2 zip unwrapped, the
// package's limits, a zip whose entries agree), and returns the package: hostile or
// broken archives are refused before anything is kept.
func (s *Store) check(ctx context.Context, up *spooled) (*tosca.Package, error) {
	release, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	data, err := os.ReadFile(up.path)
	if err != nil {
		return nil, err
	}
	pkg, err := openArchive(data, s.cfg.Limits)
	if err != nil {
		return nil, &InvalidError{Message: "the package cannot be read: " + firstLine(err)}
	}
	return pkg, nil
}

// acquire waits for a turn to read a package (maxReading at once) and returns its end.
func (s *Store) acquire(ctx context.Context) (func(), error) {
	select {
	case s.reading <- struct{}{}:
		return func() { <-s.reading }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// openArchive opens a CSAR, or the CSAR of a SOL004 option 2 zip.
func openArchive(data []byte, limits tosca.Limits) (pkg *tosca.Package, err error) {
	defer func() {
		if recovered := recover(); recovered != nil {
			pkg, err = nil, fmt.Errorf("reading the archive failed unexpectedly (%v)", recovered)
		}
	}()
	env, err := sol004.Unwrap(data, limits)
	if err != nil {
		return nil, err
	}
	name := "package.csar"
	if env != nil {
		data, name = env.CSAR, env.CSARName
	}
	return tosca.OpenArchive(data, name, limits)
}

// firstLine is an error's first diagnostic, on one line.
func firstLine(err error) string {
	if diags := tosca.DiagnosticsOf(err); len(diags) > 0 {
		line := diags[0].String()
		if len(diags) > 1 {
			line += fmt.Sprintf(" (and %d more problems)", len(diags)-1)
		}
		return line
	}
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// putConfigMap keeps small content in an upload ConfigMap of the package's namespace,
// created as the caller and owned by the package (deleted with it).
func (s *Store) putConfigMap(ctx context.Context, c client.Client, pkg *v1alpha1.VnfPackage, up *spooled) (v1alpha1.Source, error) {
	data, err := os.ReadFile(up.path)
	if err != nil {
		return v1alpha1.Source{}, err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: pkg.Namespace, Name: configMapName(pkg.Name, up.sha256),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "VnfPackage",
				Name: pkg.Name, UID: pkg.UID, BlockOwnerDeletion: ptr.To(false)}}},
		BinaryData: map[string][]byte{source.UploadKey: data},
	}
	if len(validation.IsValidLabelValue(pkg.Name)) == 0 {
		cm.Labels = map[string]string{LabelVnfPackage: pkg.Name}
	}
	if err := c.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return v1alpha1.Source{}, err
	}
	return v1alpha1.Source{Upload: &v1alpha1.UploadSource{ConfigMapName: cm.Name, SHA256: up.sha256}}, nil
}

// configMapName is the upload ConfigMap of a package's content: "vnfpkg-", the package's
// name cut to fit, and 12 hex digits of the content's SHA-256.
func configMapName(pkgName, sum string) string {
	const maxName = 253 - len("vnfpkg-") - 13
	if len(pkgName) > maxName {
		pkgName = strings.TrimRight(pkgName[:maxName], ".-")
	}
	return "vnfpkg-" + pkgName + "-" + sum[:12]
}

// push stores content in the registry, in the repository of the package's namespace
// tagged with the package's name, and returns the source naming it by digest.
func (s *Store) push(ctx context.Context, pkg *v1alpha1.VnfPackage, up *spooled, opened *tosca.Package) (v1alpha1.Source, error) {
	repository := strings.TrimSuffix(s.cfg.Registry, "/") + "/" + pkg.Namespace
	ref, err := source.ParseOCIReference(repository+":"+tagOf(pkg.Name), s.cfg.Insecure)
	if err != nil {
		return v1alpha1.Source{}, err
	}
	digest, err := source.PushOCIFile(ref, up.path, up.size, up.sha256, opened, s.ociOptions(ctx))
	if err != nil {
		return v1alpha1.Source{}, fmt.Errorf("pushing the package to the content registry: %w", err)
	}
	src := v1alpha1.Source{OCI: &v1alpha1.OCISource{URL: repository, Digest: digest.String(), Insecure: s.cfg.Insecure}}
	if s.cfg.PullSecret != "" {
		src.OCI.SecretRef = &v1alpha1.LocalObjectReference{Name: s.cfg.PullSecret}
	}
	return src, nil
}

// invalidTag is what an OCI tag may not hold.
var invalidTag = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// tagOf is the tag of a package's content: its name, made a valid tag.
func tagOf(name string) string {
	tag := invalidTag.ReplaceAllString(name, "_")
	if len(tag) > 128 {
		tag = tag[:128]
	}
	if tag == "" || tag[0] == '.' || tag[0] == '-' {
		tag = "p" + tag
	}
	return tag
}

func (s *Store) ociOptions(ctx context.Context) source.OCIOptions {
	return source.OCIOptions{Insecure: s.cfg.Insecure, Keychain: s.cfg.Keychain, CABundle: s.cfg.CABundle, Context: ctx, UserAgent: "calaf-nfv-api"}
}
