package source

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"sort"
	"time"

	"calaf.io/calaf/tosca"
)

// Pack writes a package's files as a reproducible tar.gz: sorted, fixed times and modes,
// so the same files always give the same archive and SHA-256.
func Pack(pkg *tosca.Package) ([]byte, error) {
	var buffer bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buffer, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	gz.ModTime = time.Unix(0, 0)
	tw := tar.NewWriter(gz)
	for _, f := range pkg.Files {
		data, err := pkg.ReadFile(f.Path)
		if err != nil {
			return nil, err
		}
		header := &tar.Header{Name: f.Path, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(header); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buffer.Bytes(), nil
}

// PackCSAR writes a package's files as a reproducible CSAR (zip). A package without
// TOSCA-Metadata gets a TOSCA.meta naming its entry service template.
func PackCSAR(pkg *tosca.Package) ([]byte, error) {
	return PackCSARWith(pkg, nil)
}

// PackCSARWith is PackCSAR with extra files (e.g. a generated manifest) added at the
// given package paths, after the package's own files; an extra file replaces the
// package's file of the same path (e.g. a manifest once signed).
func PackCSARWith(pkg *tosca.Package, extra map[string][]byte) ([]byte, error) {
	var buffer bytes.Buffer
	zw := zip.NewWriter(&buffer)
	write := func(name string, data []byte) error {
		header := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)}
		header.SetMode(0o644)
		w, err := zw.CreateHeader(header)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	hasMeta := false
	for _, f := range pkg.Files {
		if f.Path == tosca.MetaPath {
			hasMeta = true
		}
	}
	if !hasMeta {
		meta := "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: Calaf\nEntry-Definitions: " + pkg.Entry + "\n"
		if err := write(tosca.MetaPath, []byte(meta)); err != nil {
			return nil, err
		}
	}
	for _, f := range pkg.Files {
		if _, replaced := extra[f.Path]; replaced {
			continue
		}
		data, err := pkg.ReadFile(f.Path)
		if err != nil {
			return nil, err
		}
		if err := write(f.Path, data); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(extra))
	for name := range extra {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := write(name, extra[name]); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buffer.Bytes(), nil
}
