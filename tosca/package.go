package tosca

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Limits bound what a package may hold. They protect the operator and the CLI from zip
// bombs and oversized packages; the sizes count decompressed bytes actually read, never
// the sizes an archive claims.
type Limits struct {
	MaxTotalBytes int64
	MaxFileBytes  int64
	MaxFiles      int
}

// DefaultLimits allow 64 MiB in at most 4096 files, none above 32 MiB.
func DefaultLimits() Limits {
	return Limits{MaxTotalBytes: 64 << 20, MaxFileBytes: 32 << 20, MaxFiles: 4096}
}

// File is one regular file of a package.
type File struct {
	Path   string `json:"path"` // slash-separated, relative to the package root
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Package is a TOSCA service package laid out as files in a directory.
type Package struct {
	// Root is the absolute directory holding the files.
	Root string
	// Entry is the slash-separated path of the entry service template, relative to Root.
	Entry string
	// Digest ("sha256:<hex>") identifies the content of every file and its path.
	Digest string
	// Files lists every regular file, sorted by path (for a package opened from a single
	// template: the template and the files it references).
	Files []File
	// Meta holds the keys of TOSCA-Metadata/TOSCA.meta, when the package has one.
	Meta map[string]string
	// Imports are the profiles its templates import by reference, resolved from its lock
	// (WithImports); none until then.
	Imports []Import

	limits    Limits
	temporary bool
	// sizeOnce and sizeErr hold the verdict of CheckSize.
	sizeOnce sync.Once
	sizeErr  error
}

// Open reads a package from a directory, a CSAR or other zip or tar(.gz) archive, or a
// single YAML service template (rooted at its directory, holding the files it references). Archives are
// extracted into a new temporary directory that Close removes.
func Open(source string, limits Limits) (*Package, error) {
	info, err := os.Stat(source)
	if err != nil {
		return nil, Invalid(source, "cannot read package: %v", errors.Unwrap(err))
	}
	if info.IsDir() {
		return openDirectory(source, "", limits)
	}
	if info.Size() == 0 {
		return nil, Invalid(filepath.Base(source), "package is empty")
	}
	head, err := readHead(source)
	if err != nil {
		return nil, Invalid(source, "cannot read package: %v", err)
	}
	if kind := archiveKind(head); kind != "" {
		if info.Size() > limits.MaxTotalBytes {
			return nil, Invalid(filepath.Base(source), "package is %d bytes, more than the limit of %d", info.Size(), limits.MaxTotalBytes)
		}
		data, err := os.ReadFile(source)
		if err != nil {
			return nil, Invalid(source, "cannot read package: %v", err)
		}
		return OpenArchive(data, filepath.Base(source), limits)
	}
	if hasArchiveExtension(source) {
		return nil, Invalid(filepath.Base(source), "package is neither a zip (CSAR) nor a tar archive")
	}
	return openFile(filepath.Dir(source), filepath.Base(source), limits)
}

// OpenEntry reads the package in directory dir whose entry service template is entry
// (dir-relative), whatever TOSCA.meta says: a profile's test case, a template among
// others. Its digest covers the files and the entry, so that two entries of one
// directory are two packages to the caches.
func OpenEntry(dir, entry string, limits Limits) (*Package, error) {
	clean, err := cleanRelative(entry)
	if err != nil {
		return nil, Invalid(entry, "%v", err)
	}
	pkg, err := openDirectory(dir, clean, limits)
	if err != nil {
		return nil, err
	}
	if !pkg.has(clean) {
		return nil, Invalid(clean, "not a file of the package")
	}
	sum := sha256.Sum256([]byte(pkg.Digest + "\x00entry\x00" + clean))
	pkg.Digest = "sha256:" + hex.EncodeToString(sum[:])
	return pkg, nil
}

// hasArchiveExtension tells whether a file name promises an archive, so that a corrupt
// CSAR is reported as such instead of being read as a YAML template.
func hasArchiveExtension(name string) bool {
	name = strings.ToLower(name)
	for _, ext := range []string{".csar", ".zip", ".tar", ".tgz", ".tar.gz"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// OpenArchive extracts a zip or tar(.gz) archive held in memory into a new temporary
// directory. name is used in diagnostics only.
func OpenArchive(data []byte, name string, limits Limits) (*Package, error) {
	if len(data) == 0 {
		return nil, Invalid(name, "package is empty")
	}
	root, err := os.MkdirTemp("", "calaf-package-")
	if err != nil {
		return nil, err
	}
	pkg := &Package{Root: root, limits: limits, temporary: true}
	x := &extractor{root: root, limits: limits, name: name, seen: map[string]bool{}}
	switch archiveKind(data) {
	case "zip":
		err = x.zip(data)
	case "gzip":
		err = x.gzip(data)
	case "tar":
		err = x.tar(bytes.NewReader(data))
	default:
		err = Invalid(name, "package is neither a zip (CSAR) nor a tar archive")
	}
	if err == nil {
		err = pkg.finish(x.files, "")
	}
	if err != nil {
		pkg.Close()
		return nil, err
	}
	return pkg, nil
}

// Close removes the extracted files of an archive package; it leaves directories the
// package was opened from untouched.
func (p *Package) Close() error {
	if p == nil || !p.temporary {
		return nil
	}
	return os.RemoveAll(p.Root)
}

// OwnDirectory makes Close remove the package's directory, which the caller hands over.
func (p *Package) OwnDirectory() {
	p.temporary = true
}

// ReadFile returns the content of a package file. The path is relative to the package
// root; paths that leave the package are refused.
func (p *Package) ReadFile(rel string) ([]byte, error) {
	clean, err := cleanRelative(rel)
	if err != nil {
		return nil, err
	}
	full := filepath.Join(p.Root, filepath.FromSlash(clean))
	info, err := os.Lstat(full)
	if err != nil {
		return nil, fmt.Errorf("file %q not found in package", rel)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%q is not a regular file", rel)
	}
	if info.Size() > p.limits.MaxFileBytes {
		return nil, fmt.Errorf("file %q is larger than %d bytes", rel, p.limits.MaxFileBytes)
	}
	return os.ReadFile(full)
}

// Path returns the absolute path of a package file after checking that it stays inside.
func (p *Package) Path(rel string) (string, error) {
	clean, err := cleanRelative(rel)
	if err != nil {
		return "", err
	}
	return filepath.Join(p.Root, filepath.FromSlash(clean)), nil
}

// Rel turns an absolute path inside the package into a package-relative slash path; ok is
// false when the path is outside.
func (p *Package) Rel(abs string) (string, bool) {
	rel, err := filepath.Rel(p.Root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// openFile opens a single service template as a package: its directory is the root, but
// the package holds only the template and the files it references — imports (and theirs),
// scriptlets, artifacts — not whatever else shares the directory (a home directory, /tmp).
// Files that renderers read by a path in a property are read from the directory as well.
func openFile(dir, entry string, limits Limits) (*Package, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	pkg := &Package{Root: root, limits: limits}
	var files []File
	var total int64
	seen := map[string]bool{}
	queue := []string{entry}
	for len(queue) > 0 {
		rel := queue[0]
		queue = queue[1:]
		if seen[rel] {
			continue
		}
		seen[rel] = true
		full := filepath.Join(root, filepath.FromSlash(rel))
		info, err := os.Lstat(full)
		if err != nil || !info.Mode().IsRegular() {
			if rel == entry {
				return nil, Invalid(entry, "cannot read package: not a regular file")
			}
			continue // the preflight reports a missing import or scriptlet
		}
		if len(files)+1 > limits.MaxFiles {
			return nil, Invalid(rel, "package has more than %d files", limits.MaxFiles)
		}
		if info.Size() > limits.MaxFileBytes {
			return nil, Invalid(rel, "file is %d bytes, more than the limit of %d", info.Size(), limits.MaxFileBytes)
		}
		if total += info.Size(); total > limits.MaxTotalBytes {
			return nil, Invalid(rel, "package is larger than %d bytes", limits.MaxTotalBytes)
		}
		sum, err := hashFile(full)
		if err != nil {
			return nil, Invalid(rel, "cannot read package: %v", err)
		}
		files = append(files, File{Path: rel, Size: info.Size(), SHA256: sum})
		if ext := path.Ext(rel); ext == ".yaml" || ext == ".yml" || rel == entry {
			queue = append(queue, pkg.references(rel)...)
		}
	}
	if err := pkg.finish(files, entry); err != nil {
		return nil, err
	}
	return pkg, nil
}

// openDirectory reads a package from a directory (.git aside): every entry, directories
// included, counts against the file limit; links and special files are refused.
func openDirectory(dir, entry string, limits Limits) (*Package, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	pkg := &Package{Root: root, limits: limits}
	var files []File
	var total int64
	entries := 0
	err = filepath.WalkDir(root, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, full)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if rel != "." {
			if entries++; entries > limits.MaxFiles {
				return Invalid(rel, "package has more than %d entries (files and directories)", limits.MaxFiles)
			}
		}
		switch {
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			return Invalid(rel, "symbolic links are not allowed in a package")
		case !d.Type().IsRegular():
			return Invalid(rel, "only regular files are allowed in a package")
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > limits.MaxFileBytes {
			return Invalid(rel, "file is %d bytes, more than the limit of %d", info.Size(), limits.MaxFileBytes)
		}
		if total += info.Size(); total > limits.MaxTotalBytes {
			return Invalid(rel, "package is larger than %d bytes", limits.MaxTotalBytes)
		}
		sum, err := hashFile(full)
		if err != nil {
			return err
		}
		files = append(files, File{Path: rel, Size: info.Size(), SHA256: sum})
		return nil
	})
	if err != nil {
		if IsInvalid(err) {
			return nil, err
		}
		return nil, Invalid(dir, "cannot read package: %s", strings.ReplaceAll(err.Error(), root+string(filepath.Separator), ""))
	}
	if err := pkg.finish(files, entry); err != nil {
		return nil, err
	}
	return pkg, nil
}

// finish sorts the files, computes the digest and finds the entry service template.
func (p *Package) finish(files []File, entry string) error {
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	p.Files = files
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00%s\n", f.Path, f.Size, f.SHA256)
	}
	p.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	if entry != "" {
		p.Entry = entry
		return nil
	}
	return p.findEntry()
}

func hashFile(full string) (string, error) {
	f, err := os.Open(full)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func readHead(source string) ([]byte, error) {
	f, err := os.Open(source)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return head[:n], nil
}

// archiveKind recognizes archives by their magic bytes, never by file name.
func archiveKind(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return "zip"
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return "gzip"
	case len(head) >= 262 && bytes.Equal(head[257:262], []byte("ustar")):
		return "tar"
	}
	return ""
}

// CleanPath normalizes a package path as the package does (slash-separated, no "." or
// ".." steps) and refuses one that would leave the package.
func CleanPath(name string) (string, error) {
	return cleanRelative(name)
}

// cleanRelative normalizes an archive entry or package path and refuses anything that
// would leave the package: absolute paths, "..", backslashes and NUL bytes.
func cleanRelative(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, "\\\x00") {
		return "", fmt.Errorf("path %s is not allowed in a package", Echo(name))
	}
	if strings.HasPrefix(name, "/") || filepath.IsAbs(name) {
		return "", fmt.Errorf("absolute path %s is not allowed in a package", Echo(name))
	}
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("path %s leaves the package", Echo(name))
	}
	return clean, nil
}

// extractor writes archive entries below root, counting what it really decompresses and
// every entry, directories included, against the file limit.
type extractor struct {
	root    string
	name    string
	limits  Limits
	total   int64
	entries int
	files   []File
	seen    map[string]bool
}

// entry counts an entry of the archive by its clean path, refusing one beyond the file
// limit and one that the archive holds already (as a file or a directory).
func (x *extractor) entry(clean string) error {
	if x.entries++; x.entries > x.limits.MaxFiles {
		return Invalid(x.name, "package has more than %d entries (files and directories)", x.limits.MaxFiles)
	}
	if x.seen[clean] {
		return Invalid(clean, "the archive holds this entry twice")
	}
	x.seen[clean] = true
	return nil
}

// osError words an error of the file system without the temporary directory the archive
// is extracted to: paths in it are relative to the package.
func (x *extractor) osError(err error) string {
	return strings.ReplaceAll(strings.ReplaceAll(err.Error(), x.root+string(filepath.Separator), ""), x.root, ".")
}

func (x *extractor) zip(data []byte) error {
	r, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return Invalid(x.name, "not a valid zip archive (CSAR): %s", archiveProblem(err))
	}
	if err := checkZipLayout(data, r.File); err != nil {
		return Invalid(x.name, "ambiguous zip archive: %v", err)
	}
	for _, f := range r.File {
		mode := f.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			return Invalid(f.Name, "symbolic links are not allowed in a package")
		case mode.IsDir() || strings.HasSuffix(f.Name, "/"):
			if err := x.dir(f.Name); err != nil {
				return err
			}
			continue
		case !mode.IsRegular():
			return Invalid(f.Name, "only regular files are allowed in a package")
		}
		rc, err := f.Open()
		if err != nil {
			return Invalid(f.Name, "cannot read zip entry: %s", archiveProblem(err))
		}
		err = x.file(f.Name, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func (x *extractor) gzip(data []byte) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return Invalid(x.name, "not a valid gzip archive: %s", archiveProblem(err))
	}
	defer zr.Close()
	return x.tar(bufio.NewReader(zr))
}

func (x *extractor) tar(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return Invalid(x.name, "not a valid tar archive: %s", archiveProblem(err))
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := x.dir(h.Name); err != nil {
				return err
			}
		case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // TypeRegA still appears in old archives
			if err := x.file(h.Name, tr); err != nil {
				return err
			}
		case tar.TypeSymlink, tar.TypeLink:
			return Invalid(h.Name, "links are not allowed in a package")
		case tar.TypeXGlobalHeader:
		default:
			return Invalid(h.Name, "only regular files are allowed in a package")
		}
	}
}

func (x *extractor) dir(name string) error {
	clean, err := cleanRelative(name)
	if err != nil {
		return Invalid(name, "%v", err)
	}
	if clean == "." {
		return nil
	}
	if err := x.entry(clean); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(x.root, filepath.FromSlash(clean)), 0o755); err != nil {
		return Invalid(clean, "cannot extract: %s", x.osError(err))
	}
	return nil
}

func (x *extractor) file(name string, r io.Reader) error {
	clean, err := cleanRelative(name)
	if err != nil {
		return Invalid(name, "%v", err)
	}
	if clean == "." {
		return Invalid(name, "invalid file name")
	}
	if err := x.entry(clean); err != nil {
		return err
	}
	full := filepath.Join(x.root, filepath.FromSlash(clean))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return Invalid(clean, "cannot extract: %s", x.osError(err))
	}
	out, err := os.OpenFile(full, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return Invalid(clean, "cannot extract: %s", x.osError(err))
	}
	defer out.Close()
	h := sha256.New()
	limit := min(x.limits.MaxFileBytes, x.limits.MaxTotalBytes-x.total)
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(entryReader{r}, limit+1))
	var readErr archiveReadError
	if errors.As(err, &readErr) {
		return Invalid(clean, "cannot read this entry: %s", archiveProblem(readErr.err))
	}
	if err != nil {
		return Invalid(clean, "cannot extract: %s", x.osError(err))
	}
	if n > limit {
		return Invalid(clean, "decompresses to more than %d bytes (package limit %d bytes, file limit %d bytes)", limit, x.limits.MaxTotalBytes, x.limits.MaxFileBytes)
	}
	x.total += n
	x.files = append(x.files, File{Path: clean, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))})
	return nil
}
