package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/locked"
)

// UploadKey is the ConfigMap binaryData key of an uploaded package archive.
const UploadKey = "package.tar.gz"

// Artifact is a fetched package and the revision it was fetched at.
type Artifact struct {
	Package *tosca.Package
	// Revision identifies what was fetched: "sha256:<archive>" for archives,
	// "<ref>@sha1:<commit>" for git, "<tag>@sha256:<manifest>" for OCI.
	Revision string
	// Verification says how the package's signature was verified (SOL004); Signer is who
	// signed it, when the signature verified.
	Verification *v1alpha1.PackageVerification
	Signer       *v1alpha1.PackageSigner
	// Archive is the archive the package came in (its SHA-256 and size); nil for a package
	// that came as files (git).
	Archive *Archive
	// OperatorAnchored tells that the signature verified with a chain ending at one of the
	// operator's own trust anchors, not at anchors a Service named (spec.verify.anchors):
	// only such a signer can be trusted by the cluster admin's render policy.
	OperatorAnchored bool
}

// Error is a failed fetch. Transient errors (network, server, missing object) are retried
// with backoff; the others need a change of the Service or of the package.
type Error struct {
	Reason    string
	Transient bool
	Err       error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// untrustedCertificate tells whether err is a TLS server certificate the operator does not
// trust (unknown authority, invalid, or for another host): a change is needed, waiting
// does not help.
func untrustedCertificate(err error) bool {
	var unknownAuthority x509.UnknownAuthorityError
	var certInvalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	return err != nil && (errors.As(err, &unknownAuthority) || errors.As(err, &certInvalid) || errors.As(err, &hostname))
}

func transient(reason string, format string, args ...any) error {
	return &Error{Reason: reason, Transient: true, Err: fmt.Errorf(format, args...)}
}

func permanent(reason string, format string, args ...any) error {
	return &Error{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Fetcher fetches the packages of Services into a Store. Concurrent fetches of the same
// source revision share one download.
type Fetcher struct {
	Store *Store
	// Reader reads Secrets and ConfigMaps (uncached: the operator caches only its own objects).
	Reader client.Reader
	// ReaderFor, when set, gives the reader of a Service's Secrets and ConfigMaps instead:
	// one acting as the identity the Service acts with.
	ReaderFor ReaderFunc
	// MaxArchiveBytes bounds a download.
	MaxArchiveBytes int64
	// Timeout bounds one download.
	Timeout time.Duration
	// Git and OCI fetch those kinds of source; nil means unsupported.
	Git GitFetcher
	OCI OCIFetcher
	// Verify is the operator's signature policy: every package, whatever its source,
	// passes it (with the Service's spec.verify) before the Service sees it.
	Verify VerifyDefaults
	// Profiles caches the profiles packages import by reference (resolveProfiles); nil
	// refuses the packages that import one.
	Profiles *locked.Cache

	// NFVO, when set, is where a VNFD id no VnfPackage of the namespace holds is fetched
	// from (an external NFVO, SOL003 direct mode).
	NFVO NFVOPackages

	flight   singleflight.Group
	lock     sync.Mutex
	etags    map[string]etagEntry
	nfvoSums map[string]string
}

// ReaderFunc returns the reader that reads the Secrets and ConfigMaps a Service names
// (uploads, credentials, trust anchors) as the identity the Service acts with.
type ReaderFunc func(svc *v1alpha1.Service) (client.Reader, error)

// readerOf returns the reader of a Service's Secrets and ConfigMaps: fn's, else (fn
// unset or answering nil) fallback.
func readerOf(fn ReaderFunc, fallback client.Reader, svc *v1alpha1.Service) (client.Reader, error) {
	reader, _, err := identityReader(fn, fallback, svc)
	return reader, err
}

// identityReader is readerOf, and tells whether the reader is fn's (the Service's own
// identity).
func identityReader(fn ReaderFunc, fallback client.Reader, svc *v1alpha1.Service) (client.Reader, bool, error) {
	if fn == nil {
		return fallback, false, nil
	}
	reader, err := fn(svc)
	if err != nil {
		return nil, false, transient(v1alpha1.ReasonFetchFailed, "acting as the Service's identity: %v", err)
	}
	if reader == nil {
		return fallback, false, nil
	}
	return reader, true, nil
}

// GitFetcher fetches packages from git repositories.
type GitFetcher interface {
	Fetch(ctx context.Context, svc *v1alpha1.Service) (*Artifact, error)
}

// OCIFetcher fetches packages from OCI registries.
type OCIFetcher interface {
	Fetch(ctx context.Context, svc *v1alpha1.Service) (*Artifact, error)
}

type etagEntry struct {
	etag string
	key  string
}

// Fetch returns the package a Service names, once its digests and its signature passed
// the Service's verification policy.
func (f *Fetcher) Fetch(ctx context.Context, svc *v1alpha1.Service) (*Artifact, error) {
	artifact, err := f.fetch(ctx, svc)
	if err != nil {
		return nil, err
	}
	// The artifact returned by a fetcher may be shared with concurrent reconciles: the
	// verdict of this Service's policy goes into a copy.
	verified := *artifact
	if err := f.verify(ctx, svc, &verified); err != nil {
		return nil, err
	}
	if err := f.resolveProfiles(ctx, svc, &verified); err != nil {
		return nil, err
	}
	if archive, ok := f.Store.ArchiveOf(verified.Package); ok {
		verified.Archive = &archive
	}
	return &verified, nil
}

// fetch returns the package a Service names from its source.
func (f *Fetcher) fetch(ctx context.Context, svc *v1alpha1.Service) (*Artifact, error) {
	src := svc.Spec.Source
	switch {
	case src.Upload != nil:
		return f.fetchUpload(ctx, svc)
	case src.URL != "":
		return f.fetchURL(ctx, svc)
	case src.Git != nil:
		if f.Git == nil {
			return nil, permanent(v1alpha1.ReasonInvalidSource, "git sources are not enabled in this operator")
		}
		return f.Git.Fetch(ctx, svc)
	case src.OCI != nil:
		if f.OCI == nil {
			return nil, permanent(v1alpha1.ReasonInvalidSource, "OCI sources are not enabled in this operator")
		}
		return f.OCI.Fetch(ctx, svc)
	case src.VnfPackage != nil:
		return f.fetchVnfPackage(ctx, svc)
	}
	return nil, permanent(v1alpha1.ReasonInvalidSource, "the source names no package")
}

func (f *Fetcher) fetchUpload(ctx context.Context, svc *v1alpha1.Service) (*Artifact, error) {
	upload := svc.Spec.Source.Upload
	revision := "sha256:" + upload.SHA256
	reader, own, err := identityReader(f.ReaderFor, f.Reader, svc)
	if err != nil {
		return nil, err
	}
	if pkg, ok := f.Store.Get(upload.SHA256); ok {
		if own {
			if err := f.checkUpload(ctx, reader, svc); err != nil {
				return nil, err
			}
		}
		return &Artifact{Package: pkg, Revision: revision}, nil
	}
	value, err, _ := f.flight.Do("upload/"+upload.SHA256, func() (any, error) {
		var cm corev1.ConfigMap
		key := types.NamespacedName{Namespace: svc.Namespace, Name: upload.ConfigMapName}
		if err := reader.Get(ctx, key, &cm); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, transient(v1alpha1.ReasonFetchFailed, "uploaded package ConfigMap %q not found", upload.ConfigMapName)
			}
			return nil, transient(v1alpha1.ReasonFetchFailed, "reading uploaded package ConfigMap %q: %v", upload.ConfigMapName, err)
		}
		archive, ok := cm.BinaryData[UploadKey]
		if !ok {
			return nil, permanent(v1alpha1.ReasonInvalidSource, "ConfigMap %q has no binaryData %q", upload.ConfigMapName, UploadKey)
		}
		if sum := SHA256(archive); sum != upload.SHA256 {
			return nil, permanent(v1alpha1.ReasonIntegrityFailed, "uploaded package has sha256 %s, the Service expects %s", sum, upload.SHA256)
		}
		return f.store(upload.SHA256, archive, upload.ConfigMapName)
	})
	if err != nil {
		return nil, err
	}
	return &Artifact{Package: value.(*tosca.Package), Revision: revision}, nil
}

// checkUpload makes sure that a Service acting as its own identity may read the
// ConfigMap of its upload even when the package is already stored (another Service
// uploaded the same bytes): a metadata-only read, so that no Service gets a package by
// its digest alone.
func (f *Fetcher) checkUpload(ctx context.Context, reader client.Reader, svc *v1alpha1.Service) error {
	upload := svc.Spec.Source.Upload
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if err := reader.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: upload.ConfigMapName}, meta); err != nil {
		if apierrors.IsNotFound(err) {
			return transient(v1alpha1.ReasonFetchFailed, "uploaded package ConfigMap %q not found", upload.ConfigMapName)
		}
		return transient(v1alpha1.ReasonFetchFailed, "reading uploaded package ConfigMap %q: %v", upload.ConfigMapName, err)
	}
	return nil
}

func (f *Fetcher) fetchURL(ctx context.Context, svc *v1alpha1.Service) (*Artifact, error) {
	src := svc.Spec.Source
	if src.SHA256 != "" {
		if pkg, ok := f.Store.Get(src.SHA256); ok {
			return &Artifact{Package: pkg, Revision: "sha256:" + src.SHA256}, nil
		}
	}
	httpClient, header, err := f.httpClient(ctx, svc)
	if err != nil {
		return nil, err
	}
	flightKey := svc.Namespace + "/" + src.URL + "#" + src.SHA256
	value, err, _ := f.flight.Do(flightKey, func() (any, error) {
		return f.download(ctx, httpClient, header, src.URL, src.SHA256)
	})
	if err != nil {
		return nil, err
	}
	return value.(*Artifact), nil
}

func (f *Fetcher) download(ctx context.Context, httpClient *http.Client, header http.Header, url, expected string) (*Artifact, error) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, permanent(v1alpha1.ReasonInvalidSource, "invalid URL: %v", err)
	}
	req.Header = header.Clone()
	f.lock.Lock()
	cached, haveETag := f.etags[url]
	f.lock.Unlock()
	if haveETag && expected == "" {
		req.Header.Set("If-None-Match", cached.etag)
	}
	resp, err := httpClient.Do(req)
	if untrustedCertificate(err) {
		return nil, permanent(v1alpha1.ReasonInvalidSource, "downloading %s: %v (add the CA as ca.crt to the source Secret)", url, unwrapURLError(err))
	}
	if err != nil {
		return nil, transient(v1alpha1.ReasonFetchFailed, "downloading %s: %v", url, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && haveETag {
		if pkg, ok := f.Store.Get(cached.key); ok {
			return &Artifact{Package: pkg, Revision: "sha256:" + cached.key}, nil
		}
		return nil, transient(v1alpha1.ReasonFetchFailed, "downloading %s: the server answered 304 for a package no longer cached", url)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return nil, permanent(v1alpha1.ReasonAuthenticationFailed, "downloading %s: HTTP %s: the server refused the credentials (check secretRef)", url, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, transient(v1alpha1.ReasonFetchFailed, "downloading %s: HTTP %s", url, resp.Status)
	}
	archive, err := io.ReadAll(io.LimitReader(resp.Body, f.maxArchive()+1))
	if err != nil {
		return nil, transient(v1alpha1.ReasonFetchFailed, "downloading %s: %v", url, err)
	}
	if int64(len(archive)) > f.maxArchive() {
		return nil, permanent(v1alpha1.ReasonInvalidPackage, "package at %s is larger than %d bytes", url, f.maxArchive())
	}
	sum := SHA256(archive)
	if expected != "" && sum != expected {
		return nil, permanent(v1alpha1.ReasonIntegrityFailed, "package at %s has sha256 %s, the Service expects %s", url, sum, expected)
	}
	pkg, err := f.store(sum, archive, url)
	if err != nil {
		return nil, err
	}
	if etag := resp.Header.Get("ETag"); etag != "" {
		f.lock.Lock()
		if f.etags == nil {
			f.etags = map[string]etagEntry{}
		}
		f.etags[url] = etagEntry{etag: etag, key: sum}
		f.lock.Unlock()
	}
	return &Artifact{Package: pkg, Revision: "sha256:" + sum}, nil
}

// store extracts an archive into the store; invalid archives are permanent errors.
func (f *Fetcher) store(key string, archive []byte, name string) (*tosca.Package, error) {
	pkg, err := f.Store.PutArchive(key, archive, name)
	if err != nil {
		return nil, storeError(err)
	}
	return pkg, nil
}

// storeError classifies a failure to store a package: a manifest mismatch is an
// integrity failure, an invalid package a permanent error, anything else (disk) transient.
func storeError(err error) error {
	switch {
	case tosca.IsIntegrity(err):
		return &Error{Reason: v1alpha1.ReasonIntegrityFailed, Err: fmt.Errorf("package integrity: %w", err)}
	case tosca.IsInvalid(err):
		return &Error{Reason: v1alpha1.ReasonInvalidPackage, Err: err}
	}
	return transient(v1alpha1.ReasonFetchFailed, "storing package: %v", err)
}

// atRevision names the revision in a failure of its content (integrity, invalid
// package), so the message says which revision is refused. The error may be shared
// between concurrent fetches: it is copied, never changed.
func atRevision(err error, revision string) error {
	var e *Error
	if errors.As(err, &e) && (e.Reason == v1alpha1.ReasonIntegrityFailed || e.Reason == v1alpha1.ReasonInvalidPackage) {
		return &Error{Reason: e.Reason, Transient: e.Transient, Err: fmt.Errorf("revision %s: %w", revision, e.Err)}
	}
	return err
}

func (f *Fetcher) maxArchive() int64 {
	if f.MaxArchiveBytes > 0 {
		return f.MaxArchiveBytes
	}
	return 64 << 20
}

// httpClient builds the client and headers for a URL source from its Secret.
func (f *Fetcher) httpClient(ctx context.Context, svc *v1alpha1.Service) (*http.Client, http.Header, error) {
	header := http.Header{}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	ref := svc.Spec.Source.SecretRef
	if ref != nil {
		reader, err := readerOf(f.ReaderFor, f.Reader, svc)
		if err != nil {
			return nil, nil, err
		}
		data, err := readSecret(ctx, reader, svc.Namespace, ref.Name)
		if err != nil {
			return nil, nil, err
		}
		if token := data["token"]; len(token) > 0 {
			header.Set("Authorization", "Bearer "+string(token))
		} else if user := data["username"]; len(user) > 0 {
			req := &http.Request{Header: header}
			req.SetBasicAuth(string(user), string(data["password"]))
		}
		if ca := data["ca.crt"]; len(ca) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return nil, nil, permanent(v1alpha1.ReasonInvalidSource, "source Secret %q: ca.crt holds no PEM certificate", ref.Name)
			}
			transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
	}
	return &http.Client{Transport: transport}, header, nil
}

// readSecret returns the data of a source Secret; a missing Secret is transient (it may
// be created after the Service).
func readSecret(ctx context.Context, reader client.Reader, namespace, name string) (map[string][]byte, error) {
	var secret corev1.Secret
	if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, transient(v1alpha1.ReasonFetchFailed, "source Secret %q not found", name)
		}
		return nil, transient(v1alpha1.ReasonFetchFailed, "reading source Secret %q: %v", name, err)
	}
	return secret.Data, nil
}

func unwrapURLError(err error) error {
	var urlErr interface{ Unwrap() error }
	if errors.As(err, &urlErr) {
		if inner := urlErr.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}
