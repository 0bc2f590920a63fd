package corpus_test

import (
	"io/fs"
	"path"
	"testing"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
)

// The embedded corpus's kernel maps equal its golden canonical text
// (expected/kernel-maps, vector K1 of the perf semantics reference) on
// both implementations.
func TestDefaultExpected(t *testing.T) {
	c, err := corpus.Default()
	if err != nil {
		t.Fatal(err)
	}
	want, err := fs.ReadFile(c.FS, path.Join(c.Dir, "expected", "kernel-maps"))
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range mapset.All {
		ms, err := c.KernelMaps(im)
		if err != nil {
			t.Fatal(err)
		}
		if got := ms.Canonical(); got != string(want) {
			t.Errorf("impl=%s:\n%swant\n%s", im.Name, got, want)
		}
		if ms.Digest() != index.Digest(string(want)) {
			t.Errorf("impl=%s: digest differs", im.Name)
		}
	}
}
