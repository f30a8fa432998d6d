package main

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// writeArchive writes img, named ref, to the file out in the given format: "docker" (the
// `docker save` layout: manifest.json + blobs) or "oci" (an OCI image layout in a tar).
// Both load with `ctr images import` and `docker load`. The file is replaced atomically.
func writeArchive(out, format string, ref name.Tag, img v1.Image) error {
	tmp, err := os.CreateTemp(filepath.Dir(out), ".imagebuild-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()

	switch format {
	case "docker":
		err = tarball.Write(ref, img, tmp)
	case "oci":
		err = writeOCI(tmp, ref, img)
	default:
		err = fmt.Errorf("unknown format %q (want docker or oci)", format)
	}
	if err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}

// writeOCI lays img out as an OCI image layout in a temporary directory and tars it to w.
// The index entry carries the full name for containerd and the tag for other tools.
func writeOCI(w io.Writer, ref name.Tag, img v1.Image) error {
	dir, err := os.MkdirTemp("", "imagebuild-oci-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	err = p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          ref.Name(),
		"org.opencontainers.image.ref.name": ref.TagStr(),
	}))
	if err != nil {
		return err
	}
	return tarDir(w, dir)
}

// tarDir writes the regular files and directories under dir to w, with paths relative to dir.
func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name, hdr.ModTime = filepath.ToSlash(rel), epoch
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
