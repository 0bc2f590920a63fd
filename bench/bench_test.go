package bench

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/corpus/gen"
	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/listref"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

var maxN = flag.Int("maxn", 100_000, "largest map count to benchmark")

// sizes runs fn for each benchmark size up to -maxn.
func sizes(b *testing.B, fn func(b *testing.B, n int)) {
	for _, n := range Sizes {
		if n > *maxN {
			continue
		}
		fn(b, n)
	}
}

// same fails the benchmark unless the two outputs are identical.
func same(b *testing.B, what string, btree, list string) {
	b.Helper()
	if btree != list {
		b.Fatalf("%s: btree and list outputs differ (digests %s vs %s)", what, index.Digest(btree)[:12], index.Digest(list)[:12])
	}
}

func BenchmarkKcoreOrder(b *testing.B) {
	sizes(b, func(b *testing.B, n int) {
		segs := RandomSegments(n, 1)
		same(b, "kcore order", fmt.Sprint(index.OrderSegments(segs)), fmt.Sprint(listref.OrderSegments(segs)))
		b.Run(fmt.Sprintf("impl=btree/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				index.OrderSegments(segs)
			}
		})
		b.Run(fmt.Sprintf("impl=list/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				listref.OrderSegments(segs)
			}
		})
	})
}

// build is one workload: start empty and apply op for every map.
func buildBTree(maps []index.Map, merge bool) *index.Maps {
	ms := index.New()
	for _, m := range maps {
		if merge {
			ms.MergeIn(m)
		} else {
			ms.FixupOverlapAndInsert(m)
		}
	}
	return ms
}

func buildList(maps []index.Map, merge bool) *listref.Maps {
	l := &listref.Maps{}
	for _, m := range maps {
		if merge {
			l.MergeIn(m)
		} else {
			l.FixupOverlapAndInsert(m)
		}
	}
	return l
}

func benchBuild(b *testing.B, merge bool) {
	sizes(b, func(b *testing.B, n int) {
		maps := RandomMaps(n, 2, index.KindKcore)
		same(b, "build", buildBTree(maps, merge).Canonical(), buildList(maps, merge).Canonical())
		b.Run(fmt.Sprintf("impl=btree/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buildBTree(maps, merge)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/map")
		})
		b.Run(fmt.Sprintf("impl=list/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buildList(maps, merge)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/map")
		})
	})
}

// BenchmarkMergeIn merges n overlapping maps into an empty set, one by one.
func BenchmarkMergeIn(b *testing.B) { benchBuild(b, true) }

// BenchmarkFixupInsert inserts n overlapping maps, each one winning.
func BenchmarkFixupInsert(b *testing.B) { benchBuild(b, false) }

// BenchmarkLoadKcore rebuilds kernel maps from n kcore segments around
// n/10 BPF programs.
func BenchmarkLoadKcore(b *testing.B) {
	sizes(b, func(b *testing.B, n int) {
		segs, lm, bpf := KcoreLayout(n, 3)
		loadBT := func() *index.Maps {
			ms := index.New()
			for _, m := range bpf {
				ms.Insert(m)
			}
			if _, err := index.LoadKcore(ms, segs, lm); err != nil {
				b.Fatal(err)
			}
			return ms
		}
		loadL := func() *listref.Maps {
			l := &listref.Maps{}
			for _, m := range bpf {
				l.Insert(m)
			}
			if _, err := listref.LoadKcore(l, segs, lm); err != nil {
				b.Fatal(err)
			}
			return l
		}
		same(b, "kcore load", loadBT().Canonical(), loadL().Canonical())
		b.Run(fmt.Sprintf("impl=btree/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				loadBT()
			}
		})
		b.Run(fmt.Sprintf("impl=list/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				loadL()
			}
		})
	})
}

func benchLookup(b *testing.B, clustered bool) {
	sizes(b, func(b *testing.B, n int) {
		maps := DisjointMaps(n, 4)
		ms, l := index.New(), &listref.Maps{}
		for _, m := range maps {
			ms.Insert(m)
		}
		// The list is built in one pass (maps are in order) so that set-up
		// does not dominate; Insert would re-walk it every time.
		for i := len(maps) - 1; i >= 0; i-- {
			l.FixupOverlapAndInsert(maps[i])
		}
		snap := ms.Snapshot()
		addrs := Addresses(maps, 1<<16, clustered, 5)
		for _, a := range addrs[:1024] {
			x, ok := ms.Find(a)
			y, ok2 := l.Find(a)
			z, ok3 := snap.Find(a)
			if x != y || ok != ok2 || x != z || ok != ok3 {
				b.Fatalf("Find(%#x) differs: btree %v list %v snapshot %v", a, x, y, z)
			}
		}
		run := func(name string, find func(uint64) (index.Map, bool)) {
			b.Run(fmt.Sprintf("impl=%s/n=%d", name, n), func(b *testing.B) {
				b.ReportAllocs()
				hits, i := 0, 0
				for b.Loop() {
					if _, ok := find(addrs[i&(len(addrs)-1)]); ok {
						hits++
					}
					i++
				}
				if hits == 0 {
					b.Fatal("no hits")
				}
			})
		}
		run("btree", ms.Find)
		run("list", l.Find)
		run("snapshot", snap.Find)
		run("finder", index.NewFinder(snap).Find)
	})
}

// BenchmarkLookup looks up uniformly random addresses (some in gaps).
func BenchmarkLookup(b *testing.B) { benchLookup(b, false) }

// BenchmarkLookupClustered looks up bursts of addresses within one map.
func BenchmarkLookupClustered(b *testing.B) { benchLookup(b, true) }

// BenchmarkIngest attributes a generated perf.data end to end (decode,
// order, resolve, symbolize, count) on each implementation; n is the
// number of BPF programs, i.e. of kernel maps the samples are looked up
// in. It reports ns/sample and samples/s.
func BenchmarkIngest(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000} {
		if n > *maxN {
			continue
		}
		dir := filepath.Join(b.TempDir(), "c")
		const samples = 50_000
		if _, err := gen.Generate(gen.Params{Arch: "x86_64", Modules: 20, BPF: n, Procs: 8, Samples: samples, Seed: 1}, dir); err != nil {
			b.Fatal(err)
		}
		c, err := corpus.Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, PerfDataFile))
		if err != nil {
			b.Fatal(err)
		}
		run := func(im mapset.Impl) *attrib.Result {
			r, err := perfdata.NewFileReader(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				b.Fatal(err)
			}
			res, err := attrib.Run(r, attrib.Options{Impl: im, Kallsyms: c.Symbols, Kcore: c.Kcore(), DebugDir: "-"})
			if err != nil {
				b.Fatal(err)
			}
			return res
		}
		same(b, "ingest", run(mapset.BTree).Canonical(), run(mapset.List).Canonical())
		for _, im := range mapset.All {
			b.Run(fmt.Sprintf("impl=%s/n=%d", im.Name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					run(im)
				}
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N*samples)
				b.ReportMetric(ns, "ns/sample")
				b.ReportMetric(1e9/ns, "samples/s")
			})
		}
	}
}
