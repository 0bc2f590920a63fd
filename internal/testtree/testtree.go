// Package testtree writes small file trees for tests: fake /proc, /sys and
// corpus directories.
package testtree

import (
	"os"
	"path/filepath"
	"testing"
)

// Write creates each file of files (slash-separated paths below root, the
// directories made as needed) with its contents, failing t on error.
func Write(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
