// Command imagebuild writes a one-layer container image, assembled from files on disk, as a
// docker-archive or OCI tarball, without docker or a registry. The same inputs give the same
// image ID. The tarball loads with `ctr -n k8s.io images import FILE`.
//
//	go run ./test/ground/imagebuild -name calaf.local/busybox:1 -o busybox.tar \
//	  -add /bin/busybox:/bin/busybox -symlink /bin/sh=busybox -dir /tmp:1777 \
//	  -file $'/etc/passwd=root:x:0:0:root:/root:/bin/sh\n' -entrypoint /bin/sh
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// listFlag collects the values of a flag given several times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// options are the command line: the image's name and output, its files and its config.
type options struct {
	name, out, format, arch        string
	adds, symlinks, dirs, files    listFlag
	entrypoint, cmd, workdir, user string
	env, labels                    listFlag
}

func main() {
	var o options
	flag.StringVar(&o.name, "name", "", "image name with tag, e.g. calaf.local/busybox:1 (required)")
	flag.StringVar(&o.out, "o", "", "output tarball (required)")
	flag.StringVar(&o.format, "format", "docker", "tarball format: docker (docker-archive) or oci")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "image architecture")
	flag.Var(&o.adds, "add", "SRC:DST copies a file, symlink or directory tree from disk (repeatable)")
	flag.Var(&o.symlinks, "symlink", "LINK=TARGET creates a symlink (repeatable)")
	flag.Var(&o.dirs, "dir", "PATH[:MODE] creates a directory, MODE in octal, default 755 (repeatable)")
	flag.Var(&o.files, "file", "PATH=CONTENT creates a 0644 file with the given content (repeatable)")
	flag.StringVar(&o.entrypoint, "entrypoint", "", `entrypoint: a JSON array or space-separated words`)
	flag.StringVar(&o.cmd, "cmd", "", `default arguments: a JSON array or space-separated words`)
	flag.StringVar(&o.workdir, "workdir", "", "working directory")
	flag.StringVar(&o.user, "user", "", "user, e.g. 65532:65532")
	flag.Var(&o.env, "env", "KEY=VALUE environment variable (repeatable)")
	flag.Var(&o.labels, "label", "KEY=VALUE image label (repeatable)")
	flag.Parse()

	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.name == "" || o.out == "" {
		return errors.New("-name and -o are required")
	}
	ref, err := name.NewTag(o.name, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image name: %w", err)
	}
	t, err := o.tree()
	if err != nil {
		return err
	}
	img, err := o.image(t)
	if err != nil {
		return err
	}
	if err := writeArchive(o.out, o.format, ref, img); err != nil {
		return err
	}
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s (%s, image ID %s) to %s\n", ref.Name(), o.format, id, o.out)
	return nil
}

// tree collects the layer's contents from the -dir, -add, -file and -symlink flags, in that order.
func (o options) tree() (tree, error) {
	t := tree{}
	for _, d := range o.dirs {
		p, modeText, hasMode := strings.Cut(d, ":")
		mode := uint64(0o755)
		if hasMode {
			var err error
			if mode, err = strconv.ParseUint(modeText, 8, 32); err != nil {
				return nil, fmt.Errorf("-dir %s: mode: %w", d, err)
			}
		}
		fm := fs.ModeDir | fs.FileMode(mode).Perm()
		if mode&0o1000 != 0 {
			fm |= fs.ModeSticky
		}
		if err := t.put(entry{path: p, mode: fm}); err != nil {
			return nil, err
		}
	}
	for _, a := range o.adds {
		src, dst, ok := strings.Cut(a, ":")
		if !ok {
			return nil, fmt.Errorf("-add %s: want SRC:DST", a)
		}
		if err := t.addFromDisk(src, dst); err != nil {
			return nil, fmt.Errorf("-add %s: %w", a, err)
		}
	}
	for _, f := range o.files {
		p, content, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("-file %s: want PATH=CONTENT", f)
		}
		if err := t.put(entry{path: p, mode: 0o644, data: []byte(content)}); err != nil {
			return nil, err
		}
	}
	for _, s := range o.symlinks {
		link, target, ok := strings.Cut(s, "=")
		if !ok || target == "" {
			return nil, fmt.Errorf("-symlink %s: want LINK=TARGET", s)
		}
		if err := t.put(entry{path: link, mode: fs.ModeSymlink | 0o777, target: target}); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// image builds the one-layer image and sets its config.
func (o options) image(t tree) (v1.Image, error) {
	data, err := t.tarball()
	if err != nil {
		return nil, err
	}
	layerType, manifestType, configType := types.DockerLayer, types.DockerManifestSchema2, types.DockerConfigJSON
	if o.format == "oci" {
		layerType, manifestType, configType = types.OCILayer, types.OCIManifestSchema1, types.OCIConfigJSON
	}
	opener := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	layer, err := tarball.LayerFromOpener(opener, tarball.WithMediaType(layerType), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, manifestType), configType)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", o.arch
	cfg.Created = v1.Time{Time: epoch}
	cfg.History = []v1.History{{Created: cfg.Created, CreatedBy: "imagebuild"}}
	if cfg.Config.Entrypoint, err = words(o.entrypoint); err != nil {
		return nil, fmt.Errorf("-entrypoint: %w", err)
	}
	if cfg.Config.Cmd, err = words(o.cmd); err != nil {
		return nil, fmt.Errorf("-cmd: %w", err)
	}
	cfg.Config.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}, o.env...)
	cfg.Config.WorkingDir, cfg.Config.User = o.workdir, o.user
	if len(o.labels) > 0 {
		cfg.Config.Labels = map[string]string{}
		for _, l := range o.labels {
			k, v, _ := strings.Cut(l, "=")
			cfg.Config.Labels[k] = v
		}
	}
	return mutate.ConfigFile(img, cfg)
}

// words reads a JSON array of strings, or else splits s at spaces; "" gives nil.
func words(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") {
		var w []string
		err := json.Unmarshal([]byte(s), &w)
		return w, err
	}
	return strings.Fields(s), nil
}
