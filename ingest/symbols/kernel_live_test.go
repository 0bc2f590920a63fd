package symbols

import (
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/kallsyms"
)

// On this machine's /proc/kallsyms the sorted path applies and agrees
// with the tree.
func TestKernelSortedLive(t *testing.T) {
	syms := liveKallsyms(t)
	got, ok := kernelSorted(syms, nil, KernelOptions{})
	if !ok {
		t.Fatal("the sorted path did not apply to /proc/kallsyms")
	}
	want := kernelTree(syms, nil, KernelOptions{})
	if !slices.Equal(got.Kernel.Symbols(), want.Kernel.Symbols()) || got.Start != want.Start || got.End != want.End {
		t.Error("sorted and tree kernel tables differ")
	}
}

// liveKallsyms returns this machine's kallsyms symbols, or skips tb when
// they cannot be read (or are restricted: all addresses zero).
func liveKallsyms(tb testing.TB) *kallsyms.List {
	tb.Helper()
	syms, err := kallsyms.ReadListFile("/proc/kallsyms")
	if err != nil || syms.Restricted() {
		tb.Skip("no readable /proc/kallsyms")
	}
	return syms
}
