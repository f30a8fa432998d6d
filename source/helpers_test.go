package source_test

import (
	"os"
	"path/filepath"
)

func mkdirAll(file string) error { return os.MkdirAll(filepath.Dir(file), 0o755) }

func writeFile(file, content string) error { return os.WriteFile(file, []byte(content), 0o644) }
