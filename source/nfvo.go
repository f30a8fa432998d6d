package source

import (
	"context"
	"errors"
	"io"

	"calaf.io/calaf/api/v1alpha1"
)

// NFVOPackages are the VNF packages an external NFVO onboarded, by VNFD id (SOL003 VNF
// package management, package nfvo): where a Service's VNFD id is fetched from when its
// namespace holds no VnfPackage of it.
type NFVOPackages interface {
	PackageContent(ctx context.Context, vnfdID string, limit int64) (io.ReadCloser, error)
}

// fetchFromNFVO fetches the NFVO's package of a VNFD id. A VNFD id names one version of a
// VNFD, so a package once fetched is not fetched again; it passes the signature policy as
// every package does (Fetch).
func (f *Fetcher) fetchFromNFVO(ctx context.Context, vnfdID string) (*Artifact, error) {
	f.lock.Lock()
	sum, known := f.nfvoSums[vnfdID]
	f.lock.Unlock()
	if known {
		if pkg, ok := f.Store.Get(sum); ok {
			return &Artifact{Package: pkg, Revision: "sha256:" + sum}, nil
		}
	}
	value, err, _ := f.flight.Do("nfvo#"+vnfdID, func() (any, error) { return f.downloadFromNFVO(ctx, vnfdID) })
	if err != nil {
		return nil, err
	}
	return value.(*Artifact), nil
}

func (f *Fetcher) downloadFromNFVO(ctx context.Context, vnfdID string) (*Artifact, error) {
	content, err := f.NFVO.PackageContent(ctx, vnfdID, f.maxArchive()+1)
	if err != nil {
		return nil, transient(v1alpha1.ReasonFetchFailed, "no VnfPackage of the namespace holds VNFD %s, and the NFVO's could not be fetched: %v", shortID(vnfdID), err)
	}
	defer content.Close()
	archive, err := io.ReadAll(content)
	if err != nil {
		return nil, transient(v1alpha1.ReasonFetchFailed, "the NFVO's package of VNFD %s: %v", shortID(vnfdID), err)
	}
	if int64(len(archive)) > f.maxArchive() {
		return nil, permanent(v1alpha1.ReasonInvalidPackage, "the NFVO's package of VNFD %s is larger than %d bytes", shortID(vnfdID), f.maxArchive())
	}
	sum := SHA256(archive)
	pkg, err := f.store(sum, archive, "the NFVO's package of VNFD "+shortID(vnfdID))
	if err != nil {
		return nil, err
	}
	f.lock.Lock()
	if f.nfvoSums == nil {
		f.nfvoSums = map[string]string{}
	}
	f.nfvoSums[vnfdID] = sum
	f.lock.Unlock()
	return &Artifact{Package: pkg, Revision: "sha256:" + sum}, nil
}

// notFound tells whether an error says that no VnfPackage holds a VNFD id.
func notFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason == v1alpha1.ReasonVnfPackageNotFound
}
