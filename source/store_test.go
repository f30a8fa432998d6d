package source_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

// The store keeps at most its size bound, evicting the least recently used package and
// removing its files.
func TestStoreEvictsLeastRecentlyUsed(t *testing.T) {
	g := NewWithT(t)
	// Each package is a template padded to ~10 KiB; the bound holds two of them.
	pad := strings.Repeat("x", 10<<10)
	archive := func(name string) []byte {
		return csarOf(t, map[string]string{"service.yaml": template(name) + "# " + pad + "\n"})
	}
	store := newStore(t, 25<<10)
	a, err := store.PutArchive("", archive("a"), "a.csar")
	g.Expect(err).NotTo(HaveOccurred())
	keyA := source.SHA256(archive("a"))
	_, err = store.PutArchive("", archive("b"), "b.csar")
	g.Expect(err).NotTo(HaveOccurred())
	keyB := source.SHA256(archive("b"))
	// Use a, so that b is the least recently used.
	_, ok := store.Get(keyA)
	g.Expect(ok).To(BeTrue())
	_, err = store.PutArchive("", archive("c"), "c.csar")
	g.Expect(err).NotTo(HaveOccurred())

	_, ok = store.Get(keyB)
	g.Expect(ok).To(BeFalse(), "b was evicted")
	_, ok = store.Get(keyA)
	g.Expect(ok).To(BeTrue(), "a was used recently")
	count, size := store.Len()
	g.Expect(count).To(Equal(2))
	g.Expect(size).To(BeNumerically("<=", 25<<10))
	_, err = os.Stat(a.Root)
	g.Expect(err).NotTo(HaveOccurred(), "a's files stay")

	// A directory package moves into the store, and leaves with eviction too.
	dir, err := store.TempDir()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(writeFiles(dir, map[string]string{"service.yaml": template("d") + "# " + pad + "\n"})).To(Succeed())
	d, err := store.PutDirectory("git-d", dir)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = os.Stat(dir)
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the directory moved into the store")
	for _, name := range []string{"e", "f"} {
		_, err = store.PutArchive("", archive(name), name+".csar")
		g.Expect(err).NotTo(HaveOccurred())
	}
	_, ok = store.Get("git-d")
	g.Expect(ok).To(BeFalse())
	_, err = os.Stat(d.Root)
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "evicted files are removed")
}

// A panic while an archive is read (a parser bug that a package's bytes reach) refuses
// that package with an invalid-package error; nothing is stored, and the store goes on.
func TestStoreRefusesAPackageWhoseReadingPanics(t *testing.T) {
	g := NewWithT(t)
	store := newStore(t, 1<<20)
	archive := csarOf(t, map[string]string{"service.yaml": template("a")})
	store.SetOpenArchive(func(data []byte, name string, limits tosca.Limits) (*tosca.Package, error) {
		var header []byte
		_ = header[len(data)] // as a parser that trusts a length in the archive
		return nil, nil
	})
	_, err := store.PutArchive("", archive, "bug.csar")
	g.Expect(tosca.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(HavePrefix("bug.csar: reading the package failed unexpectedly (runtime error: index out of range"))
	count, _ := store.Len()
	g.Expect(count).To(Equal(0))

	store.SetOpenArchive(tosca.OpenArchive)
	pkg, err := store.PutArchive("", archive, "good.csar")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pkg).NotTo(BeNil())
}

// A panic while a directory package (a git checkout) is read refuses it as an archive's
// does: nothing stored, the directory moved into the store removed, the store still serving.
func TestStoreRefusesADirectoryWhoseReadingPanics(t *testing.T) {
	g := NewWithT(t)
	store := newStore(t, 1<<20)
	checkout := func() string {
		dir, err := store.TempDir()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(writeFiles(dir, map[string]string{"service.yaml": template("g")})).To(Succeed())
		return dir
	}
	dir := checkout()
	root := filepath.Dir(dir)
	store.SetOpenDirectory(func(dir string, limits tosca.Limits) (*tosca.Package, error) {
		var header []byte
		_ = header[len(dir)] // as a parser that trusts a length it read
		return nil, nil
	})
	_, err := store.PutDirectory("git-bug", dir)
	g.Expect(tosca.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(HavePrefix("reading the package failed unexpectedly (runtime error: index out of range"))
	count, _ := store.Len()
	g.Expect(count).To(Equal(0))
	left, err := os.ReadDir(root)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(left).To(BeEmpty(), "the refused checkout is removed")

	store.SetOpenDirectory(tosca.Open)
	pkg, err := store.PutDirectory("git-good", checkout())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pkg).NotTo(BeNil())
}
