package kallsyms

import (
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index"
)

func TestBPFMaps(t *testing.T) {
	prog := func(s, e uint64, name string) index.Map {
		return index.Map{Start: s, End: e, Mapping: index.MappingDSO, Kind: index.KindBPFProg, DSO: name}
	}
	image := func(s, e uint64, name string) index.Map {
		return index.Map{Start: s, End: e, Mapping: index.MappingDSO, Kind: index.KindBPFImage, DSO: name}
	}
	tests := []struct {
		name string
		in   string
		want []index.Map
	}{
		{name: "none", in: "1 T a\n2 t b\t[m]\n"},
		{name: "K1 program, next symbol not BPF",
			in:   "ffff800082545aac t bpf_prog_6deef7357e7b4530_sd_fw_egress\t[bpf]\nffff800082545c94 t ftrace_trampoline\t[__builtin__ftrace]\n",
			want: []index.Map{prog(0xffff800082545aac, 0xffff800082545c94, "bpf_prog_6deef7357e7b4530_sd_fw_egress")}},
		{name: "unsorted, images, cap and other names",
			in: "3000 t bpf_prog_b\t[bpf]\n1000 t bpf_trampoline_6442491237\t[bpf]\n" +
				"1800 t bpf_dispatcher_xdp\t[bpf]\n2000 t bpf_prog_a\t[bpf]\n2010 t bpf_prog_a2\t[bpf]\n" +
				"2fff t bpf_struct_ops_x\t[bpf]\n3000 T dup_addr_kernel_symbol\n9000 t bpf_prog_c\n",
			want: []index.Map{
				image(0x1000, 0x1800, "bpf_trampoline_6442491237"),
				image(0x1800, 0x2000, "bpf_dispatcher_xdp"),
				prog(0x2000, 0x2010, "bpf_prog_a"),
				prog(0x2010, 0x2fff, "bpf_prog_a2"),
				prog(0x3000, 0x3000+BPFLenCap, "bpf_prog_b"),
			}},
		{name: "duplicate address keeps the first in file order",
			in:   "100 t bpf_prog_second\t[bpf]\n100 t bpf_prog_first\t[bpf]\n180 T x\n",
			want: []index.Map{prog(0x100, 0x180, "bpf_prog_second")}},
		{name: "top of the address space",
			in:   "fffffffffffff800 t bpf_prog_top\t[bpf]\nffffffffffffffff t bpf_prog_last\t[bpf]\n",
			want: []index.Map{prog(0xfffffffffffff800, 0xffffffffffffffff, "bpf_prog_top")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			syms, err := ReadAll(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			got := BPFMaps(syms)
			if index.Canonical(got) != index.Canonical(tt.want) {
				t.Errorf("got\n%swant\n%s", index.Canonical(got), index.Canonical(tt.want))
			}
			for _, m := range got {
				if err := m.Validate(); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestBPFMapsExcerpt(t *testing.T) {
	syms, err := ReadFile("testdata/kallsyms.excerpt")
	if err != nil {
		t.Fatal(err)
	}
	got := index.Canonical(BPFMaps(syms))
	want := "ffffffffc0185000-ffffffffc0186000 0 dso bpf_image bpf_trampoline_6442491237\n" +
		"ffffffffc0186388-ffffffffc01864b2 0 dso bpf_prog bpf_prog_be31ae23198a0378_sd_devices\n" +
		"ffffffffc01864b2-ffffffffc0187000 0 dso bpf_prog bpf_prog_6deef7357e7b4530_sd_fw_egress\n" +
		"ffffffffc0187000-ffffffffc0188000 0 dso bpf_image bpf_dispatcher_xdp\n"
	if got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
}
