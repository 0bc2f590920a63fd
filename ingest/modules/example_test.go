package modules_test

import (
	"fmt"
	"strings"

	"github.com/kmapindex/kmapindex/ingest/modules"
)

func Example() {
	const text = `nf_tables 315392 183 nft_compat,nft_chain_nat, Live 0xffffffffc0a00000
x_tables 61440 5 nft_compat,ip_tables, Live 0xffffffffc0a3e000 (OE)
`
	mods, err := modules.Parse(strings.NewReader(text))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range mods {
		fmt.Printf("[%s] [%#x,%#x)\n", m.Name, m.Start, m.Start+m.Size)
	}
	// Output:
	// [nf_tables] [0xffffffffc0a00000,0xffffffffc0a4d000)
	// [x_tables] [0xffffffffc0a3e000,0xffffffffc0a4d000)
}
