// Package gen generates synthetic kmapindex corpora: a directory in the
// corpus format of DESIGN.md ("Corpus format") whose kernel address space
// follows one architecture's documented memory layout, with as many
// modules, module sections, BPF programs, processes and samples as asked.
//
// A corpus holds kallsyms (kernel text symbols between the _text, _stext,
// _etext, _edata and _end landmarks, module symbols tagged "\t[mod]", BPF
// programs tagged "\t[bpf]"), modules, sys/module/NAME/sections/SEC,
// ko/NAME.ko (header-only ET_REL objects), kcore (header-only, the
// architecture's segments, every one with p_offset = vaddr - PAGE_OFFSET +
// a page-aligned data offset), kmodsec.data, perf.data and corpus.json.
//
// perf.data holds what perf record would write on such a machine: the
// kernel MMAP ("[kernel.kallsyms]_text", pgoff = _text), one MMAP per
// module, a KSYMBOL per BPF program, then per process FORK, COMM and the
// MMAP2s of a few DSOs, then the samples: hot functions drawn from Zipf
// distributions, bursts of consecutive samples in one map, a kernel/user
// mix and a share of misses (addresses in no map, which resolve to
// [unknown]).
//
// Everything derives from Params.Seed: the same parameters give
// byte-identical files. Generation streams: memory grows with the number
// of modules and processes, never with the number of samples.
package gen

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kmapindex/kmapindex/corpus"
)

// Params are the generator's parameters; corpus.json records them.
type Params struct {
	Arch       string `json:"arch"`       // x86_64, aarch64 (arm64), ppc64le, s390x, riscv64
	Modules    int    `json:"modules"`    // kernel modules
	BPF        int    `json:"bpf"`        // BPF programs
	Procs      int    `json:"procs"`      // user processes
	Samples    int64  `json:"samples"`    // samples in perf.data
	Seed       uint64 `json:"seed"`       // everything derives from it
	Callchains bool   `json:"callchains"` // samples carry callchains

	// KernelSymbols is the number of kernel text symbols (default 20000).
	KernelSymbols int `json:"kernel_symbols"`
	// Sections is the number of optional sections per module beyond
	// .text, .rodata, .data, .gnu.linkonce.this_module, .bss and
	// .init.text (default 4, at most MaxSections).
	Sections int `json:"sections"`
	// DSOs is the number of shared libraries each process maps (default 4).
	DSOs int `json:"dsos"`
	// MissRate is the share of samples at addresses in no map (default
	// 0.015; negative for none).
	MissRate float64 `json:"miss_rate"`
	// KernelShare is the share of samples taken in the kernel (default
	// 0.35; all of them without processes).
	KernelShare float64 `json:"kernel_share"`
	// NoSysfs leaves out sys/module and ko/ (kmodsec.data still carries
	// the section maps): for corpora of very many modules.
	NoSysfs bool `json:"no_sysfs,omitempty"`
	// Name is the corpus name in corpus.json (default gen-ARCH-SEED).
	Name string `json:"name,omitempty"`
}

// Limits on Params.
const (
	MaxModules       = 1_000_000
	MaxBPF           = 1_000_000
	MaxProcs         = 1_000_000
	MaxSamples       = 10_000_000_000
	MaxKernelSymbols = 100_000
	MaxDSOs          = 32
)

// File is one generated file.
type File struct {
	Name string // slash-separated, relative to the corpus directory
	Size int64
}

// Summary describes a generated corpus.
type Summary struct {
	Dir    string
	Arch   string
	Layout string // the kernel memory layout, in words

	// Maps counts the maps the corpus describes: the kernel map, one per
	// module and per module section map, one per BPF program and one per
	// user mapping.
	Maps          int
	KernelSymbols int
	Modules       int
	SectionMaps   int // module section maps (sysfs + .ko, kmodsec.data)
	BPF           int
	Procs         int
	Threads       int
	UserMaps      int
	KcoreSegments int

	Samples       int64
	KernelSamples int64
	UserSamples   int64
	Misses        int64 // samples at addresses in no map

	Files   []File // in generation order
	Bytes   int64  // total size (sysfs files counted, listed as one entry)
	Elapsed time.Duration
}

// WriteTo prints the summary.
func (s *Summary) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "corpus %s (%s)\n", s.Dir, s.Arch)
	fmt.Fprintf(&b, "layout: %s\n", s.Layout)
	fmt.Fprintf(&b, "maps %d: kernel 1, modules %d, section maps %d, BPF %d, user %d (procs %d, threads %d); kcore segments %d; kernel symbols %d\n",
		s.Maps, s.Modules, s.SectionMaps, s.BPF, s.UserMaps, s.Procs, s.Threads, s.KcoreSegments, s.KernelSymbols)
	fmt.Fprintf(&b, "samples %d: kernel %d, user %d, misses %d (%.2f%%)\n",
		s.Samples, s.KernelSamples, s.UserSamples, s.Misses, 100*float64(s.Misses)/float64(max(s.Samples, 1)))
	for _, f := range s.Files {
		fmt.Fprintf(&b, "  %12d  %s\n", f.Size, f.Name)
	}
	fmt.Fprintf(&b, "  %12d  total, in %v\n", s.Bytes, s.Elapsed.Round(time.Millisecond))
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// withDefaults fills in defaults and checks p.
func (p Params) withDefaults() (Params, *arch, error) {
	a := findArch(p.Arch)
	if a == nil {
		return p, nil, fmt.Errorf("gen: unknown architecture %q (want one of %s)", p.Arch, strings.Join(Arches(), ", "))
	}
	p.Arch = a.name
	if p.KernelSymbols == 0 {
		p.KernelSymbols = 20000
	}
	if p.Sections == 0 {
		p.Sections = 4
	}
	if p.DSOs == 0 {
		p.DSOs = 4
	}
	if p.MissRate == 0 {
		p.MissRate = 0.015
	} else if p.MissRate < 0 {
		p.MissRate = 0
	}
	if p.KernelShare == 0 {
		p.KernelShare = 0.35
	}
	if p.Name == "" {
		p.Name = fmt.Sprintf("gen-%s-%d", a.name, p.Seed)
	}
	checks := []struct {
		name     string
		v, lo, h int64
	}{
		{"modules", int64(p.Modules), 0, MaxModules},
		{"BPF programs", int64(p.BPF), 0, MaxBPF},
		{"processes", int64(p.Procs), 0, MaxProcs},
		{"samples", p.Samples, 0, MaxSamples},
		{"kernel symbols", int64(p.KernelSymbols), 1, MaxKernelSymbols},
		{"sections", int64(p.Sections), 0, int64(MaxSections)},
		{"DSOs per process", int64(p.DSOs), 1, MaxDSOs},
	}
	for _, c := range checks {
		if c.v < c.lo || c.v > c.h {
			return p, nil, fmt.Errorf("gen: %d %s: out of range [%d, %d]", c.v, c.name, c.lo, c.h)
		}
	}
	if p.MissRate > 0.5 || p.KernelShare < 0 || p.KernelShare > 1 {
		return p, nil, fmt.Errorf("gen: miss rate %g or kernel share %g out of range", p.MissRate, p.KernelShare)
	}
	if strings.ContainsAny(p.Name, "\n\t") {
		return p, nil, errors.New("gen: name contains control characters")
	}
	return p, a, nil
}

// Generate writes the corpus for p into dir, which must not exist or be
// empty, and returns its summary.
func Generate(p Params, dir string) (*Summary, error) {
	begin := time.Now()
	p, a, err := p.withDefaults()
	if err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("gen: %s: directory not empty", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("gen: %w", err)
	}
	g := &generator{p: p, a: a, dir: dir, sum: &Summary{Dir: dir, Arch: a.name}}
	g.rng = rand.New(rand.NewPCG(p.Seed, 0x6b6d6170696e6478))
	if err := g.plan(); err != nil {
		return nil, err
	}
	steps := []func() error{g.writeKallsyms, g.writeModules, g.writeSysfs, g.writeKos, g.writeKmodsec, g.writeKcore, g.writePerf, g.writeMeta}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	s := g.sum
	s.Maps = 1 + s.Modules + s.SectionMaps + s.BPF + s.UserMaps
	for _, f := range s.Files {
		s.Bytes += f.Size
	}
	s.Elapsed = time.Since(begin)
	return s, nil
}

// create opens a corpus file for writing; the returned close function
// flushes, closes and records the file's size.
func (g *generator) create(name string) (*bufio.Writer, func() error, error) {
	path := filepath.Join(g.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("gen: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("gen: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<18)
	done := func() error {
		if err := bw.Flush(); err != nil {
			f.Close()
			return fmt.Errorf("gen: writing %s: %w", path, err)
		}
		st, err := f.Stat()
		if err == nil {
			g.sum.Files = append(g.sum.Files, File{Name: name, Size: st.Size()})
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("gen: writing %s: %w", path, err)
		}
		return nil
	}
	return bw, done, nil
}

func (g *generator) writeMeta() error {
	params, err := json.Marshal(g.p)
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	meta := corpus.Meta{
		Name: g.p.Name,
		Arch: g.a.name,
		Description: fmt.Sprintf("Generated: %d modules (%d section maps), %d BPF programs, %d processes, %d samples. %s.",
			g.p.Modules, g.sum.SectionMaps, g.p.BPF, g.p.Procs, g.p.Samples, g.sum.Layout),
		Provenance: "kbench gen",
		Generator:  params,
	}
	b, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	w, done, err := g.create(corpus.MetaFile)
	if err != nil {
		return err
	}
	w.Write(append(b, '\n'))
	return done()
}
