package symbols

import (
	"testing"

	"github.com/kmapindex/kmapindex/index"
)

// BenchmarkKernel builds the kernel's tables from this machine's
// /proc/kallsyms, as a report does before its first kernel sample.
func BenchmarkKernel(b *testing.B) {
	syms := liveKallsyms(b)
	b.ReportAllocs()
	for b.Loop() {
		KernelFrom(syms, nil, KernelOptions{})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*syms.Len()), "ns/symbol")
}

// BenchmarkKcore builds the kernel DSO's table after a kcore load from
// this machine's /proc/kallsyms, over a kernel text map and a kcore map
// of the module area, as a report with kcore does at its first kernel
// sample.
func BenchmarkKcore(b *testing.B) {
	syms := liveKallsyms(b)
	maps := []index.Map{
		{Start: 0xffffffff80000000, End: 0xffffffffa0000000, Pgoff: 0x7fff80000000 + 0x1000, Kind: index.KindKernel},
		{Start: 0xffffffffa0000000, End: 0xffffffffff000000, Pgoff: 0x7fffa0000000 + 0x1000, Kind: index.KindKcore},
	}
	find := func(a uint64) (index.Map, bool) {
		for _, m := range maps {
			if m.Contains(a) {
				return m, true
			}
		}
		return index.Map{}, false
	}
	b.ReportAllocs()
	for b.Loop() {
		Kcore(syms, find)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*syms.Len()), "ns/symbol")
}
