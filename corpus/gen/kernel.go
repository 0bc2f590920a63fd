package gen

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kcore"
	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/ingest/modsec"
	"github.com/kmapindex/kmapindex/ingest/modules"
)

// generator holds one run's state.
type generator struct {
	p   Params
	a   *arch
	dir string
	rng *rand.Rand
	sum *Summary

	l        layout
	ksyms    []uint64 // kernel text symbol addresses, ascending; ksyms[i+1] bounds symbol i
	ksymName []string

	modBudget, modAlign uint64
	mods                []module
	modSyms             []uint64 // module symbol offsets from the module start

	bpf  []bpfProg
	segs []index.Segment

	procs []proc
	libs  []dso
	bins  []dso
}

type bpfProg struct {
	addr uint64
	size uint32
	name string
}

var symPrefixes = []string{"do_", "__x64_sys_", "tcp_", "udp_", "ext4_", "xfs_", "kmem_", "sched_", "irq_", "vfs_", "mm_", "blk_", "page_", "net_", "sock_", "__", "rcu_", "timer_", "futex_", "ep_", "copy_", "memcg_", "lru_", "filemap_", "ip_"}
var symWords = []string{"read", "write", "open", "close", "alloc", "free", "lock", "unlock", "wait", "wake", "poll", "map", "unmap", "fault", "flush", "queue", "send", "recv", "init", "exit", "update", "lookup", "insert", "remove", "balance"}

// plan lays out the kernel, modules, BPF programs and processes.
func (g *generator) plan() error {
	a, p := g.a, g.p
	// Kernel text symbols: sizes 16 B to ~4 KiB, aligned 16.
	n := p.KernelSymbols
	sizes := make([]uint64, n)
	var text uint64
	for i := range sizes {
		sizes[i] = 16 * (1 + uint64(g.rng.ExpFloat64()*40))
		sizes[i] = min(sizes[i], 64<<10)
		text += sizes[i]
	}
	g.l = a.place(g.rng, text)
	g.ksyms = make([]uint64, n)
	g.ksymName = make([]string, n)
	addr := g.l.stext
	for i := range sizes {
		g.ksyms[i] = addr
		g.ksymName[i] = fmt.Sprintf("%s%s_%d", symPrefixes[g.rng.IntN(len(symPrefixes))], symWords[g.rng.IntN(len(symWords))], i)
		addr += sizes[i]
	}
	mr := g.l.modRegion
	if g.l.end > mr[0] && g.l.text < mr[1] {
		return fmt.Errorf("gen: %s: kernel image [%#x,%#x) overlaps the module area [%#x,%#x)", a.name, g.l.text, g.l.end, mr[0], mr[1])
	}
	g.sum.Layout = a.describe(g.l)
	g.sum.KernelSymbols = n

	// Modules share the module area with BPF images unless those live
	// in vmalloc.
	area := mr[1] - mr[0]
	var bpfSpace uint64
	if !a.bpfVmalloc && p.BPF > 0 {
		bpfSpace = alignUp(uint64(p.BPF)*3000+(4<<20), 2<<20)
		if bpfSpace > area/2 {
			return fmt.Errorf("gen: %d BPF programs do not fit in the %s module area of %d MiB", p.BPF, a.name, area>>20)
		}
	}
	modArea := area - bpfSpace
	if p.Modules > 0 {
		g.modBudget = min(modArea/10*7/uint64(p.Modules), 1<<20)
		g.modAlign = a.pageSize
		if g.modBudget < 8*a.pageSize {
			g.modAlign = 64 // too many modules for page-aligned regions: pack them
		}
		if g.modBudget < 4096 {
			return fmt.Errorf("gen: %d modules do not fit in the %s module area of %d MiB", p.Modules, a.name, modArea>>20)
		}
	}
	cursor := mr[0] + g.rng.Uint64N(16)*a.pageSize
	g.mods = make([]module, p.Modules)
	for i := range g.mods {
		_, size, textSize, syms := g.sections(i)
		gap := alignDown(g.rng.Uint64N(g.modBudget-min(size, g.modBudget)+1), g.modAlign)
		cursor = alignUp(cursor+gap, g.modAlign)
		name := moduleName(i)
		g.mods[i] = module{name: name, ko: koName(name, i), start: cursor, size: size, textSize: textSize, symStart: len(g.modSyms), nsym: len(syms)}
		g.modSyms = append(g.modSyms, syms...)
		cursor += size
	}
	if cursor > mr[0]+modArea {
		return fmt.Errorf("gen: %d modules overflow the %s module area", p.Modules, a.name)
	}
	g.sum.Modules = p.Modules

	// BPF programs: after the modules, or in vmalloc above the kernel.
	bpfAt := alignUp(cursor, 2<<20)
	if a.bpfVmalloc {
		bpfAt = g.l.bpfRegion[0]
	}
	g.bpf = make([]bpfProg, p.BPF)
	for i := range g.bpf {
		var b bpfProg
		if i%20 == 19 {
			bpfAt = alignUp(bpfAt, 4096)
			b = bpfProg{addr: bpfAt, size: 4096, name: fmt.Sprintf("bpf_trampoline_%d", 8589934592+uint64(i))}
		} else {
			b = bpfProg{addr: bpfAt, size: uint32(64 * (1 + g.rng.IntN(32))),
				name: fmt.Sprintf("bpf_prog_%016x_%s_%d", g.rng.Uint64(), symWords[g.rng.IntN(len(symWords))], i)}
		}
		g.bpf[i] = b
		bpfAt += uint64(b.size) + 64*uint64(g.rng.IntN(4))
		if g.rng.IntN(64) == 0 { // a new 2 MiB pack
			bpfAt = alignUp(bpfAt, 2<<20)
		}
	}
	g.sum.BPF = p.BPF
	g.segs = a.segments(g.l)
	if err := kcore.Validate(g.segs); err != nil {
		return fmt.Errorf("gen: %s kcore layout: %w", a.name, err)
	}
	g.sum.KcoreSegments = len(g.segs)
	g.planProcs()
	return nil
}

func (g *generator) writeKallsyms() error {
	w, done, err := g.create("kallsyms")
	if err != nil {
		return err
	}
	l := g.l
	line := func(addr uint64, typ byte, name, mod string) {
		if mod != "" {
			fmt.Fprintf(w, "%016x %c %s\t[%s]\n", addr, typ, name, mod)
		} else {
			fmt.Fprintf(w, "%016x %c %s\n", addr, typ, name)
		}
	}
	line(l.text, 'T', "_text", "")
	if l.stext != l.text {
		line(l.text+0x40, 't', "_head", "")
	}
	line(l.stext, 'T', "_stext", "")
	for i, a := range g.ksyms {
		typ := byte('T')
		if i%5 == 2 {
			typ = 't'
		}
		line(a, typ, g.ksymName[i], "")
	}
	line(l.etext, 'T', "_etext", "")
	line(alignUp(l.etext, 0x10000), 'D', "__start_rodata", "")
	line(l.edata-0x1000, 'D', "jiffies", "")
	line(l.edata, 'D', "_edata", "")
	line(l.edata, 'B', "__bss_start", "")
	line(l.end, 'B', "_end", "")
	for i := len(g.mods) - 1; i >= 0; i-- { // newest module first
		m := &g.mods[i]
		for k, off := range g.modSyms[m.symStart : m.symStart+m.nsym] {
			typ := byte('t')
			if k == 0 {
				typ = 'T'
			}
			line(m.start+off, typ, fmt.Sprintf("%s_fn%d", m.name, k), m.name)
		}
	}
	for _, b := range g.bpf {
		line(b.addr, 't', b.name, "bpf")
	}
	return done()
}

func (g *generator) writeModules() error {
	w, done, err := g.create("modules")
	if err != nil {
		return err
	}
	for i := len(g.mods) - 1; i >= 0; i-- {
		m := &g.mods[i]
		deps := "-"
		if i > 0 && i%3 == 0 {
			deps = g.mods[i-1].name + ","
		}
		fmt.Fprintf(w, "%s %d %d %s Live 0x%016x\n", m.name, m.size, i%3, deps, m.start)
	}
	if err := done(); err != nil {
		return err
	}
	return g.checkModulesFile()
}

// checkModulesFile parses the first lines back as a guard against format
// drift (cheap: at most 100 lines).
func (g *generator) checkModulesFile() error {
	if len(g.mods) == 0 {
		return nil
	}
	var b bytes.Buffer
	m := &g.mods[len(g.mods)-1]
	fmt.Fprintf(&b, "%s %d 0 - Live 0x%016x\n", m.name, m.size, m.start)
	got, err := modules.Parse(&b)
	if err != nil || len(got) != 1 || got[0].Start != m.start || got[0].Size != m.size {
		return fmt.Errorf("gen: modules line does not parse back: %v", err)
	}
	return nil
}

func (g *generator) writeSysfs() error {
	if g.p.NoSysfs {
		return nil
	}
	var total, files int64
	for i := range g.mods {
		m := &g.mods[i]
		secs, _, _, _ := g.sections(i)
		dir := modsec.SysfsDir(m.name)
		for _, s := range secs {
			if s.flags&elfAlloc == 0 || s.name == ".modinfo" {
				continue
			}
			body := []byte(fmt.Sprintf("0x%016x\n", m.start+s.addr))
			if err := g.writeFile(path.Join(dir, s.name), body); err != nil {
				return err
			}
			total += int64(len(body))
			files++
		}
	}
	if files > 0 {
		g.sum.Files = append(g.sum.Files, File{Name: fmt.Sprintf("sys/module/*/sections/* (%d files)", files), Size: total})
	}
	return nil
}

func (g *generator) writeKos() error {
	if g.p.NoSysfs {
		return nil
	}
	var total, files int64
	for i := range g.mods {
		secs, _, _, _ := g.sections(i)
		b, err := koFile(secs, g.a.machine, g.a.order)
		if err != nil {
			return fmt.Errorf("gen: module %s: %w", g.mods[i].name, err)
		}
		if err := g.writeFile(path.Join("ko", g.mods[i].ko), b); err != nil {
			return err
		}
		total += int64(len(b))
		files++
	}
	if files > 0 {
		g.sum.Files = append(g.sum.Files, File{Name: fmt.Sprintf("ko/*.ko (%d files)", files), Size: total})
	}
	return nil
}

// kmodsecRecords returns module i's KMOD_SEC_MAP records.
func (g *generator) kmodsecRecords(i int) ([]kmodsec.Record, error) {
	m := &g.mods[i]
	secs, _, _, _ := g.sections(i)
	addrs := make(map[string]uint64)
	ms := make([]modsec.Section, 0, len(secs)+1)
	ms = append(ms, modsec.Section{})
	for _, s := range secs {
		if s.flags&elfAlloc != 0 && s.name != ".modinfo" {
			addrs[s.name] = m.start + s.addr
		}
		ms = append(ms, modsec.Section{Name: s.name, Size: s.size, Offset: s.off, Flags: s.flags, Type: s.typ})
	}
	recs, err := modsec.Records(index.Module{Name: m.name, Start: m.start, Size: m.size}, addrs, ms,
		"/lib/modules/"+g.osRelease()+"/kernel/gen/"+m.ko)
	if err != nil {
		return nil, fmt.Errorf("gen: %w", err)
	}
	return recs, nil
}

func (g *generator) writeKmodsec() error {
	if len(g.mods) == 0 {
		return nil
	}
	w, done, err := g.create(kmodsecFile)
	if err != nil {
		return err
	}
	for i := len(g.mods) - 1; i >= 0; i-- { // in /proc/modules order
		recs, err := g.kmodsecRecords(i)
		if err != nil {
			return err
		}
		g.sum.SectionMaps += len(recs)
		if err := kmodsec.WriteStream(w, recs, g.a.order, kmodsec.DefaultType); err != nil {
			return fmt.Errorf("gen: %s: %w", kmodsecFile, err)
		}
	}
	return done()
}

func (g *generator) writeKcore() error {
	w, done, err := g.create("kcore")
	if err != nil {
		return err
	}
	if err := kcore.WriteHeaders(w, g.segs, g.a.machine, g.a.order); err != nil {
		return fmt.Errorf("gen: kcore: %w", err)
	}
	return done()
}

func (g *generator) osRelease() string { return "6.1.0-gen" }
