package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/locked"
)

// ProfileConfig is the config blob of a profile artifact.
type ProfileConfig struct {
	// Name and Version are the profile's (its template_name and template_version).
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	// Entry is the file templates import; Digest the digest of the profile's files.
	Entry  string `json:"entry"`
	Digest string `json:"digest"`
}

// PushProfile stores a profile — its CSAR, or a SOL004 option 2 zip holding the CSAR and
// its signature — in a registry as a Calaf profile artifact, and returns the digest of
// its manifest (what a package's lock records). pkg is the profile the artifact holds.
func PushProfile(ref name.Reference, artifact []byte, pkg *tosca.Package, config ProfileConfig, opts OCIOptions) (v1.Hash, error) {
	config.Entry, config.Digest = pkg.Entry, pkg.Digest
	data, err := json.Marshal(config)
	if err != nil {
		return v1.Hash{}, err
	}
	return pushArtifact(ref, ociArtifact{
		config: static.NewLayer(data, locked.ConfigMediaType), layer: static.NewLayer(artifact, locked.LayerMediaType),
		title: "profile.csar", artifactType: locked.ConfigMediaType,
		annotations: map[string]string{"io.calaf.profile.digest": pkg.Digest, "io.calaf.profile.entry": pkg.Entry},
	}, opts)
}

// ociArtifact is what pushArtifact stores: a config blob and one layer.
type ociArtifact struct {
	config, layer v1.Layer
	title         string
	artifactType  string
	annotations   map[string]string
}

// pushArtifact writes an artifact's blobs and its manifest; it returns the manifest's
// digest.
func pushArtifact(ref name.Reference, a ociArtifact, opts OCIOptions) (v1.Hash, error) {
	ropts := opts.remoteOptions()
	repo := ref.Context()
	for _, layer := range []v1.Layer{a.config, a.layer} {
		if err := remote.WriteLayer(repo, layer, ropts...); err != nil {
			return v1.Hash{}, ociError("pushing to", repo.String(), err)
		}
	}
	configDesc, err := describe(a.config)
	if err != nil {
		return v1.Hash{}, err
	}
	layerDesc, err := describe(a.layer)
	if err != nil {
		return v1.Hash{}, err
	}
	layerDesc.Annotations = map[string]string{"org.opencontainers.image.title": a.title}
	manifest := v1.Manifest{
		SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: a.artifactType,
		Config: configDesc, Layers: []v1.Descriptor{layerDesc}, Annotations: a.annotations,
	}
	raw, err := json.Marshal(manifest)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.Put(ref, rawManifest{raw: raw, mediaType: types.OCIManifestSchema1}, ropts...); err != nil {
		return v1.Hash{}, ociError("pushing to", ref.String(), err)
	}
	digest, _, err := v1.SHA256(strings.NewReader(string(raw)))
	return digest, err
}

// ProfileFetcher fetches the profiles packages import by reference (locked.Fetcher):
// OCI artifacts pushed by calaf profile push, by digest, and archives served over HTTPS.
type ProfileFetcher struct {
	// Options gives the options of a registry host: credentials, plain HTTP, CAs. Nil:
	// anonymous, HTTPS.
	Options func(host string) OCIOptions
	// HTTP fetches https:// archives; nil: a client with the system's roots.
	HTTP *http.Client
	// MaxBytes bounds an artifact; Timeout one request.
	MaxBytes int64
	Timeout  time.Duration
}

var _ locked.Fetcher = (*ProfileFetcher)(nil)

func (p *ProfileFetcher) options(ctx context.Context, host string) OCIOptions {
	var opts OCIOptions
	if p.Options != nil {
		opts = p.Options(host)
	}
	opts.Context = ctx
	if opts.UserAgent == "" {
		opts.UserAgent = "calaf"
	}
	return opts
}

func (p *ProfileFetcher) timeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return time.Minute
}

func (p *ProfileFetcher) maxBytes() int64 {
	if p.MaxBytes > 0 {
		return p.MaxBytes
	}
	return tosca.DefaultLimits().MaxTotalBytes
}

// reference parses an oci:// import with the options of its registry.
func (p *ProfileFetcher) reference(ctx context.Context, url string) (name.Reference, OCIOptions, error) {
	rest := strings.TrimPrefix(url, "oci://")
	host, _, _ := strings.Cut(rest, "/")
	opts := p.options(ctx, host)
	ref, err := ParseOCIReference(url, opts.Insecure)
	if err != nil {
		return nil, opts, &locked.Error{Reason: locked.ReasonInvalid, URL: url, Err: err}
	}
	return ref, opts, nil
}

// Current returns the digest an oci:// reference names now: its pinned digest, or its
// tag's (one HEAD request); "" for a tag the registry does not have (the locked digest
// is fetched as it is) and for https:// archives.
func (p *ProfileFetcher) Current(ctx context.Context, url string) (string, error) {
	if !strings.HasPrefix(url, "oci://") {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout())
	defer cancel()
	ref, opts, err := p.reference(ctx, url)
	if err != nil {
		return "", err
	}
	if d, ok := ref.(name.Digest); ok {
		return d.DigestStr(), nil
	}
	desc, err := remote.Head(ref, opts.remoteOptions()...)
	var terr *transport.Error
	switch {
	case errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound:
		return "", nil
	case err != nil:
		return "", profileError(url, ociError("resolving", ref.String(), err))
	}
	return desc.Digest.String(), nil
}

// Fetch returns the artifact a reference names at digest ("" for what it names now).
func (p *ProfileFetcher) Fetch(ctx context.Context, url, digest string) (*locked.Fetched, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout())
	defer cancel()
	if strings.HasPrefix(url, "https://") {
		return p.fetchArchive(ctx, url)
	}
	ref, opts, err := p.reference(ctx, url)
	if err != nil {
		return nil, err
	}
	if digest != "" {
		ref = ref.Context().Digest(digest)
	}
	return p.fetchOCI(url, ref, opts)
}

// fetchOCI reads a profile artifact's manifest and its layer.
func (p *ProfileFetcher) fetchOCI(url string, ref name.Reference, opts OCIOptions) (*locked.Fetched, error) {
	ropts := opts.remoteOptions()
	desc, err := remote.Get(ref, ropts...)
	if err != nil {
		return nil, profileError(url, ociError("fetching", ref.String(), err))
	}
	var manifest v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &manifest); err != nil {
		return nil, &locked.Error{Reason: locked.ReasonInvalid, URL: url, Err: fmt.Errorf("%s is not an OCI image manifest: %v", ref, err)}
	}
	var layer *v1.Descriptor
	for i := range manifest.Layers {
		if manifest.Layers[i].MediaType == locked.LayerMediaType {
			layer = &manifest.Layers[i]
		}
	}
	if manifest.Config.MediaType != locked.ConfigMediaType || layer == nil {
		return nil, &locked.Error{Reason: locked.ReasonInvalid, URL: url,
			Err: fmt.Errorf("%s is not a Calaf profile (config media type %q; push one with calaf profile push)", ref, manifest.Config.MediaType)}
	}
	if layer.Size > p.maxBytes() {
		return nil, &locked.Error{Reason: locked.ReasonInvalid, URL: url, Err: fmt.Errorf("the profile is %d bytes, more than the limit of %d", layer.Size, p.maxBytes())}
	}
	blob, err := remote.Layer(ref.Context().Digest(layer.Digest.String()), ropts...)
	if err != nil {
		return nil, profileError(url, ociError("fetching", ref.String(), err))
	}
	reader, err := blob.Compressed()
	if err != nil {
		return nil, profileError(url, ociError("fetching", ref.String(), err))
	}
	defer reader.Close()
	data, err := readLimited(reader, p.maxBytes())
	if err != nil {
		return nil, profileError(url, ociError("fetching", ref.String(), err))
	}
	return &locked.Fetched{Digest: desc.Digest.String(), Artifact: data, Proof: desc.Manifest}, nil
}

// fetchArchive downloads a profile archive over HTTPS: its digest is its SHA-256.
func (p *ProfileFetcher) fetchArchive(ctx context.Context, url string) (*locked.Fetched, error) {
	client := p.HTTP
	if client == nil {
		client = &http.Client{}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, &locked.Error{Reason: locked.ReasonInvalid, URL: url, Err: err}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, locked.Unavailable(url, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, locked.Unavailable(url, fmt.Errorf("HTTP %s", resp.Status))
	}
	data, err := readLimited(resp.Body, p.maxBytes())
	if err != nil {
		return nil, locked.Unavailable(url, err)
	}
	return &locked.Fetched{Digest: "sha256:" + SHA256(data), Artifact: data}, nil
}

// readLimited reads at most limit bytes, refusing more.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("more than the limit of %d bytes", limit)
	}
	return data, nil
}

// profileError turns a source failure into a resolution failure: transient ones may pass.
func profileError(url string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return &locked.Error{Reason: locked.ReasonUnavailable, URL: url, Transient: e.Transient, Err: e.Err}
	}
	return locked.Unavailable(url, err)
}
