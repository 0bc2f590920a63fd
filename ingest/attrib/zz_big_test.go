package attrib

import (
	"testing"

	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

func BenchmarkBig(b *testing.B) {
	ks, _ := kallsyms.ReadFile("/proc/kallsyms")
	for b.Loop() {
		r, err := perfdata.Open("/tmp/big/big.data")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Run(r, Options{Kallsyms: ks}); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}
