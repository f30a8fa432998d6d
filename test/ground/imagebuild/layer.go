package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// epoch is the modification time of every entry, so that the same inputs always give the
// same layer digest (and so the same image ID).
var epoch = time.Unix(0, 0).UTC()

// entry is one file system object of the layer, at an absolute, clean path.
type entry struct {
	path   string
	mode   fs.FileMode // permission bits plus fs.ModeDir / fs.ModeSymlink / fs.ModeSticky
	target string      // symlink target
	source string      // regular file read from disk
	data   []byte      // regular file given inline
}

// tree collects the entries of a layer; later entries replace earlier ones at the same path.
type tree map[string]entry

func cleanPath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("image path %q is not absolute", p)
	}
	c := path.Clean(p)
	if c == "/" {
		return "", fmt.Errorf("image path %q names the root", p)
	}
	return c, nil
}

// put records e and the parent directories it needs (mode 0755 unless given explicitly).
func (t tree) put(e entry) error {
	p, err := cleanPath(e.path)
	if err != nil {
		return err
	}
	e.path = p
	t[p] = e
	for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
		if parent, ok := t[dir]; ok {
			if !parent.mode.IsDir() {
				return fmt.Errorf("%s is needed as a directory but is not one", dir)
			}
			continue
		}
		t[dir] = entry{path: dir, mode: fs.ModeDir | 0o755}
	}
	return nil
}

// addFromDisk copies src (a file, a symlink or a whole directory tree) to dst in the image.
func (t tree) addFromDisk(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		e := entry{path: path.Join(dst, filepath.ToSlash(rel)), mode: info.Mode()}
		switch {
		case info.Mode().IsRegular():
			e.source = p
		case info.Mode()&fs.ModeSymlink != 0:
			if e.target, err = os.Readlink(p); err != nil {
				return err
			}
		case info.IsDir():
		default:
			return fmt.Errorf("%s: unsupported file type %s", p, info.Mode().Type())
		}
		return t.put(e)
	})
}

// tarball writes the tree as an uncompressed tar stream: entries sorted by path, owned by
// root, with the fixed epoch as their time.
func (t tree) tarball() ([]byte, error) {
	paths := make([]string, 0, len(t))
	for p := range t {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		if err := writeEntry(tw, t[p]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeEntry(tw *tar.Writer, e entry) error {
	hdr := &tar.Header{
		Name:    strings.TrimPrefix(e.path, "/"),
		Mode:    int64(e.mode.Perm()),
		ModTime: epoch,
		Format:  tar.FormatPAX,
	}
	if e.mode&fs.ModeSticky != 0 {
		hdr.Mode |= 0o1000
	}
	if e.mode&fs.ModeSetuid != 0 {
		hdr.Mode |= 0o4000
	}
	if e.mode&fs.ModeSetgid != 0 {
		hdr.Mode |= 0o2000
	}
	var body io.Reader
	switch {
	case e.mode.IsDir():
		hdr.Typeflag = tar.TypeDir
		hdr.Name += "/"
	case e.mode&fs.ModeSymlink != 0:
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = e.target
	case e.source != "":
		data, err := os.ReadFile(e.source)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Size, body = tar.TypeReg, int64(len(data)), bytes.NewReader(data)
	default:
		hdr.Typeflag, hdr.Size, body = tar.TypeReg, int64(len(e.data)), bytes.NewReader(e.data)
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", e.path, err)
	}
	if body != nil {
		if _, err := io.Copy(tw, body); err != nil {
			return fmt.Errorf("%s: %w", e.path, err)
		}
	}
	return nil
}
