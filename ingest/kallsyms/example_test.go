package kallsyms_test

import (
	"fmt"
	"strings"

	"github.com/kmapindex/kmapindex/ingest/kallsyms"
)

func Example() {
	const text = `ffff800080000000 T _text
ffff800080010000 T _stext
ffff800081600000 T _etext
ffff800082229200 D _edata
ffff8000822f0000 B _end
ffff80007b1e0000 t nf_tables_init_net	[nf_tables]
ffff800082545aac t bpf_prog_6deef7357e7b4530_sd_fw_egress	[bpf]
`
	syms, err := kallsyms.ReadAll(strings.NewReader(text))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range syms[5:] {
		fmt.Printf("%#x %c %s [%s]\n", s.Addr, s.Type, s.Name, s.Module)
	}
	l := kallsyms.Landmarks(syms)
	fmt.Printf("_text %#x _stext %#x _edata %#x _end %#x\n", l.Text.Addr, l.Stext.Addr, l.Edata.Addr, l.End.Addr)
	// Output:
	// 0xffff80007b1e0000 t nf_tables_init_net [nf_tables]
	// 0xffff800082545aac t bpf_prog_6deef7357e7b4530_sd_fw_egress [bpf]
	// _text 0xffff800080000000 _stext 0xffff800080010000 _edata 0xffff800082229200 _end 0xffff8000822f0000
}
