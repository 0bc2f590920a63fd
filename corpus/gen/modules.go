package gen

import (
	"debug/elf"
	"fmt"
	"math/rand/v2"
	"strings"
)

// module is a generated kernel module: what sampling needs, kept for
// every module; its sections are re-derived on demand (sections).
type module struct {
	name     string
	ko       string // file name in ko/
	start    uint64
	size     uint64 // /proc/modules size: the core allocation
	textSize uint64 // .text plus executable sections laid out after it
	symStart int    // index of its first symbol offset in generator.modSyms
	nsym     int
}

var modulePrefixes = []string{"nf", "snd", "drm", "usb", "kvm", "xfs", "btrfs", "ext4", "nvme", "virtio", "bpf", "tcp", "ip6", "br", "dm", "md", "scsi", "i2c", "hid", "iwl", "mlx5", "ixgbe", "crypto", "fuse", "overlay"}

var moduleWords = []string{"core", "tables", "conntrack", "nat", "hda", "intel", "generic", "helper", "net", "blk", "mod", "cls", "sched", "filter", "log", "queue", "ring", "ctl", "dev", "pci"}

// Optional module sections, by region: added in this order, the first
// Params.Sections of them.
var extraSections = []struct {
	name   string
	region int // 0 text (executable, after .text), 1 rodata, 2 ro_after_init, 3 data
}{
	{".noinstr.text", 0}, {"__ksymtab", 1}, {".rodata.str1.1", 1}, {"__mcount_loc", 1},
	{".data..read_mostly", 3}, {"__param", 1}, {"__bug_table", 1}, {".data..ro_after_init", 2},
	{".text.unlikely", 0}, {"__ksymtab_gpl", 1}, {"__ksymtab_strings", 1}, {".rodata.str1.8", 1},
	{"__jump_table", 3}, {".altinstructions", 1}, {".static_call_sites", 3}, {"__ex_table", 1},
	{".orc_unwind_ip", 1}, {".orc_unwind", 1}, {"__tracepoints", 3}, {"__tracepoints_strings", 1},
}

// MaxSections is the largest Params.Sections.
var MaxSections = len(extraSections)

// moduleName returns module i's name.
func moduleName(i int) string {
	p := modulePrefixes[i%len(modulePrefixes)]
	w := moduleWords[(i/len(modulePrefixes))%len(moduleWords)]
	return fmt.Sprintf("%s_%s_%d", p, w, i)
}

// modRNG returns module i's own random source, so that its sections can
// be derived again without keeping them.
func (g *generator) modRNG(i int) *rand.Rand {
	return rand.New(rand.NewPCG(g.p.Seed^0x6d6f64756c6573, uint64(i)))
}

// sections lays out module i relative to its start: the sections of its
// .ko in file order, each with its load offset, the core size, the size
// of the text mapping and the text symbols' offsets.
func (g *generator) sections(i int) (secs []koSection, size, textSize uint64, syms []uint64) {
	rng := g.modRNG(i)
	budget := g.modBudget
	ra := g.modAlign
	frac := func(lo, hi float64) uint64 { return uint64(float64(budget) * (lo + (hi-lo)*rng.Float64())) }
	type want struct {
		name   string
		region int
		size   uint64
	}
	ws := []want{{".text", 0, max(64, frac(0.15, 0.3))}}
	for _, e := range extraSections[:g.p.Sections] {
		if e.region == 0 || rng.IntN(4) != 0 { // executable extras always, others 3 in 4
			ws = append(ws, want{e.name, e.region, max(16, frac(0.005, 0.03))})
		}
	}
	ws = append(ws,
		want{".rodata", 1, max(32, frac(0.05, 0.15))},
		want{".data", 3, max(32, frac(0.03, 0.08))},
		want{".gnu.linkonce.this_module", 3, 0x380},
		want{".bss", 3, max(16, frac(0.01, 0.04))},
	)
	// Regions in memory order; within a region, the .ko order above.
	var off uint64
	fileOff := uint64(0x1000)
	for region := 0; region < 4; region++ {
		start := off
		for _, w := range ws {
			if w.region != region {
				continue
			}
			s := koSection{name: w.name, typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC, size: alignUp(w.size, 8), align: 8}
			switch {
			case region == 0:
				s.flags |= elf.SHF_EXECINSTR
				s.align = 16
			case region >= 2:
				s.flags |= elf.SHF_WRITE
			}
			if w.name == ".bss" {
				s.typ = elf.SHT_NOBITS
			}
			off = alignUp(off, s.align)
			s.addr = off
			off += s.size
			if s.typ != elf.SHT_NOBITS {
				fileOff = alignUp(fileOff, s.align)
				s.off = fileOff
				fileOff += s.size
			} else {
				s.off = fileOff
			}
			secs = append(secs, s)
		}
		if region == 0 {
			textSize = off
			// text symbols in .text and the executable sections after it
			n := 2 + rng.IntN(10)
			for k := 0; k < n; k++ {
				syms = append(syms, alignDown(rng.Uint64N(textSize), 16))
			}
			syms = dedup(sortedU64(syms))
			syms[0] = 0
		}
		if off > start {
			off = alignUp(off, ra)
		}
	}
	size = off
	// .init.text: freed after init; sysfs keeps its stale address, just
	// past the core allocation.
	fileOff = alignUp(fileOff, 16)
	secs = append(secs, koSection{name: ".init.text", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR,
		size: 0x100, align: 16, off: fileOff, addr: size})
	// Non-ALLOC sections every .ko has.
	fileOff += 0x100
	secs = append(secs,
		koSection{name: ".modinfo", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC, size: 0x80, align: 1, off: fileOff},
		koSection{name: ".comment", typ: elf.SHT_PROGBITS, size: 0x40, align: 1, off: fileOff + 0x80},
	)
	return secs, size, textSize, syms
}

func dedup(v []uint64) []uint64 {
	out := v[:0]
	for i, x := range v {
		if i == 0 || x != v[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// koName returns the .ko file name of a module: some use '-' where the
// kernel name has '_', as kvm-amd.ko is module kvm_amd.
func koName(name string, i int) string {
	if i%7 == 3 {
		return strings.ReplaceAll(name, "_", "-") + ".ko"
	}
	return name + ".ko"
}
