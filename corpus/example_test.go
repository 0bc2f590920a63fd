package corpus_test

import (
	"fmt"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/index"
)

// Example loads the default corpus and builds the kernel maps perf mainline
// builds from it: reference vector K1.
func Example() {
	c, err := corpus.Default()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s (%s): %d symbols, %d modules, %d kcore segments, %d BPF maps\n",
		c.Meta.Name, c.Meta.Arch, len(c.Symbols), len(c.Modules), len(c.Segments), len(c.BPF))

	ms, err := index.KernelMaps(c.Landmarks, c.Modules[:1]) // K1 starts with nf_tables only
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range c.BPF {
		if err := ms.FixupOverlapAndInsert(m); err != nil {
			fmt.Println(err)
			return
		}
	}
	if _, err := index.LoadKcore(ms, c.Segments, c.Landmarks); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(ms.Canonical())
	// Output:
	// default (arm64): 46 symbols, 4 modules, 5 kcore segments, 1 BPF maps
	// ffff000000000000-ffff00001ac00000 2000 dso kcore [kernel.kallsyms]
	// ffff800000000000-ffff800080000000 800000002000 dso kcore [kernel.kallsyms]
	// ffff800080000000-ffff8000822f0000 800080002000 dso kernel [kernel.kallsyms]
	// ffff8000822f0000-ffff800082545aac 8000822f2000 dso kcore [kernel.kallsyms]
	// ffff800082545aac-ffff800082545c94 0 dso bpf_prog bpf_prog_6deef7357e7b4530_sd_fw_egress
	// ffff800082545c94-fffffdffbf800000 800082547c94 dso kcore [kernel.kallsyms]
	// fffffdffc0000000-fffffdffc06b0000 fdffc0002000 dso kcore [kernel.kallsyms]
}
