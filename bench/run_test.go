package bench

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

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
	for i, im := range r.Impls {
		if im.Impl != mapset.All[i].Name {
			t.Errorf("impl %d is %s, want %s (the order of mapset.All)", i, im.Impl, mapset.All[i].Name)
		}
		if len(im.BuildRuns) != Rounds || len(im.ResolveRuns) != Rounds {
			t.Errorf("%s: %d build and %d resolve timings, want %d each", im.Impl, len(im.BuildRuns), len(im.ResolveRuns), Rounds)
		}
		if lo, hi := Spread(im.ResolveRuns); im.Resolve < lo || im.Resolve > hi {
			t.Errorf("%s: median resolve %v outside its range %v–%v", im.Impl, im.Resolve, lo, hi)
		}
	}
}

func TestMedianAndSpread(t *testing.T) {
	for _, tc := range []struct {
		in             []time.Duration
		median, lo, hi time.Duration
	}{
		{nil, 0, 0, 0},
		{[]time.Duration{4}, 4, 4, 4},
		{[]time.Duration{9, 1, 5}, 5, 1, 9},
		{[]time.Duration{8, 2, 6, 4}, 4, 2, 8},
		{[]time.Duration{3, 3, 1, 7, 3}, 3, 1, 7},
	} {
		in := slices.Clone(tc.in)
		if got := median(tc.in); got != tc.median {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.median)
		}
		if lo, hi := Spread(tc.in); lo != tc.lo || hi != tc.hi {
			t.Errorf("Spread(%v) = %v, %v, want %v, %v", tc.in, lo, hi, tc.lo, tc.hi)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("median reordered its input: %v", tc.in)
		}
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
