package source

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/tosca"
)

// Media types of a Calaf package stored as an OCI artifact: an OCI image manifest whose
// config describes the package and whose single layer is the CSAR (zip).
const (
	OCIConfigMediaType = "application/vnd.calaf.package.config.v1+json"
	OCILayerMediaType  = "application/vnd.calaf.package.csar.v1+zip"
	// OCIArtifactType is the manifest's artifactType (OCI 1.1).
	OCIArtifactType = OCIConfigMediaType
)

// OCIPackageConfig is the config blob of a package artifact.
type OCIPackageConfig struct {
	// Entry is the entry service template of the package.
	Entry string `json:"entry"`
	// Digest is the package digest ("sha256:..." over paths and contents; the digest Calaf
	// reports in status).
	Digest string `json:"digest"`
	// Meta holds the keys of TOSCA.meta.
	Meta map[string]string `json:"meta,omitempty"`
}

// OCIOptions reach a registry.
type OCIOptions struct {
	// Insecure allows plain HTTP; without it every request is HTTPS.
	Insecure bool
	// Keychain finds credentials; nil is anonymous.
	Keychain authn.Keychain
	// CABundle is PEM certificates to trust besides the system's.
	CABundle []byte
	// Context bounds the requests.
	Context context.Context
	// UserAgent of the requests.
	UserAgent string
}

// ParseOCIRepository parses oci://host/repository (no tag or digest).
func ParseOCIRepository(raw string, insecure bool) (name.Repository, error) {
	rest, ok := strings.CutPrefix(raw, "oci://")
	if !ok {
		return name.Repository{}, fmt.Errorf("OCI URL %q does not start with oci://", raw)
	}
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	return name.NewRepository(strings.TrimSuffix(rest, "/"), opts...)
}

// ParseOCIReference parses oci://host/repository[:tag][@sha256:digest].
func ParseOCIReference(raw string, insecure bool) (name.Reference, error) {
	rest, ok := strings.CutPrefix(raw, "oci://")
	if !ok {
		return nil, fmt.Errorf("OCI reference %q does not start with oci://", raw)
	}
	opts := []name.Option{name.WithDefaultTag("latest")}
	if insecure {
		opts = append(opts, name.Insecure)
	}
	return name.ParseReference(rest, opts...)
}

// remoteOptions turns OCIOptions into go-containerregistry options. Without Insecure, a
// guard refuses any plain-HTTP request (go-containerregistry would otherwise fall back to
// HTTP for loopback and private addresses).
func (o OCIOptions) remoteOptions() []remote.Option {
	base := remote.DefaultTransport.(*http.Transport).Clone()
	if len(o.CABundle) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		pool.AppendCertsFromPEM(o.CABundle)
		base.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var rt http.RoundTripper = base
	if !o.Insecure {
		rt = httpsOnly{next: base}
	}
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	opts := []remote.Option{remote.WithTransport(rt), remote.WithContext(ctx)}
	if o.UserAgent != "" {
		opts = append(opts, remote.WithUserAgent(o.UserAgent))
	}
	if o.Keychain != nil {
		opts = append(opts, remote.WithAuthFromKeychain(o.Keychain))
	}
	return opts
}

// errPlainHTTP is the guard's refusal of a plain-HTTP request.
var errPlainHTTP = errors.New("plain HTTP is not allowed for this registry")

type httpsOnly struct{ next http.RoundTripper }

func (h httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		return nil, errPlainHTTP
	}
	return h.next.RoundTrip(req)
}

// PushOCI stores a CSAR in a registry as a Calaf package artifact and returns the digest
// of its manifest. pkg is the opened CSAR, for the config blob.
func PushOCI(ref name.Reference, csar []byte, pkg *tosca.Package, opts OCIOptions) (v1.Hash, error) {
	return pushOCI(ref, static.NewLayer(csar, OCILayerMediaType), pkg, opts)
}

// PushOCIFile is PushOCI for a CSAR kept in a file of size bytes whose SHA-256 is sum
// (hex): the file is streamed to the registry, never held in memory.
func PushOCIFile(ref name.Reference, path string, size int64, sum string, pkg *tosca.Package, opts OCIOptions) (v1.Hash, error) {
	digest, err := v1.NewHash("sha256:" + sum)
	if err != nil {
		return v1.Hash{}, err
	}
	return pushOCI(ref, fileLayer{path: path, size: size, digest: digest}, pkg, opts)
}

// fileLayer is a blob kept in a file, as a layer of media type OCILayerMediaType.
type fileLayer struct {
	path   string
	size   int64
	digest v1.Hash
}

func (l fileLayer) Digest() (v1.Hash, error)             { return l.digest, nil }
func (l fileLayer) DiffID() (v1.Hash, error)             { return l.digest, nil }
func (l fileLayer) Compressed() (io.ReadCloser, error)   { return os.Open(l.path) }
func (l fileLayer) Uncompressed() (io.ReadCloser, error) { return os.Open(l.path) }
func (l fileLayer) Size() (int64, error)                 { return l.size, nil }
func (l fileLayer) MediaType() (types.MediaType, error)  { return OCILayerMediaType, nil }

// pushOCI pushes the layer of a CSAR, the config blob describing pkg, and the manifest
// naming both.
func pushOCI(ref name.Reference, csarLayer v1.Layer, pkg *tosca.Package, opts OCIOptions) (v1.Hash, error) {
	config, err := json.Marshal(OCIPackageConfig{Entry: pkg.Entry, Digest: pkg.Digest, Meta: pkg.Meta})
	if err != nil {
		return v1.Hash{}, err
	}
	configLayer := static.NewLayer(config, OCIConfigMediaType)
	ropts := opts.remoteOptions()
	repo := ref.Context()
	for _, layer := range []v1.Layer{configLayer, csarLayer} {
		if err := remote.WriteLayer(repo, layer, ropts...); err != nil {
			return v1.Hash{}, ociError("pushing to", repo.String(), err)
		}
	}
	configDesc, err := describe(configLayer)
	if err != nil {
		return v1.Hash{}, err
	}
	csarDesc, err := describe(csarLayer)
	if err != nil {
		return v1.Hash{}, err
	}
	csarDesc.Annotations = map[string]string{"org.opencontainers.image.title": "package.csar"}
	manifest := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  OCIArtifactType,
		Config:        configDesc,
		Layers:        []v1.Descriptor{csarDesc},
		Annotations:   map[string]string{"io.calaf.package.digest": pkg.Digest, "io.calaf.package.entry": pkg.Entry},
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

func describe(layer v1.Layer) (v1.Descriptor, error) {
	digest, err := layer.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	size, err := layer.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	mt, err := layer.MediaType()
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mt, Digest: digest, Size: size}, nil
}

type rawManifest struct {
	raw       []byte
	mediaType types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mediaType, nil }

// OCI fetches packages stored as OCI artifacts (see PushOCI). A reconcile resolves the tag
// with one HEAD request; only a manifest digest not in the Store is downloaded. Services on
// the same repository, digest and credentials share one download and one stored package.
type OCI struct {
	Store *Store
	// Reader reads the Secrets named by secretRef; ReaderFor, when set, instead.
	Reader    client.Reader
	ReaderFor ReaderFunc
	// Timeout bounds one resolve or download; default 2 minutes.
	Timeout time.Duration
	// MaxArchiveBytes bounds the CSAR layer; default the Store's package limit.
	MaxArchiveBytes int64

	flight singleflight.Group
}

var _ OCIFetcher = (*OCI)(nil)

// Fetch resolves the Service's tag (unless it pins a digest) and returns the package.
func (o *OCI) Fetch(ctx context.Context, svc *v1alpha1.Service) (*Artifact, error) {
	src := svc.Spec.Source.OCI
	repo, err := ParseOCIRepository(src.URL, src.Insecure)
	if err != nil {
		return nil, permanent(v1alpha1.ReasonInvalidSource, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout())
	defer cancel()
	reader, err := readerOf(o.ReaderFor, o.Reader, svc)
	if err != nil {
		return nil, err
	}
	opts, credID, err := o.options(ctx, reader, svc.Namespace, src)
	if err != nil {
		return nil, err
	}
	tag := src.Tag
	if tag == "" {
		tag = "latest"
	}
	digest := src.Digest
	if digest == "" {
		if digest, err = o.resolve(repo.Tag(tag), credID, opts); err != nil {
			return nil, err
		}
	}
	revision := digest
	if src.Digest == "" {
		revision = tag + "@" + digest
	}
	key := fmt.Sprintf("oci-%x", sha256.Sum256([]byte(repo.String()+"\x00"+digest+"\x00"+credID)))
	if pkg, ok := o.Store.Get(key); ok {
		return &Artifact{Package: pkg, Revision: revision}, nil
	}
	value, err, _ := o.flight.Do("fetch/"+key, func() (any, error) {
		return o.download(repo, digest, key, opts)
	})
	if err != nil {
		return nil, atRevision(err, revision)
	}
	return &Artifact{Package: value.(*tosca.Package), Revision: revision}, nil
}

func (o *OCI) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return 2 * time.Minute
}

// resolve returns the manifest digest of a tag with a HEAD request (a GET when the
// registry does not answer HEAD with a digest).
func (o *OCI) resolve(ref name.Tag, credID string, opts OCIOptions) (string, error) {
	value, err, _ := o.flight.Do("head/"+credID+"/"+ref.String(), func() (any, error) {
		ropts := opts.remoteOptions()
		desc, err := remote.Head(ref, ropts...)
		if err == nil {
			return desc.Digest.String(), nil
		}
		var terr *transport.Error
		if errors.As(err, &terr) && terr.StatusCode != http.StatusMethodNotAllowed && terr.StatusCode != http.StatusBadRequest {
			return nil, ociError("resolving", ref.String(), err)
		}
		got, err := remote.Get(ref, ropts...)
		if err != nil {
			return nil, ociError("resolving", ref.String(), err)
		}
		return got.Digest.String(), nil
	})
	if err != nil {
		return "", err
	}
	return value.(string), nil
}

// download reads the manifest at digest, checks it is a Calaf package, and stores its CSAR.
func (o *OCI) download(repo name.Repository, digest, key string, opts OCIOptions) (*tosca.Package, error) {
	limit := o.MaxArchiveBytes
	if limit <= 0 {
		limit = o.Store.Limits().MaxTotalBytes
	}
	ref := repo.Digest(digest)
	reader, layer, err := OpenOCIPackage(ref, limit, opts)
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	data, err := io.ReadAll(io.LimitReader(reader, limit+1))
	if err != nil {
		return nil, ociError("fetching", ref.String(), err)
	}
	if int64(len(data)) > limit {
		return nil, permanent(v1alpha1.ReasonInvalidPackage, "the package in %s is larger than %d bytes", ref, limit)
	}
	if sum := "sha256:" + SHA256(data); sum != layer.Digest.String() {
		return nil, permanent(v1alpha1.ReasonIntegrityFailed, "the package layer of %s has digest %s, the manifest says %s", ref, sum, layer.Digest)
	}
	pkg, err := o.Store.PutArchive(key, data, "package.csar")
	if err != nil {
		return nil, storeError(err)
	}
	return pkg, nil
}

// OpenOCIPackage reads the manifest at ref, checks that it is a Calaf package artifact
// whose CSAR is at most limit bytes, and returns a reader of the CSAR's layer (checked
// against its digest as it is read) and the layer's descriptor. Failures are *Errors.
func OpenOCIPackage(ref name.Digest, limit int64, opts OCIOptions) (io.ReadCloser, *v1.Descriptor, error) {
	ropts := opts.remoteOptions()
	desc, err := remote.Get(ref, ropts...)
	if err != nil {
		return nil, nil, ociError("fetching", ref.String(), err)
	}
	var manifest v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &manifest); err != nil {
		return nil, nil, permanent(v1alpha1.ReasonInvalidSource, "%s is not an OCI image manifest: %v", ref, err)
	}
	if manifest.Config.MediaType != OCIConfigMediaType && manifest.ArtifactType != OCIArtifactType {
		return nil, nil, permanent(v1alpha1.ReasonInvalidSource, "%s is not a Calaf package (config media type %q; push one with `calaf package push`)", ref, manifest.Config.MediaType)
	}
	var layer *v1.Descriptor
	for i := range manifest.Layers {
		if manifest.Layers[i].MediaType == OCILayerMediaType {
			layer = &manifest.Layers[i]
			break
		}
	}
	if layer == nil {
		return nil, nil, permanent(v1alpha1.ReasonInvalidSource, "%s has no layer of media type %s", ref, OCILayerMediaType)
	}
	if layer.Size > limit {
		return nil, nil, permanent(v1alpha1.ReasonInvalidPackage, "the package in %s is %d bytes, more than the limit of %d", ref, layer.Size, limit)
	}
	blob, err := remote.Layer(ref.Context().Digest(layer.Digest.String()), ropts...)
	if err != nil {
		return nil, nil, ociError("fetching", ref.String(), err)
	}
	reader, err := blob.Compressed()
	if err != nil {
		return nil, nil, ociError("fetching", ref.String(), err)
	}
	return reader, layer, nil
}

// options reads the dockerconfigjson Secret (and its optional ca.crt) of an OCISource.
func (o *OCI) options(ctx context.Context, reader client.Reader, namespace string, src *v1alpha1.OCISource) (OCIOptions, string, error) {
	opts := OCIOptions{Insecure: src.Insecure, Context: ctx, UserAgent: "calaf-operator"}
	if src.SecretRef == nil {
		return opts, "", nil
	}
	data, err := readSecret(ctx, reader, namespace, src.SecretRef.Name)
	if err != nil {
		return opts, "", err
	}
	raw := data[corev1.DockerConfigJsonKey]
	legacy := false
	if len(raw) == 0 {
		raw, legacy = data[corev1.DockerConfigKey], true
	}
	if len(raw) == 0 {
		return opts, "", permanent(v1alpha1.ReasonInvalidSource, "Secret %q has no %s (create it with kubectl create secret docker-registry)", src.SecretRef.Name, corev1.DockerConfigJsonKey)
	}
	keychain, err := ParseDockerConfig(raw, legacy)
	if err != nil {
		return opts, "", permanent(v1alpha1.ReasonInvalidSource, "Secret %q: %v", src.SecretRef.Name, err)
	}
	opts.Keychain = keychain
	if ca := data["ca.crt"]; len(ca) > 0 {
		if !x509.NewCertPool().AppendCertsFromPEM(ca) {
			return opts, "", permanent(v1alpha1.ReasonInvalidSource, "Secret %q: ca.crt holds no PEM certificate", src.SecretRef.Name)
		}
		opts.CABundle = ca
	}
	return opts, namespace + "/" + src.SecretRef.Name, nil
}

// DockerConfig is a keychain read from a Docker config.json ("auths" by registry host).
type DockerConfig map[string]authn.AuthConfig

// ParseDockerConfig reads the content of a kubernetes.io/dockerconfigjson Secret (or of a
// legacy .dockercfg, which has no "auths" wrapper).
func ParseDockerConfig(raw []byte, legacy bool) (DockerConfig, error) {
	var auths map[string]authn.AuthConfig
	if legacy {
		if err := json.Unmarshal(raw, &auths); err != nil {
			return nil, fmt.Errorf("invalid .dockercfg: %v", err)
		}
	} else {
		var file struct {
			Auths map[string]authn.AuthConfig `json:"auths"`
		}
		if err := json.Unmarshal(raw, &file); err != nil {
			return nil, fmt.Errorf("invalid .dockerconfigjson: %v", err)
		}
		auths = file.Auths
	}
	config := DockerConfig{}
	for server, auth := range auths {
		if auth.Auth != "" && auth.Username == "" {
			decoded, err := base64.StdEncoding.DecodeString(auth.Auth)
			if err != nil {
				return nil, fmt.Errorf("auth of %s is not base64", server)
			}
			user, password, ok := strings.Cut(string(decoded), ":")
			if !ok {
				return nil, fmt.Errorf("auth of %s is not user:password", server)
			}
			auth.Username, auth.Password = user, password
		}
		auth.Auth = ""
		config[registryHost(server)] = auth
	}
	return config, nil
}

// Resolve implements authn.Keychain.
func (c DockerConfig) Resolve(target authn.Resource) (authn.Authenticator, error) {
	host := registryHost(target.RegistryStr())
	if auth, ok := c[host]; ok {
		return authn.FromConfig(auth), nil
	}
	if host == "index.docker.io" {
		if auth, ok := c["docker.io"]; ok {
			return authn.FromConfig(auth), nil
		}
	}
	return authn.Anonymous, nil
}

// registryHost reduces a Docker config key ("https://host/v1/", "host") to the host.
func registryHost(server string) string {
	server = strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://")
	server, _, _ = strings.Cut(server, "/")
	return strings.ToLower(server)
}

// ociError classifies a registry failure: refused credentials, a missing repository or
// tag, and plain HTTP without insecure need a change; the rest (network, 5xx) passes.
func ociError(verb, where string, err error) error {
	var terr *transport.Error
	switch {
	case errors.Is(err, errPlainHTTP) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return permanent(v1alpha1.ReasonInvalidSource, "%s %s: the registry speaks plain HTTP, which is refused unless the source sets insecure: true", verb, where)
	case errors.As(err, &terr) && (terr.StatusCode == http.StatusUnauthorized || terr.StatusCode == http.StatusForbidden):
		return permanent(v1alpha1.ReasonAuthenticationFailed, "%s %s: the registry refused the credentials (HTTP %d): check the dockerconfigjson Secret", verb, where, terr.StatusCode)
	case errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound:
		return permanent(v1alpha1.ReasonInvalidSource, "%s %s: not found in the registry", verb, where)
	case strings.Contains(err.Error(), "error verifying sha256 checksum"):
		// go-containerregistry checks every blob it reads against its digest.
		return permanent(v1alpha1.ReasonIntegrityFailed, "%s %s: the registry served a layer that does not match its digest: %v", verb, where, err)
	}
	if untrustedCertificate(err) {
		return permanent(v1alpha1.ReasonInvalidSource, "%s %s: %v (add the CA as ca.crt to the source Secret)", verb, where, err)
	}
	return transient(v1alpha1.ReasonFetchFailed, "%s %s: %v", verb, where, err)
}
