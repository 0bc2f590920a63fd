package gen

import (
	"debug/elf"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

const (
	elfAlloc    = elf.SHF_ALLOC
	kmodsecFile = corpus.KmodsecFile
	nrCPUs      = 8
	userFuncs   = 1024 // hot-function slots per user DSO
)

// writeFile writes a small corpus file whole.
func (g *generator) writeFile(name string, b []byte) error {
	p := filepath.Join(g.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	return nil
}

// dso is a user-space file: its text mapping's size and file offset.
type dso struct {
	path  string
	len   uint64
	pgoff uint64
	ino   uint64
}

// umap is one text mapping of a process.
type umap struct {
	start uint64
	dso   uint16 // index into libs, or len(libs)+i for bins[i]
}

type proc struct {
	pid      uint32
	nthreads uint32
	maps     []umap // maps[0] is the executable
}

func (g *generator) planProcs() {
	r := rand.New(rand.NewPCG(g.p.Seed^0x70726f6373, 1))
	page := uint64(4096)
	g.libs = make([]dso, 64)
	for i := range g.libs {
		g.libs[i] = dso{path: fmt.Sprintf("/usr/lib/libgen-%d.so", i), len: page * (16 + r.Uint64N(512)), pgoff: page * (1 + r.Uint64N(8)), ino: 100000 + uint64(i)}
	}
	g.bins = make([]dso, 16)
	for i := range g.bins {
		g.bins[i] = dso{path: fmt.Sprintf("/usr/bin/genapp-%d", i), len: page * (8 + r.Uint64N(256)), pgoff: page, ino: 200000 + uint64(i)}
	}
	g.procs = make([]proc, g.p.Procs)
	binZipf := rand.NewZipf(r, 1.3, 1, uint64(len(g.bins)-1))
	for i := range g.procs {
		pr := proc{pid: 1000 + 4*uint32(i), nthreads: 1 + uint32(r.IntN(3))}
		b := int(binZipf.Uint64())
		pr.maps = append(pr.maps, umap{start: 0x555555554000 + r.Uint64N(1<<28)*page, dso: uint16(len(g.libs) + b)})
		at := 0x7f0000000000 + r.Uint64N(1<<26)*page
		used := map[int]bool{}
		for len(pr.maps) < 1+g.p.DSOs {
			l := r.IntN(len(g.libs))
			if used[l] {
				continue
			}
			used[l] = true
			at -= alignUp(g.libs[l].len, page) + page*r.Uint64N(64)
			pr.maps = append(pr.maps, umap{start: at, dso: uint16(l)})
		}
		g.procs[i] = pr
		g.sum.Threads += int(pr.nthreads)
		g.sum.UserMaps += len(pr.maps)
	}
	g.sum.Procs = len(g.procs)
}

func (g *generator) dsoOf(m umap) *dso {
	if int(m.dso) < len(g.libs) {
		return &g.libs[m.dso]
	}
	return &g.bins[int(m.dso)-len(g.libs)]
}

// target is what a burst of samples hits.
type target struct {
	kind  int // tKernel, tModule, tBPF, tUser
	index int // module, BPF program or map index
	sym   int // current symbol (kernel, module) or function slot (user)
	proc  int // -1: idle (pid 0)
}

const (
	tKernel = iota
	tModule
	tBPF
	tUser
)

// sampler draws samples.
type sampler struct {
	g     *generator
	rng   *rand.Rand
	kZipf *rand.Zipf
	kPerm []int32
	mZipf *rand.Zipf
	mPerm []int32
	pZipf *rand.Zipf
	uZipf *rand.Zipf
	dZipf *rand.Zipf
	bZipf *rand.Zipf
	cur   target
	left  int
	chain []uint64
}

func newSampler(g *generator) *sampler {
	r := rand.New(rand.NewPCG(g.p.Seed^0x73616d706c6573, 2))
	s := &sampler{g: g, rng: r, cur: target{proc: -1}}
	perm := func(n int) []int32 {
		p := make([]int32, n)
		for i := range p {
			p[i] = int32(i)
		}
		r.Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
		return p
	}
	s.kZipf = rand.NewZipf(r, 1.1, 1, uint64(len(g.ksyms)-1))
	s.kPerm = perm(len(g.ksyms))
	if len(g.mods) > 0 {
		s.mZipf = rand.NewZipf(r, 1.2, 1, uint64(len(g.mods)-1))
		s.mPerm = perm(len(g.mods))
	}
	if len(g.procs) > 0 {
		s.pZipf = rand.NewZipf(r, 1.1, 1, uint64(len(g.procs)-1))
	}
	if len(g.bpf) > 0 {
		s.bZipf = rand.NewZipf(r, 1.3, 1, uint64(len(g.bpf)-1))
	}
	s.uZipf = rand.NewZipf(r, 1.2, 1, userFuncs-1)
	s.dZipf = rand.NewZipf(r, 1.5, 1, uint64(g.p.DSOs))
	return s
}

// newTarget starts a burst.
func (s *sampler) newTarget() {
	g, r := s.g, s.rng
	t := target{proc: -1}
	if len(g.procs) > 0 {
		t.proc = int(s.pZipf.Uint64())
	}
	if t.proc < 0 || r.Float64() < g.p.KernelShare {
		x := r.Float64()
		switch {
		case x < 0.15 && s.mZipf != nil:
			t.kind, t.index = tModule, int(s.mPerm[s.mZipf.Uint64()])
			t.sym = r.IntN(g.mods[t.index].nsym)
		case x < 0.22 && s.bZipf != nil:
			t.kind, t.index = tBPF, int(s.bZipf.Uint64())
		default:
			t.kind, t.sym = tKernel, int(s.kPerm[s.kZipf.Uint64()])
		}
		if r.IntN(20) == 0 {
			t.proc = -1 // idle
		}
	} else {
		t.kind, t.index, t.sym = tUser, int(s.dZipf.Uint64()), int(s.uZipf.Uint64())
	}
	s.cur, s.left = t, 1+int(r.ExpFloat64()*8)
}

// symRange returns the bounds of kernel symbol i.
func (g *generator) symRange(i int) (uint64, uint64) {
	if i+1 < len(g.ksyms) {
		return g.ksyms[i], g.ksyms[i+1]
	}
	return g.ksyms[i], g.l.etext
}

// ipIn returns an address in [lo, hi), aligned to the instruction size.
func (s *sampler) ipIn(lo, hi uint64) uint64 {
	return lo + alignDown(s.rng.Uint64N(hi-lo), s.g.a.insn)
}

// userIP returns an address in function slot f of mapping m.
func (s *sampler) userIP(m umap, f int) uint64 {
	d := s.g.dsoOf(m)
	slots := d.len / 64
	at := (uint64(f)*0x9e3779b97f4a7c15 + uint64(m.dso)*0x632be59bd9b4e019) % slots
	return m.start + at*64 + alignDown(s.rng.Uint64N(64), s.g.a.insn)
}

// kernelIP returns an address for the current kernel target, moving to
// another hot symbol now and then.
func (s *sampler) kernelIP(t *target) uint64 {
	g, r := s.g, s.rng
	switch t.kind {
	case tModule:
		m := &g.mods[t.index]
		if r.IntN(4) == 0 {
			t.sym = r.IntN(m.nsym)
		}
		syms := g.modSyms[m.symStart : m.symStart+m.nsym]
		lo, hi := syms[t.sym], m.textSize
		if t.sym+1 < len(syms) {
			hi = syms[t.sym+1]
		}
		return m.start + s.ipIn(lo, hi)
	case tBPF:
		b := &g.bpf[t.index]
		return s.ipIn(b.addr, b.addr+uint64(b.size))
	default:
		if r.IntN(4) == 0 {
			t.sym = int(s.kPerm[s.kZipf.Uint64()])
		}
		lo, hi := g.symRange(t.sym)
		return s.ipIn(lo, hi)
	}
}

// miss returns an address in no map.
func (s *sampler) miss(kernel bool) uint64 {
	if kernel {
		return s.g.a.missBase + alignDown(s.rng.Uint64N(1<<30), s.g.a.insn)
	}
	return 0x10000 + alignDown(s.rng.Uint64N(0x300000), s.g.a.insn)
}

// Callchain context markers.
const (
	contextKernel = ^uint64(0) - 128 + 1
	contextUser   = ^uint64(0) - 512 + 1
)

// callchain returns a chain for a sample at ip.
func (s *sampler) callchain(kernel bool, ip uint64, t *target) []uint64 {
	g, r := s.g, s.rng
	c := s.chain[:0]
	if kernel {
		c = append(c, contextKernel, ip)
		for n := r.IntN(5); n > 0; n-- {
			lo, hi := g.symRange(int(s.kPerm[s.kZipf.Uint64()]))
			c = append(c, s.ipIn(lo, hi))
		}
	}
	if t.proc >= 0 {
		pr := &g.procs[t.proc]
		c = append(c, contextUser)
		if !kernel {
			c = append(c, ip)
		}
		for n := 1 + r.IntN(4); n > 0; n-- {
			m := pr.maps[r.IntN(len(pr.maps))]
			c = append(c, s.userIP(m, int(s.uZipf.Uint64())))
		}
	}
	s.chain = c
	return c
}

func (g *generator) writePerf() error {
	path := filepath.Join(g.dir, "perf.data")
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	defer f.Close()
	w, err := perfdata.NewWriter(f, perfdata.WriterOptions{
		Callchains: g.p.Callchains, Hostname: "gen-" + g.a.name, OSRelease: g.osRelease(), Version: "6.1",
		Arch: g.a.name, NrCPUs: nrCPUs, Cmdline: []string{"perf", "record", "-a", "-e", "cpu-clock", "-F", "4000"},
	})
	if err != nil {
		return fmt.Errorf("gen: %s: %w", path, err)
	}
	if err := g.records(w); err != nil {
		return fmt.Errorf("gen: %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("gen: %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("gen: %s: %w", path, err)
	}
	g.sum.Files = append(g.sum.Files, File{Name: "perf.data", Size: st.Size()})
	return nil
}

func (g *generator) records(w *perfdata.Writer) error {
	const kmisc = uint16(perfdata.CPUModeKernel)
	const umisc = uint16(perfdata.CPUModeUser)
	// Synthesized side band, time 0, as perf record writes it.
	l := g.l
	if err := w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: kmisc}, Pid: ^uint32(0), Addr: l.text, Len: l.edata - l.text,
		Pgoff: l.text, Filename: "[kernel.kallsyms]_text", Prot: 5, Flags: 2}); err != nil {
		return err
	}
	for i := len(g.mods) - 1; i >= 0; i-- {
		m := &g.mods[i]
		if err := w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: kmisc}, Pid: ^uint32(0), Addr: m.start, Len: m.size,
			Filename: "[" + m.name + "]", Prot: 5, Flags: 2}); err != nil {
			return err
		}
	}
	for _, b := range g.bpf {
		if err := w.WriteKsymbol(&perfdata.Ksymbol{Info: perfdata.Info{Misc: kmisc}, Addr: b.addr, Len: b.size,
			KsymType: perfdata.KsymTypeBPF, Name: b.name}); err != nil {
			return err
		}
	}
	for _, pr := range g.procs {
		for t := uint32(0); t < pr.nthreads; t++ {
			tid := pr.pid + t
			ppid, ptid := uint32(1), uint32(1)
			if t > 0 {
				ppid, ptid = pr.pid, pr.pid
			}
			id := perfdata.SampleID{Pid: pr.pid, Tid: tid}
			if err := w.WriteFork(&perfdata.Fork{Pid: pr.pid, Ppid: ppid, Tid: tid, Ptid: ptid, SampleID: id}); err != nil {
				return err
			}
			if t > 0 {
				continue
			}
			name := filepath.Base(g.dsoOf(pr.maps[0]).path)
			if err := w.WriteComm(&perfdata.Comm{Info: perfdata.Info{Misc: perfdata.MiscCommExec}, Pid: pr.pid, Tid: tid, Comm: name, SampleID: id}); err != nil {
				return err
			}
			for _, m := range pr.maps {
				d := g.dsoOf(m)
				if err := w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: umisc}, Pid: pr.pid, Tid: tid, Addr: m.start, Len: d.len,
					Pgoff: d.pgoff, Maj: 8, Min: 1, Ino: d.ino, Prot: 5, Flags: 2, Filename: d.path, SampleID: id}); err != nil {
					return err
				}
			}
		}
	}
	if err := w.WriteFinishedRound(); err != nil {
		return err
	}

	s := newSampler(g)
	time := uint64(1_000_000_000)
	var smp perfdata.Sample
	for n := int64(0); n < g.p.Samples; n++ {
		time += 1 + s.rng.Uint64N(250000/nrCPUs*2)
		if s.left == 0 {
			s.newTarget()
		}
		s.left--
		t := &s.cur
		smp = perfdata.Sample{Time: time, Period: 250000}
		if t.proc >= 0 {
			pr := &g.procs[t.proc]
			smp.Pid = pr.pid
			smp.Tid = pr.pid + uint32(s.rng.IntN(int(pr.nthreads)))
		}
		kernel := t.kind != tUser
		switch {
		case s.rng.Float64() < g.p.MissRate:
			if t.proc < 0 || s.rng.IntN(2) == 0 {
				kernel = true
			}
			smp.IP = s.miss(kernel)
			g.sum.Misses++
		case kernel:
			smp.IP = s.kernelIP(t)
		default:
			if s.rng.IntN(4) == 0 {
				t.sym = int(s.uZipf.Uint64())
			}
			smp.IP = s.userIP(g.procs[t.proc].maps[t.index], t.sym)
		}
		if kernel {
			smp.Misc = kmisc
			g.sum.KernelSamples++
		} else {
			smp.Misc = umisc
			g.sum.UserSamples++
		}
		if g.p.Callchains {
			smp.Callchain = s.callchain(kernel, smp.IP, t)
		}
		if err := w.WriteSample(&smp); err != nil {
			return err
		}
		if n%8192 == 8191 {
			if err := w.WriteFinishedRound(); err != nil {
				return err
			}
		}
	}
	g.sum.Samples = g.p.Samples
	time++
	for _, pr := range g.procs {
		id := perfdata.SampleID{Pid: pr.pid, Tid: pr.pid, Time: time}
		if err := w.WriteExit(&perfdata.Exit{Pid: pr.pid, Ppid: 1, Tid: pr.pid, Ptid: 1, Time: time, SampleID: id}); err != nil {
			return err
		}
	}
	return w.WriteFinishedRound()
}
