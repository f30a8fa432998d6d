// Package locked resolves the profiles a package imports by reference from the digests
// its calaf.lock records: from a cache of verified artifacts on disk, else fetched by a
// Fetcher the caller gives (the operator's and the CLI's registries; none works offline),
// each checked against its digest, its files against the lock, and its signature against
// the trust policy, before a compile may read it.
package locked

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/sol004"
)

// Media types of a profile stored as an OCI artifact: an image manifest whose config
// describes the profile and whose one layer is the profile packed as a CSAR (or a SOL004
// option 2 zip holding the CSAR and its signature).
const (
	ConfigMediaType = "application/vnd.calaf.profile.config.v1+json"
	LayerMediaType  = "application/vnd.calaf.profile.csar.v1+zip"
)

// Fetched is a profile artifact as fetched: the archive, and for an OCI artifact the
// manifest that names it (Proof), whose digest Digest is. Without a proof, Digest is the
// archive's SHA-256.
type Fetched struct {
	Digest   string
	Artifact []byte
	Proof    []byte
}

// Verify checks that the fetched bytes are what digest names: the proof's SHA-256 and
// its layer's the archive's, or the archive's own SHA-256.
func (f *Fetched) Verify(digest string) error {
	if f.Proof == nil {
		if got := sha(f.Artifact); got != digest {
			return fmt.Errorf("the archive has digest %s, not %s", got, digest)
		}
		return nil
	}
	if got := sha(f.Proof); got != digest {
		return fmt.Errorf("the manifest has digest %s, not %s", got, digest)
	}
	var manifest struct {
		Layers []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(f.Proof, &manifest); err != nil {
		return fmt.Errorf("the manifest is not an OCI manifest: %v", err)
	}
	got := sha(f.Artifact)
	for _, l := range manifest.Layers {
		if l.MediaType == LayerMediaType {
			if l.Digest != got {
				return fmt.Errorf("the profile layer has digest %s, the manifest says %s", got, l.Digest)
			}
			return nil
		}
	}
	return fmt.Errorf("the manifest has no layer of media type %s: not a Calaf profile", LayerMediaType)
}

func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Cache keeps verified profile artifacts on disk by digest, each with its files extracted
// once: Dir/<digest>/artifact, proof, files/. What it reads back is verified again, so a
// cache changed behind Calaf's back is a miss, never a profile of another digest.
type Cache struct {
	Dir    string
	Limits tosca.Limits
}

// entryDir is where the cache keeps a digest.
func (c *Cache) entryDir(digest string) (string, error) {
	hexDigest, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hexDigest) != 64 || strings.Trim(hexDigest, "0123456789abcdef") != "" {
		return "", fmt.Errorf("digest %q is not sha256:<64 hex digits>", digest)
	}
	return filepath.Join(c.Dir, "sha256-"+hexDigest), nil
}

// Get returns the artifact cached for digest, verified; false when it has none (or what
// it has does not verify: it is removed).
func (c *Cache) Get(digest string) (*Fetched, bool) {
	dir, err := c.entryDir(digest)
	if err != nil {
		return nil, false
	}
	artifact, err := os.ReadFile(filepath.Join(dir, "artifact"))
	if err != nil {
		return nil, false
	}
	f := &Fetched{Digest: digest, Artifact: artifact}
	if proof, err := os.ReadFile(filepath.Join(dir, "proof")); err == nil {
		f.Proof = proof
	}
	if f.Verify(digest) != nil {
		os.RemoveAll(dir)
		return nil, false
	}
	return f, true
}

// Put keeps a verified artifact under its digest.
func (c *Cache) Put(f *Fetched) error {
	if err := f.Verify(f.Digest); err != nil {
		return err
	}
	dir, err := c.entryDir(f.Digest)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(c.Dir, "tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "artifact"), f.Artifact, 0o600); err != nil {
		return err
	}
	if f.Proof != nil {
		if err := os.WriteFile(filepath.Join(tmp, "proof"), f.Proof, 0o600); err != nil {
			return err
		}
	}
	os.RemoveAll(dir)
	return os.Rename(tmp, dir)
}

// Open returns the files of a cached artifact as a package (extracted the first time,
// each time checked against its SOL004 manifest) and the evidence of its signatures.
func (c *Cache) Open(f *Fetched) (*tosca.Package, *sol004.Evidence, error) {
	dir, err := c.entryDir(f.Digest)
	if err != nil {
		return nil, nil, err
	}
	envelope, err := sol004.Unwrap(f.Artifact, c.Limits)
	if err != nil {
		return nil, nil, err
	}
	csar := f.Artifact
	if envelope != nil {
		csar = envelope.CSAR
	}
	files := filepath.Join(dir, "files")
	if _, err := os.Stat(files); err != nil {
		if err := c.extract(csar, files); err != nil {
			return nil, nil, err
		}
	}
	pkg, err := tosca.Open(files, c.Limits)
	if err != nil {
		return nil, nil, err
	}
	if _, err := pkg.VerifyIntegrity(tosca.IntegrityOptions{}); err != nil {
		return nil, nil, err
	}
	return pkg, sol004.Examine(pkg, envelope), nil
}

// extract writes the files of a CSAR to dir, atomically.
func (c *Cache) extract(csar []byte, dir string) error {
	pkg, err := tosca.OpenArchive(csar, "profile.csar", c.Limits)
	if err != nil {
		return err
	}
	defer pkg.Close()
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "files-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, file := range pkg.Files {
		data, err := pkg.ReadFile(file.Path)
		if err != nil {
			return err
		}
		target := filepath.Join(tmp, filepath.FromSlash(file.Path))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return err
		}
	}
	return os.Rename(tmp, dir)
}
