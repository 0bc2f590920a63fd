package kcore

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/kmapindex/kmapindex/index"
)

// ReadELF is hand-written because perf reads only a kcore's program
// headers, while debug/elf also reads and checks its section headers: a
// header-only copy whose e_shoff points past its end (the section table
// was not copied) is refused by debug/elf and read by ReadELF, with the
// program headers debug/elf gives for the intact header.
func TestDivergesFromDebugELF(t *testing.T) {
	segs := []index.Segment{
		{Vaddr: 0xffff800080000000, Size: 0x22f0000, Offset: 0x800080002000},
		{Vaddr: 0xffff800080000000, Size: 0x7dff3f800000, Offset: 0x800080002000},
	}
	var buf bytes.Buffer
	if err := WriteHeaders(&buf, segs, elf.EM_AARCH64, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	intact := buf.Bytes()
	lib, err := elf.NewFile(bytes.NewReader(intact))
	if err != nil {
		t.Fatalf("debug/elf on the intact header: %v", err)
	}
	var want []elf.ProgHeader
	for _, p := range lib.Progs {
		want = append(want, p.ProgHeader)
	}

	cut := bytes.Clone(intact)
	le := binary.LittleEndian
	le.PutUint64(cut[0x28:], uint64(len(cut))+0x1000) // e_shoff, past the end
	le.PutUint16(cut[0x3c:], 3)                       // e_shnum
	le.PutUint16(cut[0x3e:], 2)                       // e_shstrndx
	if _, err := elf.NewFile(bytes.NewReader(cut)); err == nil {
		t.Fatal("debug/elf now reads a kcore copy without its section table: ReadELF may no longer be needed")
	}
	f, err := ReadELF(bytes.NewReader(cut))
	if err != nil {
		t.Fatalf("ReadELF: %v", err)
	}
	if !reflect.DeepEqual(f.Progs, want) {
		t.Errorf("ReadELF program headers\n%+v\nwant (debug/elf on the intact header)\n%+v", f.Progs, want)
	}
}
