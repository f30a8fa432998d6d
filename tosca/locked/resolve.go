package locked

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/sol004"
)

// Fetcher reaches where profiles are published.
type Fetcher interface {
	// Current returns the digest a reference names now (an OCI tag's manifest; a pinned
	// digest), "" when only a download can tell (an archive served over HTTPS).
	Current(ctx context.Context, url string) (string, error)
	// Fetch returns the artifact a reference names at digest ("" at lock time: what it
	// names now), its Digest set.
	Fetch(ctx context.Context, url, digest string) (*Fetched, error)
}

// Reasons of a resolution that failed.
const (
	// ReasonNotLocked: the package imports a reference its lock does not pin.
	ReasonNotLocked = "NotLocked"
	// ReasonDigestMismatch: what the reference names, or what was fetched for it, is not
	// the locked digest, or its files are not the locked content.
	ReasonDigestMismatch = "DigestMismatch"
	// ReasonSignature: the profile's signature does not pass the trust policy.
	ReasonSignature = "SignatureRefused"
	// ReasonInvalid: the profile's archive or files are not a valid profile.
	ReasonInvalid = "InvalidProfile"
	// ReasonUnavailable: the profile is not cached and cannot be fetched now.
	ReasonUnavailable = "Unavailable"
)

// Error is an import that cannot be resolved: why (a Reason*), which import, and whether
// waiting may help (Transient: the registry is unreachable).
type Error struct {
	Reason    string
	URL       string
	Transient bool
	Err       error
}

func (e *Error) Error() string { return "profile " + e.URL + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Unavailable wraps a failure to reach a reference: transient.
func Unavailable(url string, err error) *Error {
	return &Error{Reason: ReasonUnavailable, URL: url, Transient: true, Err: err}
}

// Resolver resolves a package's imports by reference from its lock.
type Resolver struct {
	Cache *Cache
	// Fetcher fetches what the cache lacks, and tells whether a reference still names its
	// locked digest; nil resolves from the cache alone (offline).
	Fetcher Fetcher
	// Policy judges each profile's signature (Off: none needed).
	Policy sol004.Policy
}

// Resolved is one import, resolved.
type Resolved struct {
	Import  tosca.Import
	Locked  tosca.LockedImport
	Verdict *sol004.Verdict
	// Cached says that the artifact came from the cache, not from the network.
	Cached bool
}

// Resolve returns pkg with its imports by reference resolved (tosca.Package.WithImports):
// each must be locked; each is taken from the cache or fetched by its locked digest,
// refused when the reference names another digest now (a tag moved: the lock is what is
// deployed, and a reference that changed under it is refused, not followed), when its
// bytes or files are not the locked ones, or when its signature fails the policy.
// Without imports by reference, pkg is returned as it is.
func (r *Resolver) Resolve(ctx context.Context, pkg *tosca.Package) (*tosca.Package, []Resolved, error) {
	refs := pkg.ReferenceImports()
	if len(refs) == 0 {
		return pkg, nil, nil
	}
	lock, err := pkg.ReadLock()
	if err != nil {
		return nil, nil, err
	}
	var resolved []Resolved
	var imports []tosca.Import
	for _, ref := range refs {
		entry := lock.Find(ref.URL)
		if entry == nil {
			return nil, nil, &Error{Reason: ReasonNotLocked, URL: ref.URL,
				Err: fmt.Errorf("imported at %s:%d but not locked: run calaf package lock on the package", ref.File, ref.Line)}
		}
		res, err := r.resolve(ctx, *entry)
		if err != nil {
			return nil, nil, err
		}
		resolved, imports = append(resolved, *res), append(imports, res.Import)
	}
	return pkg.WithImports(imports), resolved, nil
}

// resolve resolves one locked import.
func (r *Resolver) resolve(ctx context.Context, entry tosca.LockedImport) (*Resolved, error) {
	fetched, cached := r.Cache.Get(entry.Digest)
	if r.Fetcher != nil {
		if err := r.checkCurrent(ctx, entry, cached); err != nil {
			return nil, err
		}
	}
	if !cached {
		if r.Fetcher == nil {
			return nil, &Error{Reason: ReasonUnavailable, URL: entry.URL, Err: fmt.Errorf("%s is not in the profile cache (%s), and this command does not fetch: run calaf package lock on the package, which fetches it", entry.Digest, r.Cache.Dir)}
		}
		var err error
		if fetched, err = r.fetch(ctx, entry.URL, entry.Digest); err != nil {
			return nil, err
		}
	}
	res, err := r.open(entry.URL, fetched)
	if err != nil {
		return nil, err
	}
	if res.Import.Profile.Digest != entry.Content {
		return nil, &Error{Reason: ReasonDigestMismatch, URL: entry.URL, Err: fmt.Errorf("its files have digest %s, the lock says %s", res.Import.Profile.Digest, entry.Content)}
	}
	res.Locked, res.Cached = entry, cached
	return res, nil
}

// checkCurrent refuses a reference that names another digest than the locked one now.
// When the reference cannot be asked (the registry is unreachable), a cached artifact
// is used as it is: resolution works offline from the cache.
func (r *Resolver) checkCurrent(ctx context.Context, entry tosca.LockedImport, cached bool) error {
	current, err := r.Fetcher.Current(ctx, entry.URL)
	var failure *Error
	switch {
	case err != nil && cached && errors.As(err, &failure) && failure.Transient:
		return nil
	case err != nil:
		return asError(entry.URL, err)
	case current != "" && current != entry.Digest:
		return &Error{Reason: ReasonDigestMismatch, URL: entry.URL,
			Err: fmt.Errorf("digest mismatch: it names %s now, the package's lock says %s: the profile changed under the same reference, and Calaf deploys locked digests only (if the change is meant, lock the package again with calaf package lock --update)", current, entry.Digest)}
	}
	return nil
}

// fetch downloads an artifact at digest, verifies it and keeps it in the cache.
func (r *Resolver) fetch(ctx context.Context, url, digest string) (*Fetched, error) {
	fetched, err := r.Fetcher.Fetch(ctx, url, digest)
	if err != nil {
		return nil, asError(url, err)
	}
	if digest == "" {
		digest = fetched.Digest
	}
	if err := fetched.Verify(digest); err != nil {
		return nil, &Error{Reason: ReasonDigestMismatch, URL: url, Err: fmt.Errorf("digest mismatch: what was fetched is not %s: %v", digest, err)}
	}
	fetched.Digest = digest
	if err := r.Cache.Put(fetched); err != nil {
		return nil, &Error{Reason: ReasonUnavailable, URL: url, Transient: true, Err: fmt.Errorf("caching it: %v", err)}
	}
	return fetched, nil
}

// open opens a verified artifact's files and judges its signature.
func (r *Resolver) open(url string, fetched *Fetched) (*Resolved, error) {
	profile, evidence, err := r.Cache.Open(fetched)
	if err != nil {
		return nil, &Error{Reason: ReasonInvalid, URL: url, Err: err}
	}
	verdict, err := r.Policy.Check(evidence)
	if err != nil {
		return nil, &Error{Reason: ReasonSignature, URL: url, Err: fmt.Errorf("signature: %s", strings.ReplaceAll(err.Error(), "the package", "the profile"))}
	}
	imp := tosca.Import{URL: url, Digest: fetched.Digest, Profile: profile.Describe()}
	return &Resolved{Import: imp, Verdict: verdict}, nil
}

// asError keeps an *Error as it is and makes any other failure of a fetcher transient.
func asError(url string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return Unavailable(url, err)
}

// Lock resolves every import by reference of pkg — the entries of its present lock as
// they are unless update, the others at what they name now — fetching and verifying
// each, and returns the lock that pins them (for calaf.lock) with what was resolved.
func (r *Resolver) Lock(ctx context.Context, pkg *tosca.Package, update bool) (*tosca.Lock, []Resolved, error) {
	if r.Fetcher == nil {
		return nil, nil, errors.New("locking needs to reach the registries")
	}
	old, err := pkg.ReadLock()
	if err != nil {
		return nil, nil, err
	}
	lock := &tosca.Lock{}
	var resolved []Resolved
	for _, ref := range pkg.ReferenceImports() {
		if entry := old.Find(ref.URL); entry != nil && !update {
			res, err := r.resolve(ctx, *entry)
			if err != nil {
				return nil, nil, err
			}
			lock.Imports, resolved = append(lock.Imports, *entry), append(resolved, *res)
			continue
		}
		res, err := r.lockOne(ctx, ref.URL)
		if err != nil {
			return nil, nil, err
		}
		lock.Imports, resolved = append(lock.Imports, res.Locked), append(resolved, *res)
	}
	return lock, resolved, nil
}

// lockOne fetches what a reference names now and pins it.
func (r *Resolver) lockOne(ctx context.Context, url string) (*Resolved, error) {
	digest, err := r.Fetcher.Current(ctx, url)
	if err != nil {
		return nil, asError(url, err)
	}
	fetched, cached := r.Cache.Get(digest)
	if !cached {
		if fetched, err = r.fetch(ctx, url, digest); err != nil {
			return nil, err
		}
	}
	res, err := r.open(url, fetched)
	if err != nil {
		return nil, err
	}
	res.Locked = tosca.LockedImport{URL: url, Digest: fetched.Digest, Content: res.Import.Profile.Digest}
	if res.Verdict != nil && res.Verdict.Signer != nil {
		res.Locked.Signer = res.Verdict.Signer.Subject
	}
	return res, nil
}
