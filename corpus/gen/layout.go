package gen

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/kmapindex/kmapindex/index"
)

// ramRange is a range of physical memory.
type ramRange struct{ phys, size uint64 }

// arch describes one architecture's kernel virtual memory layout, after
// the kernel's Documentation/arch/*/mm.rst (or memory.rst) and the
// kcore code of fs/proc/kcore.c.
type arch struct {
	name     string // uname -m
	aliases  []string
	machine  elf.Machine
	order    binary.ByteOrder
	pageSize uint64
	insn     uint64 // instruction alignment of sample addresses

	pageOffset uint64     // start of the linear map (PAGE_OFFSET)
	physBase   uint64     // physical address mapped at PAGE_OFFSET
	ram        []ramRange // System RAM
	vmemmap    uint64     // struct page of physBase
	vmalloc    [2]uint64  // [VMALLOC_START, VMALLOC_END)
	modules    [2]uint64  // module region; zero: modules live in vmalloc
	vsyscall   uint64     // x86_64 vsyscall page (KCORE_USER), or 0

	textBase   uint64 // _text without KASLR
	kaslrAlign uint64 // 0: no KASLR
	kaslrSlots uint64 // number of possible KASLR offsets
	stextOff   uint64 // _stext - _text
	kcoreText  bool   // CONFIG_ARCH_PROC_KCORE_TEXT: a [_text, _end) segment
	bpfVmalloc bool   // BPF JIT images in vmalloc above the kernel image, not in the module region
	modTextRel bool   // module region is [_end - 2G, _text) (riscv64)
	missBase   uint64 // kernel addresses that no map holds (linear map beyond the image)
}

var arches = []*arch{
	{
		// Documentation/arch/x86/x86_64/mm.rst, 4-level paging.
		name: "x86_64", aliases: []string{"amd64"}, machine: elf.EM_X86_64, order: binary.LittleEndian,
		pageSize: 4096, insn: 1,
		pageOffset: 0xffff888000000000, physBase: 0,
		ram:     []ramRange{{0x1000, 0x9e000}, {0x100000, 0xbfeda000}, {0x100000000, 0x140000000}},
		vmemmap: 0xffffea0000000000,
		vmalloc: [2]uint64{0xffffc90000000000, 0xffffe90000000000},
		modules: [2]uint64{0xffffffffa0000000, 0xffffffffff000000},
		// vsyscall page, mapped into kcore as KCORE_USER.
		vsyscall: 0xffffffffff600000,
		// __START_KERNEL_map + 16 MiB (LOAD_PHYSICAL_ADDR), randomised
		// in 2 MiB steps (CONFIG_PHYSICAL_ALIGN) below the module area.
		textBase: 0xffffffff81000000, kaslrAlign: 0x200000, kaslrSlots: 128,
		kcoreText: true, missBase: 0xffff888400000000,
	},
	{
		// Documentation/arch/arm64/memory.rst, 48-bit VA, 4 KiB pages:
		// the kernel image lies inside vmalloc, modules just below it.
		name: "aarch64", aliases: []string{"arm64"}, machine: elf.EM_AARCH64, order: binary.LittleEndian,
		pageSize: 4096, insn: 4,
		pageOffset: 0xffff000000000000, physBase: 0x40000000,
		ram:     []ramRange{{0x40000000, 0xbfe00000}, {0x100000000, 0x140000000}},
		vmemmap: 0xfffffc0000000000,
		vmalloc: [2]uint64{0xffff800080000000, 0xfffffbfff0000000},
		modules: [2]uint64{0xffff800000000000, 0xffff800080000000},
		// KIMAGE_VADDR, randomised in 2 MiB steps (MIN_KIMG_ALIGN).
		textBase: 0xffff800080000000, kaslrAlign: 0x200000, kaslrSlots: 512, stextOff: 0x10000,
		kcoreText: true, bpfVmalloc: true, missBase: 0xffff000400000000,
	},
	{
		// Book3S 64 with the radix MMU, 64 KiB pages: no KASLR, no kcore
		// text segment (kernel text only through the linear map).
		name: "ppc64le", aliases: []string{"ppc64"}, machine: elf.EM_PPC64, order: binary.LittleEndian,
		pageSize: 0x10000, insn: 4,
		pageOffset: 0xc000000000000000, physBase: 0,
		ram:     []ramRange{{0, 0x100000000}, {0x200000000, 0x100000000}},
		vmemmap: 0xc00c000000000000,
		vmalloc: [2]uint64{0xc008000000000000, 0xc00a000000000000},
		// modules are vmalloc'ed
		textBase: 0xc000000000000000,
		missBase: 0xc000000180000000,
	},
	{
		// s390x, 3-level (4 TiB) kernel address space: kernel image in the
		// identity-mapped low memory, vmemmap, vmalloc and the 2 GiB module
		// area at the top (arch/s390/boot/startup.c).
		name: "s390x", aliases: []string{"s390"}, machine: elf.EM_S390, order: binary.BigEndian,
		pageSize: 4096, insn: 2,
		pageOffset: 0, physBase: 0,
		ram: []ramRange{{0, 0x200000000}},
		// kernel at 1 MiB, randomised in 16 KiB steps (THREAD_SIZE)
		textBase: 0x100000, kaslrAlign: 0x4000, kaslrSlots: 1 << 15,
		kcoreText: true, missBase: 0x180000000,
	},
	{
		// Documentation/arch/riscv/vm-layout.rst, Sv39 (as up to 6.5):
		// kernel at 0xffffffff80000000, modules in the 2 GiB below _end.
		name: "riscv64", machine: elf.EM_RISCV, order: binary.LittleEndian,
		pageSize: 4096, insn: 2,
		pageOffset: 0xffffffd800000000, physBase: 0x80000000,
		ram:     []ramRange{{0x80000000, 0x200000000}},
		vmemmap: 0xffffffc700000000,
		vmalloc: [2]uint64{0xffffffc800000000, 0xffffffd800000000},
		// PMD-aligned KASLR (v6.6+)
		textBase: 0xffffffff80000000, kaslrAlign: 0x200000, kaslrSlots: 256,
		kcoreText: true, modTextRel: true, missBase: 0xffffffd900000000,
	},
}

func init() {
	// s390x: module area and vmalloc at the top of a 4 TiB space,
	// vmemmap below them (setup_kernel_memory_layout).
	s := findArch("s390x")
	const vmax, modLen, vmallocSize = 1 << 42, 1 << 31, (512 << 30) - (1 << 31)
	s.modules = [2]uint64{vmax - modLen, vmax}
	s.vmalloc = [2]uint64{vmax - modLen - vmallocSize, vmax - modLen}
	pages := s.vmalloc[0] / (4096 + 64)
	s.vmemmap = (s.vmalloc[0] - pages*64) &^ (1<<31 - 1)
}

func findArch(name string) *arch {
	for _, a := range arches {
		if a.name == name || strings.EqualFold(name, a.name) {
			return a
		}
		for _, al := range a.aliases {
			if al == name {
				return a
			}
		}
	}
	return nil
}

// Arches returns the architecture names Generate accepts (uname -m
// spelling; GOARCH spellings are accepted too).
func Arches() []string {
	var names []string
	for _, a := range arches {
		names = append(names, a.name)
	}
	return names
}

func alignUp(v, a uint64) uint64   { return (v + a - 1) &^ (a - 1) }
func alignDown(v, a uint64) uint64 { return v &^ (a - 1) }

// linear returns the linear-map address of physical address p.
func (a *arch) linear(p uint64) uint64 { return a.pageOffset + (p - a.physBase) }

// kcoreDataOffset is the page-aligned size of kcore's headers and notes
// for n program headers (kcore_data_offset).
func (a *arch) kcoreDataOffset(n int) uint64 {
	return alignUp(64+56*uint64(n+1)+4096, a.pageSize)
}

// layout is one generated kernel image placement.
type layout struct {
	text, stext, etext, edata, end uint64
	modRegion                      [2]uint64
	bpfRegion                      [2]uint64
}

// place chooses the kernel image's address (KASLR) and size.
func (a *arch) place(rng *rand.Rand, textSize uint64) layout {
	var l layout
	l.text = a.textBase
	if a.kaslrAlign != 0 {
		l.text += rng.Uint64N(a.kaslrSlots) * a.kaslrAlign
	}
	l.stext = l.text + a.stextOff
	l.etext = alignUp(l.stext+textSize, a.pageSize)
	rodata := alignUp(textSize/3+a.pageSize, 0x10000)
	l.edata = alignUp(l.etext+rodata+textSize/4, a.pageSize)
	l.end = alignUp(l.edata+textSize/4+a.pageSize, 0x10000)
	switch {
	case a.modTextRel:
		l.modRegion = [2]uint64{alignUp(l.end, a.pageSize) - 1<<31, l.text}
	case a.modules[1] != 0:
		l.modRegion = a.modules
	default: // modules in vmalloc (ppc64)
		l.modRegion = [2]uint64{a.vmalloc[0], a.vmalloc[0] + 1<<31}
	}
	if a.bpfVmalloc {
		start := alignUp(l.end, 0x200000) + 0x1000000
		l.bpfRegion = [2]uint64{start, start + 1<<30}
	}
	return l
}

// segments returns the kcore program headers in file order, with
// p_offset = vaddr - PAGE_OFFSET + data offset (kc_vaddr_to_offset):
// one delta for every segment.
func (a *arch) segments(l layout) []index.Segment {
	type seg struct{ start, end uint64 }
	var segs []seg
	if a.vsyscall != 0 {
		segs = append(segs, seg{a.vsyscall, a.vsyscall + 4096})
	}
	if a.kcoreText {
		segs = append(segs, seg{l.text, alignUp(l.end, a.pageSize)})
	}
	segs = append(segs, seg{a.vmalloc[0], a.vmalloc[1]})
	if a.modules[1] != 0 || a.modTextRel { // a module area apart from vmalloc
		segs = append(segs, seg{l.modRegion[0], l.modRegion[1]})
	}
	for _, r := range a.ram {
		segs = append(segs, seg{a.linear(r.phys), a.linear(r.phys) + r.size})
		if a.vmemmap != 0 {
			first := (r.phys - a.physBase) / a.pageSize
			n := r.size / a.pageSize
			vs := alignDown(a.vmemmap+first*64, a.pageSize)
			ve := alignUp(a.vmemmap+(first+n)*64, a.pageSize)
			segs = append(segs, seg{vs, ve})
		}
	}
	// Segments below PAGE_OFFSET (riscv64's vmalloc and vmemmap) would
	// get file offsets that wrap past 2^64, which perf's readers refuse:
	// there the offsets count from the lowest segment instead, still one
	// delta for all.
	base := a.pageOffset
	for _, s := range segs {
		base = min(base, s.start)
	}
	d := a.kcoreDataOffset(len(segs))
	out := make([]index.Segment, len(segs))
	for i, s := range segs {
		out[i] = index.Segment{Vaddr: s.start, Size: s.end - s.start, Offset: s.start - base + d}
	}
	return out
}

// regionSummary describes the layout for corpus.json and the summary.
func (a *arch) describe(l layout) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: _text %#x (_stext %#x, _end %#x); PAGE_OFFSET %#x; vmalloc [%#x,%#x); modules [%#x,%#x)",
		a.name, l.text, l.stext, l.end, a.pageOffset, a.vmalloc[0], a.vmalloc[1], l.modRegion[0], l.modRegion[1])
	if a.vmemmap != 0 {
		fmt.Fprintf(&b, "; vmemmap %#x", a.vmemmap)
	}
	if l.bpfRegion[1] != 0 {
		fmt.Fprintf(&b, "; BPF in vmalloc from %#x", l.bpfRegion[0])
	}
	if a.kcoreText {
		b.WriteString("; kcore text segment [_text,_end)")
	} else {
		b.WriteString("; no kcore text segment: kernel text through the linear map")
	}
	return b.String()
}

// sortedU64 sorts v in place and returns it.
func sortedU64(v []uint64) []uint64 {
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v
}
