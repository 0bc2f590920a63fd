package bench

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/corpus/gen"
	"github.com/kmapindex/kmapindex/index/mapset"
)

func TestRunDefaultCorpus(t *testing.T) {
	c, err := corpus.Default()
	if err != nil {
		t.Fatal(err)
	}
	ms, err := c.KernelMaps(mapset.BTree)
	if err != nil {
		t.Fatal(err)
	}
	samples := SyntheticSamples(ms.Slice(), 50_000, 7)
	if again := SyntheticSamples(ms.Slice(), 50_000, 7); !slices.Equal(samples, again) {
		t.Fatal("synthetic samples are not deterministic")
	}
	r, err := RunSynthetic(c, samples)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Identical || r.Maps != 7 || r.Samples != 50_000 || r.Unknown == 0 || r.Unknown > 5_000 {
		t.Errorf("result %+v", r)
	}
	if r.Impls[0].AttribDigest != r.Impls[1].AttribDigest {
		t.Error("attribution digests differ")
	}
}

// Attribution must tell different counts apart (a digest that cannot
// differ would make the verdict meaningless).
func TestAttributionDistinguishes(t *testing.T) {
	c, _ := corpus.Default()
	ms, _ := c.KernelMaps(mapset.BTree)
	maps := ms.Slice()
	a := make([]int, len(maps)+1)
	b := make([]int, len(maps)+1)
	a[0], b[1] = 1, 1
	if Attribution(maps, a) == Attribution(maps, b) {
		t.Error("different attributions print the same")
	}
}

// A corpus with a perf.data file is attributed from its recording, with
// identical results on both implementations.
func TestRunRecording(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	if _, err := gen.Generate(gen.Params{Arch: "x86_64", Modules: 5, BPF: 3, Procs: 3, Samples: 3000, Seed: 9}, dir); err != nil {
		t.Fatal(err)
	}
	c, err := corpus.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(c, RunOptions{Samples: 10, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Source != PerfDataFile || r.Samples != 3000 || !r.Identical || len(r.Impls) != 2 || r.Unknown == 0 || r.Unknown > 300 {
		t.Errorf("result %+v", r)
	}
}
