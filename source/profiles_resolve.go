package source

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/locked"
)

// NewProfileCache returns the cache of the profiles packages import by reference, in dir
// (kept across restarts: what it holds is verified when read).
func NewProfileCache(dir string, limits tosca.Limits) *locked.Cache {
	return &locked.Cache{Dir: dir, Limits: limits}
}

// resolveProfiles resolves the profiles a fetched package imports by reference from its
// lock (package tosca/locked), in this process: from the profile cache, or fetched by
// their locked digest from where they are published, refused when a reference names
// another digest now, and judged by the Service's signature policy as the package was.
// Workers are handed the package with the profiles' verified files only.
func (f *Fetcher) resolveProfiles(ctx context.Context, svc *v1alpha1.Service, artifact *Artifact) error {
	if len(artifact.Package.ReferenceImports()) == 0 {
		return nil
	}
	if f.Profiles == nil {
		return permanent(v1alpha1.ReasonInvalidPackage, "revision %s imports profiles by reference, and this operator has no profile cache to resolve them", artifact.Revision)
	}
	policy, err := f.policy(ctx, svc)
	if err != nil {
		return err
	}
	fetcher, err := f.profileFetcher(ctx, svc)
	if err != nil {
		return err
	}
	resolver := &locked.Resolver{Cache: f.Profiles, Fetcher: fetcher, Policy: policy}
	pkg, _, err := resolver.Resolve(ctx, artifact.Package)
	if err != nil {
		return resolutionError(artifact.Revision, err)
	}
	artifact.Package = pkg
	return nil
}

// profileFetcher reaches the registries of profiles as the Service reaches its own: the
// registry of its OCI source with the source's credentials and settings, any other
// anonymously over HTTPS.
func (f *Fetcher) profileFetcher(ctx context.Context, svc *v1alpha1.Service) (*ProfileFetcher, error) {
	fetcher := &ProfileFetcher{MaxBytes: f.maxArchive(), Timeout: f.Timeout}
	src := svc.Spec.Source.OCI
	if src == nil {
		return fetcher, nil
	}
	reader, err := readerOf(f.ReaderFor, f.Reader, svc)
	if err != nil {
		return nil, err
	}
	opts, _, err := (&OCI{}).options(ctx, reader, svc.Namespace, src)
	if err != nil {
		return nil, err
	}
	sourceHost := registryHost(strings.TrimPrefix(src.URL, "oci://"))
	fetcher.Options = func(host string) OCIOptions {
		if strings.EqualFold(host, sourceHost) {
			return opts
		}
		return OCIOptions{}
	}
	return fetcher, nil
}

// resolutionError words a failed resolution as the Service's source condition says it:
// a digest or a signature refused is an integrity failure, an import not locked or a
// profile that is not one an invalid package, an unreachable registry a fetch failure.
func resolutionError(revision string, err error) error {
	var e *locked.Error
	wrapped := fmt.Errorf("revision %s: %w", revision, err)
	switch {
	case errors.As(err, &e) && (e.Reason == locked.ReasonDigestMismatch || e.Reason == locked.ReasonSignature):
		return &Error{Reason: v1alpha1.ReasonIntegrityFailed, Err: wrapped}
	case errors.As(err, &e) && e.Reason == locked.ReasonUnavailable:
		return &Error{Reason: v1alpha1.ReasonFetchFailed, Transient: e.Transient, Err: wrapped}
	case errors.As(err, &e), tosca.IsInvalid(err):
		return &Error{Reason: v1alpha1.ReasonInvalidPackage, Err: wrapped}
	}
	return &Error{Reason: v1alpha1.ReasonFetchFailed, Transient: true, Err: wrapped}
}
