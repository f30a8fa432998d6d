package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// options for a small image: a file and a directory tree from disk, a symlink, a sticky
// directory and an inline file.
func testOptions(t *testing.T, format string) options {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(src, "share", "doc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "share", "doc", "README"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	return options{
		name:       "calaf.local/test:1",
		out:        filepath.Join(t.TempDir(), "image.tar"),
		format:     format,
		arch:       "amd64",
		adds:       listFlag{filepath.Join(src, "tool") + ":/bin/tool", filepath.Join(src, "share") + ":/usr/share"},
		symlinks:   listFlag{"/bin/sh=tool"},
		dirs:       listFlag{"/tmp:1777"},
		files:      listFlag{"/etc/passwd=root:x:0:0:root:/root:/bin/sh\n"},
		entrypoint: `["/bin/tool", "--flag"]`,
		cmd:        "a b",
		env:        listFlag{"MODE=test"},
		user:       "65532:65532",
	}
}

// layerEntries reads the single layer of img into name → header.
func layerEntries(t *testing.T, img v1.Image) map[string]*tar.Header {
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %v, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	entries := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[hdr.Name] = hdr
	}
}

func TestDockerArchiveHasFilesAndConfig(t *testing.T) {
	g := NewWithT(t)
	o := testOptions(t, "docker")
	g.Expect(run(o)).To(Succeed())

	tag, err := name.NewTag(o.name)
	g.Expect(err).NotTo(HaveOccurred())
	img, err := tarball.ImageFromPath(o.out, &tag)
	g.Expect(err).NotTo(HaveOccurred())

	entries := layerEntries(t, img)
	g.Expect(entries).To(HaveKey("bin/"))
	g.Expect(entries["bin/tool"].Mode).To(Equal(int64(0o755)))
	g.Expect(entries["bin/sh"].Typeflag).To(Equal(byte(tar.TypeSymlink)))
	g.Expect(entries["bin/sh"].Linkname).To(Equal("tool"))
	g.Expect(entries["tmp/"].Mode).To(Equal(int64(0o1777)))
	g.Expect(entries["usr/share/doc/README"].Size).To(Equal(int64(2)))
	g.Expect(entries["etc/passwd"].Mode).To(Equal(int64(0o644)))

	cfg, err := img.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.OS).To(Equal("linux"))
	g.Expect(cfg.Architecture).To(Equal("amd64"))
	g.Expect(cfg.Config.Entrypoint).To(Equal([]string{"/bin/tool", "--flag"}))
	g.Expect(cfg.Config.Cmd).To(Equal([]string{"a", "b"}))
	g.Expect(cfg.Config.Env).To(ContainElement("MODE=test"))
	g.Expect(cfg.Config.User).To(Equal("65532:65532"))
}

func TestSameInputsGiveSameImageID(t *testing.T) {
	g := NewWithT(t)
	o := testOptions(t, "docker")
	id := func() v1.Hash {
		g.Expect(run(o)).To(Succeed())
		img, err := tarball.ImageFromPath(o.out, nil)
		g.Expect(err).NotTo(HaveOccurred())
		h, err := img.ConfigName()
		g.Expect(err).NotTo(HaveOccurred())
		return h
	}
	g.Expect(id()).To(Equal(id()))
}

func TestOCIArchiveIsNamedForContainerd(t *testing.T) {
	g := NewWithT(t)
	o := testOptions(t, "oci")
	g.Expect(run(o)).To(Succeed())

	dir := t.TempDir()
	untar(t, o.out, dir)
	index, err := layout.ImageIndexFromPath(dir)
	g.Expect(err).NotTo(HaveOccurred())
	manifest, err := index.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifest.Manifests).To(HaveLen(1))
	g.Expect(manifest.Manifests[0].Annotations).To(HaveKeyWithValue("io.containerd.image.name", "calaf.local/test:1"))
	img, err := index.Image(manifest.Manifests[0].Digest)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(layerEntries(t, img)).To(HaveKey("bin/tool"))
}

func TestBadFlagsAreRejected(t *testing.T) {
	for name, mutate := range map[string]func(*options){
		"relative path":  func(o *options) { o.files = listFlag{"etc/passwd=x"} },
		"add without :":  func(o *options) { o.adds = listFlag{"/bin/busybox"} },
		"bad dir mode":   func(o *options) { o.dirs = listFlag{"/tmp:99"} },
		"file as parent": func(o *options) { o.files = listFlag{"/bin/tool/x=y"} },
		"missing name":   func(o *options) { o.name = "" },
		"unknown format": func(o *options) { o.format = "zip" },
	} {
		t.Run(name, func(t *testing.T) {
			o := testOptions(t, "docker")
			mutate(&o)
			NewWithT(t).Expect(run(o)).NotTo(Succeed())
		})
	}
}

func untar(t *testing.T, file, dir string) {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, hdr.Name)
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
