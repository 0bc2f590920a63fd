package kcore_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kcore"
)

func Example() {
	// A header-only kcore with an arm64 text and vmalloc segment.
	segs := []index.Segment{
		{Vaddr: 0xffff800080000000, Size: 0x22f0000, Offset: 0x800080002000},
		{Vaddr: 0xffff800080000000, Size: 0x7dff3f800000, Offset: 0x800080002000},
	}
	var buf bytes.Buffer
	if err := kcore.WriteHeaders(&buf, segs, elf.EM_AARCH64, binary.LittleEndian); err != nil {
		fmt.Println(err)
		return
	}
	f, err := kcore.ReadELF(bytes.NewReader(buf.Bytes()))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range kcore.Segments(f.Progs, false) {
		fmt.Println(s)
	}
	fmt.Println(kcore.Validate(segs))

	// The same from `readelf -lW` text.
	const text = `Program Headers:
  Type           Offset   VirtAddr           PhysAddr           FileSiz  MemSiz   Flg Align
  LOAD           0x800080002000 0xffff800080000000 0x0000000000000000 0x22f0000 0x22f0000 RWE 0x1000
`
	progs, err := kcore.ParseReadelf(strings.NewReader(text))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(kcore.Segments(progs, false))
	// Output:
	// [0xffff800080000000,0xffff8000822f0000) off 0x800080002000
	// [0xffff800080000000,0xfffffdffbf800000) off 0x800080002000
	// <nil>
	// [[0xffff800080000000,0xffff8000822f0000) off 0x800080002000]
}
