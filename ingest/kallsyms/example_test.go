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

// A List keeps a whole /proc/kallsyms compactly; At reads a symbol back
// without allocating.
func ExampleReadList() {
	const text = `ffffffff81000000 T _text
ffffffff81001000 t do_one_initcall
ffffffffc0a00000 t nf_tables_init_net	[nf_tables]
`
	l, err := kallsyms.ReadList(strings.NewReader(text))
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range l.Len() {
		s := l.At(i)
		fmt.Printf("%#x %c %s %q %q\n", s.Addr, s.Type, s.Name, s.Module, l.TaggedName(i))
	}
	start, _ := l.FunctionStart("_text")
	fmt.Printf("_text %#x\n", start)
	// Output:
	// 0xffffffff81000000 T _text "" "_text"
	// 0xffffffff81001000 t do_one_initcall "" "do_one_initcall"
	// 0xffffffffc0a00000 t nf_tables_init_net "nf_tables" "nf_tables_init_net\t[nf_tables]"
	// _text 0xffffffff81000000
}
