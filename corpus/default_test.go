package corpus

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"flag"
	"os"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kcore"
)

var update = flag.Bool("update", false, "rewrite generated files under default/")

// defaultSegments are the kcore program headers of the default corpus, in
// file order: text [_text,_end), vmalloc, modules, RAM, vmemmap.
func defaultSegments() []index.Segment {
	const pageOffset, dataOffset = 0xffff000000000000, 0x2000
	segs := []index.Segment{
		{Vaddr: 0xffff800080000000, Size: 0xffff8000822f0000 - 0xffff800080000000},
		{Vaddr: 0xffff800080000000, Size: 0xfffffdffbf800000 - 0xffff800080000000},
		{Vaddr: 0xffff800000000000, Size: 0xffff800080000000 - 0xffff800000000000},
		{Vaddr: 0xffff000000000000, Size: 0xffff00001ac00000 - 0xffff000000000000},
		{Vaddr: 0xfffffdffc0000000, Size: 0xfffffdffc06b0000 - 0xfffffdffc0000000},
	}
	for i := range segs {
		segs[i].Offset = segs[i].Vaddr - pageOffset + dataOffset
	}
	return segs
}

// TestDefaultKcore checks that default/kcore is what WriteHeaders makes of
// defaultSegments; -update rewrites it.
func TestDefaultKcore(t *testing.T) {
	var b bytes.Buffer
	if err := kcore.WriteHeaders(&b, defaultSegments(), elf.EM_AARCH64, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	const file = "default/kcore"
	if *update {
		if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Fatalf("%s is stale; run go test ./corpus -run TestDefaultKcore -update", file)
	}
}

func TestDefault(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if !c.HasMeta || c.Meta.Name != "default" || c.Meta.Arch != "arm64" || c.Meta.Description == "" {
		t.Errorf("meta %+v", c.Meta)
	}
	if !c.HasKcore || !slices.Equal(c.Segments, defaultSegments()) {
		t.Errorf("segments %v", c.Segments)
	}
	lm := func(a uint64) index.Landmark { return index.Landmark{Addr: a, OK: true} }
	want := index.Landmarks{
		Text:  lm(0xffff800080000000),
		Stext: lm(0xffff800080010000),
		Etext: lm(0xffff800081600000),
		Edata: lm(0xffff800082229200),
		End:   lm(0xffff8000822f0000),
	}
	if !c.HasKallsyms || c.Landmarks != want {
		t.Errorf("landmarks %+v, want %+v", c.Landmarks, want)
	}
	wantMods := []index.Module{
		{Name: "nf_tables", Start: 0xffff80007b1e0000, Size: 0x4a000, Line: 1},
		{Name: "x_tables", Start: 0xffff80007b1b0000, Size: 0x10000, Line: 2},
		{Name: "nf_conntrack", Start: 0xffff80007b150000, Size: 0x30000, Line: 3},
		{Name: "ip_tables", Start: 0xffff80007b140000, Size: 0x8000, Line: 4},
	}
	if !c.HasModules || !slices.Equal(c.Modules, wantMods) {
		t.Errorf("modules %v", c.Modules)
	}
	for _, m := range c.Modules {
		if m.Start < 0xffff800000000000 || m.Start+m.Size > 0xffff800080000000 {
			t.Errorf("module %s outside the modules segment", m.Name)
		}
	}
	wantBPF := []index.Map{{Start: 0xffff800082545aac, End: 0xffff800082545c94, Mapping: index.MappingDSO,
		Kind: index.KindBPFProg, DSO: "bpf_prog_6deef7357e7b4530_sd_fw_egress"}}
	if !slices.Equal(c.BPF, wantBPF) {
		t.Errorf("BPF %v", c.BPF)
	}
	if c.BPF[0].Size() != 0x1e8 {
		t.Errorf("BPF length %#x, want 0x1e8", c.BPF[0].Size())
	}
	if len(c.Symbols) != 46 {
		t.Errorf("%d symbols", len(c.Symbols))
	}
	if c.Dir != DefaultDir || c.FS == nil {
		t.Errorf("Dir %q FS %v", c.Dir, c.FS)
	}
}

// TestDefaultOnDisk loads the same files through Load.
func TestDefaultOnDisk(t *testing.T) {
	a, err := Load("default")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Segments, b.Segments) || !slices.Equal(a.Symbols, b.Symbols) ||
		!slices.Equal(a.Modules, b.Modules) || !slices.Equal(a.BPF, b.BPF) || a.Landmarks != b.Landmarks {
		t.Error("Load(\"default\") differs from Default()")
	}
}
