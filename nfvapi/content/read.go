package content

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

// NotHeldError is a package whose content the store does not hold (HTTP 409): none yet,
// or content at a place of the package's own (a URL, git, another registry).
type NotHeldError struct {
	Message string
}

func (e *NotHeldError) Error() string { return e.Message }

// NotFoundError is a file the package does not have (HTTP 404).
type NotFoundError struct {
	Path string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("the package has no file %q", e.Path) }

// Content is a package's content read back: its archive, in a temporary file, and, read on
// demand, the package it holds. Close removes both.
type Content struct {
	// Size and SHA256 (hex) are the archive's.
	Size   int64
	SHA256 string
	path   string
	limits tosca.Limits
	store  *Store

	once sync.Once
	pkg  *tosca.Package
	err  error
}

// Open reads back a package's content: from its upload ConfigMap, read with c (the
// caller's client: a caller that may not read it gets the API server's refusal), or from
// the repository of its namespace in the store's registry. The content is the one
// onboarding verified (status.onboardedSource at status.revision) when there is one,
// else the one spec.source names; it is checked against the digest its source gives.
func (s *Store) Open(ctx context.Context, c client.Client, pkg *v1alpha1.VnfPackage) (*Content, error) {
	src, err := heldSource(pkg)
	if err != nil {
		return nil, err
	}
	switch {
	case src.Upload != nil:
		return s.openConfigMap(ctx, c, pkg.Namespace, src.Upload)
	case src.OCI != nil && s.cfg.Registry != "" && src.OCI.URL == strings.TrimSuffix(s.cfg.Registry, "/")+"/"+pkg.Namespace && src.OCI.Digest != "":
		return s.openRegistry(ctx, src.OCI)
	}
	return nil, &NotHeldError{Message: "the package's content is not kept by the NFV API (its source is of its own): read it where its source says"}
}

// heldSource is the source of the content to read: onboarding's, pinned at its revision,
// else the spec's.
func heldSource(pkg *v1alpha1.VnfPackage) (v1alpha1.Source, error) {
	st := pkg.Status
	if st.OnboardedSource != nil && st.Revision != "" {
		if pinned, err := source.PinSource(*st.OnboardedSource, st.Revision); err == nil {
			return pinned, nil
		}
	}
	if pkg.Spec.Source == nil {
		return v1alpha1.Source{}, &NotHeldError{Message: "the package has no content yet"}
	}
	return *pkg.Spec.Source, nil
}

// openConfigMap reads content from an upload ConfigMap.
func (s *Store) openConfigMap(ctx context.Context, c client.Client, namespace string, upload *v1alpha1.UploadSource) (*Content, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: upload.ConfigMapName}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &NotHeldError{Message: fmt.Sprintf("the package's content (ConfigMap %s) is gone", upload.ConfigMapName)}
		}
		return nil, err
	}
	data := cm.BinaryData[source.UploadKey]
	if sum := source.SHA256(data); sum != upload.SHA256 {
		return nil, &NotHeldError{Message: fmt.Sprintf("the package's content (ConfigMap %s) has sha256 %s, not the %s it was uploaded with", upload.ConfigMapName, sum, upload.SHA256)}
	}
	return s.keep(bytes.NewReader(data))
}

// openRegistry reads content from the store's registry, by digest.
func (s *Store) openRegistry(ctx context.Context, src *v1alpha1.OCISource) (*Content, error) {
	repo, err := source.ParseOCIRepository(src.URL, src.Insecure)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	reader, _, err := source.OpenOCIPackage(repo.Digest(src.Digest), s.cfg.MaxBytes, s.ociOptions(ctx))
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	return s.keep(reader)
}

// keep writes content to a temporary file (at most MaxBytes).
func (s *Store) keep(r io.Reader) (*Content, error) {
	up, err := s.spool(r)
	if err != nil {
		return nil, err
	}
	return &Content{Size: up.size, SHA256: up.sha256, path: up.path, limits: s.cfg.Limits, store: s}, nil
}

// Close removes what was read.
func (c *Content) Close() {
	if c.pkg != nil {
		c.pkg.Close()
	}
	os.Remove(c.path)
}

// Archive opens the archive as it was uploaded.
func (c *Content) Archive() (*os.File, error) {
	return os.Open(c.path)
}

// open reads the package the archive holds, once.
func (c *Content) open() (*tosca.Package, error) {
	c.once.Do(func() {
		release, err := c.store.acquire(context.Background())
		if err != nil {
			c.err = err
			return
		}
		defer release()
		data, err := os.ReadFile(c.path)
		if err != nil {
			c.err = err
			return
		}
		if c.pkg, err = openArchive(data, c.limits); err != nil {
			c.err = &InvalidError{Message: "the package cannot be read: " + firstLine(err)}
		}
	})
	return c.pkg, c.err
}

// File returns the content of one file of the package (a path as the package lists it).
func (c *Content) File(name string) ([]byte, error) {
	pkg, err := c.open()
	if err != nil {
		return nil, err
	}
	clean, err := tosca.CleanPath(name)
	if err != nil || !hasFile(pkg, clean) {
		return nil, &NotFoundError{Path: name}
	}
	return pkg.ReadFile(clean)
}

func hasFile(pkg *tosca.Package, name string) bool {
	for _, f := range pkg.Files {
		if f.Path == name {
			return true
		}
	}
	return false
}

// VNFD returns the files of the package's VNFD (its entry and the package files it
// imports), and TOSCA.meta when the package has one.
func (c *Content) VNFD() (map[string][]byte, error) {
	pkg, err := c.open()
	if err != nil {
		return nil, err
	}
	names, err := pkg.VNFDFiles()
	if err != nil {
		return nil, &InvalidError{Message: "the VNFD cannot be read: " + firstLine(err)}
	}
	if hasFile(pkg, tosca.MetaPath) {
		names = append(names, tosca.MetaPath)
	}
	files := map[string][]byte{}
	for _, name := range names {
		if files[name], err = pkg.ReadFile(name); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// Entry is the package's entry template (the top-level VNFD).
func (c *Content) Entry() (string, error) {
	pkg, err := c.open()
	if err != nil {
		return "", err
	}
	return pkg.Entry, nil
}

// Zip writes files as a zip, sorted by name.
func Zip(w io.Writer, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	zw := zip.NewWriter(w)
	for _, name := range names {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			return err
		}
		if _, err := fw.Write(files[name]); err != nil {
			return err
		}
	}
	return zw.Close()
}
