package index_test

import (
	"fmt"

	"github.com/kmapindex/kmapindex/index"
)

// A user mmap that lands in the middle of an existing map splits it; the
// tail keeps translating to the same file offsets.
func ExampleMaps_FixupOverlapAndInsert() {
	ms := index.New()
	ms.Insert(index.Map{Start: 0x1000, End: 0x9000, Pgoff: 0x100, Kind: index.KindUser, DSO: "/usr/lib/libc.so.6"})
	ms.FixupOverlapAndInsert(index.Map{Start: 0x3000, End: 0x5000, Kind: index.KindAnon, DSO: "//anon"})
	fmt.Print(ms.Canonical())
	m, _ := ms.Find(0x6000)
	fmt.Printf("0x6000 -> %s offset %#x\n", m.DSO, m.MapIP(0x6000))
	// Output:
	// 1000-3000 100 dso user /usr/lib/libc.so.6
	// 3000-5000 0 dso anon //anon
	// 5000-9000 4100 dso user /usr/lib/libc.so.6
	// 0x6000 -> /usr/lib/libc.so.6 offset 0x5100
}

// arm64 kcore: the kernel text segment lies inside vmalloc. The text
// segment becomes the kernel map and vmalloc is cut around it and around
// the BPF program that was already there.
func ExampleLoadKcore() {
	const po, off = 0xffff000000000000, 0x2000
	seg := func(start, end uint64) index.Segment {
		return index.Segment{Vaddr: start, Size: end - start, Offset: start - po + off}
	}
	ms := index.New()
	ms.Insert(index.Map{Start: 0xffff800082545aac, End: 0xffff800082545c94, Kind: index.KindBPFProg, DSO: "bpf_prog_6deef7357e7b4530_sd_fw_egress"})
	kernel, err := index.LoadKcore(ms, []index.Segment{
		seg(0xffff800080000000, 0xffff8000822f0000), // text
		seg(0xffff800080000000, 0xfffffdffbf800000), // vmalloc
	}, index.Landmarks{Stext: index.Landmark{Addr: 0xffff800080010000, OK: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(ms.Canonical())
	fmt.Printf("_stext at kcore offset %#x\n", kernel.MapIP(0xffff800080010000))
	// Output:
	// ffff800080000000-ffff8000822f0000 800080002000 dso kernel [kernel.kallsyms]
	// ffff8000822f0000-ffff800082545aac 8000822f2000 dso kcore [kernel.kallsyms]
	// ffff800082545aac-ffff800082545c94 0 dso bpf_prog bpf_prog_6deef7357e7b4530_sd_fw_egress
	// ffff800082545c94-fffffdffbf800000 800082547c94 dso kcore [kernel.kallsyms]
	// _stext at kcore offset 0x800080012000
}

func ExampleSegmentOrder() {
	o := index.NewSegmentOrder()
	o.Add(index.Segment{Vaddr: 0x1000, Size: 0x8000}) // vmalloc-like superset
	o.Add(index.Segment{Vaddr: 0x4000, Size: 0x5000}) // subset with the same end
	o.Add(index.Segment{Vaddr: 0x0, Size: 0x1000})
	for _, s := range o.Segments() {
		fmt.Println(s)
	}
	// Output:
	// [0x0,0x1000) off 0x0
	// [0x4000,0x9000) off 0x0
	// [0x1000,0x9000) off 0x0
}
