package attrib

import (
	"io"
	"os"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/kallsyms"
)

// BenchmarkDwarfScript is Run's script output (perf script -F
// ip,sym,dso) for a perf record --call-graph dwarf recording, named by
// $KBENCH_DWARF_RECORDING (with /proc/kallsyms; skipped when unset):
// decoding with the user stacks, unwinding them and expanding inlined
// frames. Run it with
//
//	KBENCH_DWARF_RECORDING=perf.data go test -bench DwarfScript -benchmem ./ingest/attrib
func BenchmarkDwarfScript(b *testing.B) {
	file := os.Getenv("KBENCH_DWARF_RECORDING")
	if file == "" {
		b.Skip("KBENCH_DWARF_RECORDING names no recording")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	ks, err := kallsyms.ReadFile("/proc/kallsyms")
	if err != nil {
		b.Fatal(err)
	}
	var n uint64
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(openBytes(b, data), Options{Kallsyms: ks, KallsymsFile: "/proc/kallsyms",
			Script: io.Discard, FetchInsn: true, NoCounts: true})
		if err != nil {
			b.Fatal(err)
		}
		n = res.Samples
	}
	perSample(b, int(n))
}
