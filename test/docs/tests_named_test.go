package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every test a document cites as proof exists: a test renamed or removed takes its claim
// with it.
func TestDocsCiteTestsThatExist(t *testing.T) {
	root := filepath.Join("..", "..")
	defined := definedTests(t, root)
	testName := regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*\b`)
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md"))
	cited := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range testName.FindAllString(string(data), -1) {
			cited++
			if !defined[name] {
				t.Errorf("%s cites %s, which no test file defines", filepath.Base(doc), name)
			}
		}
	}
	if cited == 0 {
		t.Fatal("the docs cite no test: the pattern finds nothing")
	}
}

// definedTests returns the names of the test functions of the repository's test files.
func definedTests(t *testing.T, root string) map[string]bool {
	t.Helper()
	defined := map[string]bool{}
	fn := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fn.FindAllStringSubmatch(string(data), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return defined
}
