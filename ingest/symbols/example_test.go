package symbols_test

import (
	"fmt"
	"strings"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

func Example() {
	const text = `ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000040 T do_syscall_64
ffffffff81000100 t helper
ffffffffc0a00000 t nft_init	[nf_tables]
`
	syms, err := kallsyms.ReadAll(strings.NewReader(text))
	if err != nil {
		fmt.Println(err)
		return
	}
	mod := index.Map{Start: 0xffffffffc0a00000, End: 0xffffffffc0a4d000, Kind: index.KindModule, DSO: "[nf_tables]"}
	kt := symbols.Kernel(syms, []index.Map{mod})

	// Kernel symbols: look up the IP itself (identity mapping).
	for _, ip := range []uint64{0xffffffff81000000, 0xffffffff81000050, 0xffffffff80000000} {
		if s, ok := kt.Kernel.Find(ip); ok {
			fmt.Printf("%x %s+%#x\n", ip, s.Name, s.Offset(ip))
		} else {
			fmt.Printf("%x %s\n", ip, symbols.Unknown)
		}
	}
	// Module symbols: look up the module map's MapIP.
	ip := uint64(0xffffffffc0a00010)
	s, _ := kt.Modules["nf_tables"].Find(mod.MapIP(ip))
	fmt.Printf("%x %s+%#x\n", ip, s.Name, s.Offset(mod.MapIP(ip)))
	// Output:
	// ffffffff81000000 _text+0x0
	// ffffffff81000050 do_syscall_64+0x10
	// ffffffff80000000 [unknown]
	// ffffffffc0a00010 nft_init+0x10
}
