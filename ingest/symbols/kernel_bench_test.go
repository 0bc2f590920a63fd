package symbols

import (
	"testing"
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
